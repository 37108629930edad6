"""The bodies of the commands that are no layer's entry point: `mirror status`, `mirror reverse`
and `mirror demo`. The CLI parses and calls; these do the work and return what to print."""
