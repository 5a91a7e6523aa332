"""`hub connect URL`: a stdio host connected to a hub over Streamable HTTP, for hosts that only start local processes.

hub connect forwards every message both ways, unchanged: requests and their answers, the hub's notifications and
requests (sampling, elicitation, roots) and the host's answers to them, cancellations. `token`: where the bearer
token comes from; `remote`: the HTTP session with the hub; `forward`: the host's side. The command: hub.cli.connect.
"""
