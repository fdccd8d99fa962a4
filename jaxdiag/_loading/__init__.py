"""What a target is and what it takes: loading the user's module and object (`_targets`), SPEC parsing and example
drawing (`_inputs`), pytree layouts, pass-through wrappers, numerics."""
