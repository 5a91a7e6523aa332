"""The `hub` command line: one module per command group; the entry point is hub.cli.main:main.

`parser` declares every command with no heavy import; `main` runs the command's module, imported only when that
command runs (`start` for those that run a hub in this process); `output` is how they print.
"""
