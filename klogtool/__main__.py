from klogtool._entry import main

main()
