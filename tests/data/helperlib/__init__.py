"""A helper library's filter-style decorator (like equinox's `filter_custom_vjp`): the custom_vjp it holds wraps a
helper closure, defined here, around the user's function."""

import jax


class filter_vjp:
    def __init__(self, fn):
        self.fn = fn
        self.fn_wrapped = None

    def def_vjp(self, fwd, bwd):
        fn = self.fn

        def fn_wrapped(*args):
            return fn(*args)

        self.fn_wrapped = jax.custom_vjp(fn_wrapped)
        self.fn_wrapped.defvjp(fwd, bwd)
        return self

    def __call__(self, *args):
        return self.fn_wrapped(*args)
