"""Child side, the supervised child's jobs: its entry point (`_child`), and `jaxdiag check` over a project: discovery,
reach, recording, worker processes, the result cache."""
