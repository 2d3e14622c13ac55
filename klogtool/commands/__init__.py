"""One module per command: parse options, call the library, render (docs/architecture.md)."""
