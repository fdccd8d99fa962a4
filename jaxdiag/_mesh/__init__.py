"""Child side, sharding: the `sharding` command's own child process on virtual CPU devices."""
