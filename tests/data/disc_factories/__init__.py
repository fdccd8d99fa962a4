"""Rules no module attribute holds: a custom_jvp made by a factory, a custom_vjp made in a closure on each call,
and a pure_callback called inside a function. Only the package's public functions reach them."""
