"""The `hub` command line: one module per command group; the entry point is hub.cli.main:main.

- main: parses (parser) and runs the command's module, imported only when that command runs;
- parser: every command and option (argparse), with no heavy import;
- start: the commands that run a hub in this process: serve, check, list, cost, call, pin;
- serve, check (check, list), call, cost, pin: those commands;
- token, auth: servers.yaml's token file and OAuth sign-ins (no hub started);
- connect, reload, install (install, import), logs: commands that start no hub and read no servers.yaml's servers;
- table: the one-shot commands' tables.

Nothing is imported here: a command loads only what it runs.
"""
