"""`hub install` and `hub import`: the hub's entry in a host's config, and a host's servers in servers.yaml."""
