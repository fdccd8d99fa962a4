"""A helper library's filter-style decorators (like equinox's `filter_custom_vjp` and `filter_custom_jvp`): the
custom function each holds wraps a helper closure, defined here, around the user's function."""

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


class filter_jvp:
    """Like equinox's `filter_custom_jvp`: the custom_jvp holds the helper's closures, which call the user's `fn`
    and `fn_jvp`."""

    def __init__(self, fn):
        def fn_wrapper(*args):
            return fn(*args)

        self.fn = fn
        self.fn_wrapped = jax.custom_jvp(fn_wrapper)

    def def_jvp(self, fn_jvp):
        def fn_jvp_wrapper(primals, tangents):
            return fn_jvp(primals, tangents)

        self.fn_wrapped.defjvp(fn_jvp_wrapper)
        return self

    def __call__(self, *args):
        return self.fn_wrapped(*args)
