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


class filter_vjp_first:
    """Like equinox's `filter_custom_vjp`: its call names the differentiated first argument and takes the rest as
    `*args` (`__call__(vjp_arg, /, *args, **kwargs)`); the custom_vjp it holds wraps a closure of its own."""

    def __init__(self, fn):
        self.fn = fn
        self.fn_wrapped = None

    def def_vjp(self, fwd, bwd):
        fn = self.fn

        def fn_wrapped(vjp_arg, *args):
            return fn(vjp_arg, *args)

        self.fn_wrapped = jax.custom_vjp(fn_wrapped, nondiff_argnums=(2,))
        self.fn_wrapped.defvjp(fwd, bwd)
        return self

    def __call__(self, vjp_arg, /, *args, **kwargs):
        return self.fn_wrapped(vjp_arg, *args, **kwargs)
