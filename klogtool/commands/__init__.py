"""One module per command: parse options, call the library, render (DESIGN.md §1)."""
