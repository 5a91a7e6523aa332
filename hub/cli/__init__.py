"""The `hub` command line: `parser` declares every command with no heavy import, `main` (the entry point) runs the
command's module, imported only when that command runs; `output` is how they print."""
