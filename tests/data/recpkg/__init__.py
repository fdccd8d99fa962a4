"""A small library for the record round-trip tests: a rule made in a closure, a primitive with required
keyword-only bind params, a pytree custom_vjp and a rule that only ever sees negative inputs."""
