"""`hub install` and `hub import`: the hub's entry in a host's config, and a host's servers in servers.yaml.

`clients` says where each host keeps its servers and in which format; `jsonc` and `edit` change those files one
entry at a time, atomically, with a backup; `installer` plans and applies `hub install`; `convert`, `secrets` and
`importer` turn a host's entries into children and their secrets into the env file (hub.config.envfile).
"""
