"""A model exporter: `export(fn, *args)` traces `fn` with `jnp.tanh` patched to bind the package's own primitive,
then writes each equation of the jaxpr through a handler looked up by its primitive. `tanh_p` exists for that
interpreter alone: it has an impl and an abstract eval, and no MLIR lowering by design."""
