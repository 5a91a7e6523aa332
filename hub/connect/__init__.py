"""`hub connect URL`: a stdio host connected to a hub over Streamable HTTP, for hosts that only start local processes.

The host starts `hub connect https://hub.example/mcp` and speaks MCP on its stdin and stdout; hub connect forwards
every message both ways to the hub at the URL, unchanged: requests and their answers, the hub's notifications and
requests (sampling, elicitation, roots) and the host's answers to them, cancellations.

- `token`: where the bearer token comes from (an environment variable, or the OS keyring), never the command line.
- `remote`: the HTTP session with the hub: POSTs, the standalone GET stream, and a new session, made without the
  host noticing, when the hub restarted.
- `forward`: the host's side (`Forwarder`): each line the host writes, in order, to the hub; answers and errors back.
- `wire`: this process's stdin and stdout, kept for the protocol alone.
"""
