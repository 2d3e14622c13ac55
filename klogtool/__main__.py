from klogtool.cli import main

main()
