"""Parent side, never imports JAX or user code: the CLI, the supervisor that runs every job in a child process,
progress, the rule docs."""
