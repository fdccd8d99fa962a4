"""The plain-JAX text of `--repro` scripts: a prelude that loads the user's module and draws inputs as the report
says, then one body per kind of check (vmap, VJP, JVP, grad of grad, vmap of grad, VJP of vmap, a custom derivative
where the primal is flat, jit, call, lowering, abstract vmap). `_repro.script` fills them in; every script prints
`ok: ...` when the defect is gone and fails otherwise."""

PRELUDE = '''
import importlib
import importlib.util
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp

MODULE = sys.argv[1] if len(sys.argv) > 1 else {module_file!r}
for folder in ({root!r}, os.path.dirname(os.path.abspath(MODULE)) if MODULE.endswith(".py") else {root!r}):
    if folder not in sys.path:
        sys.path.insert(0, folder)
if MODULE.endswith(".py"):
    # under the module's own name, so a fixed copy's relative imports (`from . import helpers`) resolve in its package
    name = {module_name!r} or "module_under_test"
    spec = importlib.util.spec_from_file_location(name, MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
else:
    module = importlib.import_module(MODULE)
TARGET = module
for part in {attr!r}.split("."):
    TARGET = getattr(TARGET, part)


def f(*args, TARGET=TARGET):  # TARGET=TARGET.fun calls the undecorated primal of a custom_vjp/custom_jvp
    return {call}


SPECS = {specs}  # (dtype, shape of one example, value domain) per array argument
rng = np.random.default_rng(0)


def draw(dtype, shape, domain, lead=()):
    shape = tuple(lead) + tuple(shape)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        low = 1 if domain in ("positive", "unit") or np.issubdtype(dtype, np.unsignedinteger) else -5
        return rng.integers(low, 6, size=shape).astype(dtype)
    real = draw_real(rng, domain, shape)
    if jnp.issubdtype(dtype, jnp.complexfloating):  # a nonzero imaginary part at every entry
        real = real + 1j * draw_real(rng, domain, shape)
    return real.astype(dtype)


def tolerance(dtype):
    if np.dtype(dtype).itemsize == 1:  # float8 / float4: two or three bits of mantissa
        return 3e-2
    return {{"float16": 1e-2, "bfloat16": 5e-2, "float64": 1e-7, "complex128": 1e-7}}.get(np.dtype(dtype).name, 2e-5)


def assert_close(actual, expected, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{{what}}: expected shape {{expected.shape}}, actual {{actual.shape}}"
    assert actual.dtype == expected.dtype, f"{{what}}: expected dtype {{expected.dtype}}, actual {{actual.dtype}}"
    if is_float(actual.dtype):
        a, e = wide(actual), wide(expected)
        tol = tolerance(actual.dtype)
        err = np.max(np.abs(a - e), initial=0.0)
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        assert err <= 10 * tol * scale, (f"{{what}}: values differ by up to {{err:.3g}}\\n  expected "
                                         f"{{np.array2string(e, precision=4, threshold=12)}}\\n  actual   "
                                         f"{{np.array2string(a, precision=4, threshold=12)}}")
    else:
        assert np.array_equal(actual, expected), f"{{what}}: expected {{expected}}, actual {{actual}}"


def leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def is_float(dtype):
    """Differentiable as JAX decides it (JAX's dtype categories, not NumPy's kind: bfloat16 and the float8/float4
    types are floating)."""
    dtype = np.dtype(dtype)
    return dtype != jax.dtypes.float0 and bool(jnp.issubdtype(dtype, jnp.inexact))


def wide(a):
    """float64, or complex128 for a complex array: the precision every comparison is made in."""
    a = np.asarray(a)
    return a.astype(np.complex128 if jnp.issubdtype(a.dtype, jnp.complexfloating) else np.float64)

'''

_VMAP = '''
B = {batch}
IN_AXES, OUT_AXES = {in_axes}, {out_axes}
axes = list(IN_AXES) if isinstance(IN_AXES, (tuple, list)) else [IN_AXES] * len(SPECS)
batched = []
for (dtype, shape, domain), axis in zip(SPECS, axes):
    if axis is None:
        batched.append(draw(dtype, shape, domain))
    else:
        batched.append(np.moveaxis(draw(dtype, shape, domain, (B,)), 0, axis))
for k, values in EDGES.items():  # every entry one of the named values, differing across the batch
    batched[k] = np.resize(np.asarray(values), np.shape(batched[k])).astype(batched[k].dtype)

# Reference: call the target on each example and stack the results.
per_example = [f(*[x if a is None else np.take(x, i, axis=a) for x, a in zip(batched, axes)]) for i in range(B)]
expected = [np.stack(parts) for parts in zip(*[leaves(out) for out in per_example])]

actual_tree = jax.vmap(f, in_axes=IN_AXES, out_axes=OUT_AXES)(*batched)
actual = leaves(actual_tree)
out_axes = list(OUT_AXES) if isinstance(OUT_AXES, (tuple, list)) else [OUT_AXES] * len(actual)
assert len(actual) == len(expected), f"vmap returned {{len(actual)}} outputs, the loop {{len(expected)}}"
for k, (a, e, axis) in enumerate(zip(actual, expected, out_axes)):
    if axis is None:  # asked unbatched: every example must give the same value
        assert_close(a, e[0], f"output {{k}} (out_axes=None)")
        for i in range(1, B):
            assert_close(e[i], e[0], f"output {{k}} of example {{i}} vs example 0 (out_axes=None)")
    else:
        assert a.ndim == e.ndim, (f"output {{k}}: expected shape {{tuple(np.moveaxis(e, 0, axis).shape)}} (batch of "
                                  f"{{B}} at axis {{axis}}), actual {{a.shape}}")
        assert_close(np.moveaxis(a, axis, 0), e, f"output {{k}} (batch axis {{axis}})")
print("ok: jax.vmap matches the per-example loop")
'''

# The floating-point arguments (`diff`), and a function of some arguments only: shared by the derivative scripts.
_FLOAT_ARGS = '''
diff = [i for i, (dtype, _, _) in enumerate(SPECS) if is_float(dtype)]
assert diff, "no floating-point argument to differentiate"


def restricted(which, xs, fn=None):
    """fn (the target by default) as a function of the arguments in `which` only (the others fixed at their values
    in xs)."""
    fn = f if fn is None else fn

    def g(*ys):
        full = list(xs)
        for i, y in zip(which, ys):
            full[i] = y
        return fn(*full)
    return g
'''

_DERIV_COMMON = '''
x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
''' + _FLOAT_ARGS + '''

def in_float64(fn, *args):
    """fn(*args) with x64 enabled and float arguments widened (a precise finite-difference reference)."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        out = leaves(fn(*[wide(a) if is_float(np.asarray(a).dtype) else a for a in args]))
        if any(is_float(v.dtype) and v.dtype not in (np.float64, np.complex128) for v in out):
            raise TypeError("the target computes in lower precision even on float64 inputs")
        return out
    finally:
        jax.config.update("jax_enable_x64", previous)


def directional_fd(g, xs, vs):
    """d/dh g(xs + h vs) at 0 by central differences (float64 when the target accepts it)."""
    for in64, h in ((True, 1e-6), (False, 1e-2)):
        try:
            if in64:  # perturb in float64: a float32 step of 1e-6 would round away
                xs64 = [wide(a) for a in xs]
                vs64 = [wide(v) for v in vs]
                plus = in_float64(g, *[a + h * v for a, v in zip(xs64, vs64)])
                minus = in_float64(g, *[a - h * v for a, v in zip(xs64, vs64)])
            else:
                plus = leaves(g(*[(a + h * v).astype(a.dtype) for a, v in zip(xs, vs)]))
                minus = leaves(g(*[(a - h * v).astype(a.dtype) for a, v in zip(xs, vs)]))
            return [(wide(p) - wide(m)) / (2 * h) for p, m in zip(plus, minus)], in64
        except Exception:
            if not in64:
                raise
    raise AssertionError("unreachable")


def assert_derivative(actual, expected, in64, what):
    actual, expected = complex(actual), complex(expected)
    if actual.imag == 0 and expected.imag == 0:
        actual, expected = actual.real, expected.real
    tol = (1e-4 if in64 else 3e-2) * max(1.0, abs(expected))
    assert abs(actual - expected) <= tol + 1e-3 * max(1.0, abs(expected)), (
        f"{{what}}: expected {{expected:.6g}} (finite differences), actual {{actual:.6g}}")


def reference_directional(which, xs, vs, g):
    """J v by autodiff of the undecorated function (a custom_vjp's `fun`; it honours stop_gradient), else by
    finite differences."""
    undecorated = getattr(TARGET, "fun", None)
    if undecorated is not None and not hasattr(TARGET, "bind"):
        def plain(*ys):
            full = list(x)
            for i, y in zip(which, ys):
                full[i] = y
            return undecorated(*[full[i] for i in range(len(full))])
        try:
            tangent = jax.jvp(plain, tuple(xs), tuple(vs))[1]
            return [wide(t) for t in leaves(tangent)], True
        except Exception:
            pass
    return directional_fd(g, xs, vs)


subsets = [diff] + ([[i] for i in diff] if len(diff) > 1 else [])
'''

_VJP = _DERIV_COMMON + '''
for which in subsets:
    g = restricted(which, x)
    xs = [x[i] for i in which]
    out, pullback = jax.vjp(g, *xs)
    for k, (a, e) in enumerate(zip(leaves(out), leaves(g(*xs)))):
        assert_close(a, e, f"primal output {{k}} of jax.vjp (arguments {{which}})")
    cts = jax.tree_util.tree_map(lambda o: draw(np.asarray(o).dtype, np.shape(o), "normal") if is_float(
        np.asarray(o).dtype) else np.zeros(np.shape(o), jax.dtypes.float0), out)
    grads = pullback(cts)
    assert len(grads) == len(xs), f"expected {{len(xs)}} cotangents, actual {{len(grads)}}"
    for i, (gx, xi) in zip(which, zip(grads, xs)):
        assert np.shape(gx) == np.shape(xi), \\
            f"cotangent of argument {{i}}: expected shape {{np.shape(xi)}}, actual {{np.shape(gx)}}"
        assert np.asarray(gx).dtype == np.asarray(xi).dtype, (
            f"cotangent of argument {{i}}: expected dtype {{np.asarray(xi).dtype}}, actual {{np.asarray(gx).dtype}}")
    vs = [draw(np.asarray(xi).dtype, np.shape(xi), "normal") for xi in xs]
    fd, in64 = reference_directional(which, xs, vs, g)
    # <a, b> = Re(sum(a * b)), unconjugated: JAX's VJP is the transpose of its JVP under this pairing
    expected = sum(float(np.real(np.sum(wide(c) * d))) for c, d in zip(leaves(cts), fd) if is_float(c.dtype))
    actual = sum(float(np.real(np.sum(wide(gx) * wide(v)))) for gx, v in zip(grads, vs))
    assert_derivative(actual, expected, in64, f"<cotangent, J v> for arguments {{which}}")
print("ok: jax.vjp matches finite differences")
'''

_JVP = _DERIV_COMMON + '''
for which in subsets:
    g = restricted(which, x)
    xs = [x[i] for i in which]
    vs = [draw(np.asarray(xi).dtype, np.shape(xi), "normal") for xi in xs]
    out, tangent = jax.jvp(g, tuple(xs), tuple(vs))
    for k, (a, e) in enumerate(zip(leaves(out), leaves(g(*xs)))):
        assert_close(a, e, f"primal output {{k}} of jax.jvp (arguments {{which}})")
    fd, in64 = directional_fd(g, xs, vs)
    for k, (t, d) in enumerate(zip(leaves(tangent), fd)):
        assert t.shape == d.shape, f"tangent {{k}}: expected shape {{d.shape}}, actual {{t.shape}}"
        for index in np.ndindex(t.shape):
            assert_derivative(t[index], d[index], in64, f"tangent output {{k}} at {{index}} (arguments {{which}})")
    scaled = jax.jvp(g, tuple(xs), tuple((-1.5 * np.asarray(v)).astype(np.asarray(v).dtype) for v in vs))[1]
    for k, (t2, t) in enumerate(zip(leaves(scaled), leaves(tangent))):
        assert_close(t2, (-1.5 * t).astype(t.dtype), f"tangent {{k}} with input tangents scaled by -1.5 (the JVP "
                     "must be linear)")
print("ok: jax.jvp matches finite differences")
'''

_GRAD2 = _DERIV_COMMON + '''
def total(*ys):  # the real part of the floating outputs: jax.grad takes a real total only
    return sum(jnp.sum(jnp.real(leaf)) for leaf in jax.tree_util.tree_leaves(restricted(diff, x)(*ys))
               if is_float(jnp.result_type(leaf)))


xs = [x[i] for i in diff]
grad = jax.grad(total, argnums=tuple(range(len(xs))))
vs = [draw(np.asarray(xi).dtype, np.shape(xi), "normal") for xi in xs]
hvp = jax.jvp(grad, tuple(xs), tuple(vs))[1]
fd, in64 = directional_fd(lambda *ys: grad(*ys), xs, vs)
for k, (a, e) in enumerate(zip(leaves(hvp), fd)):
    assert_derivative(np.sum(wide(a)), np.sum(e), in64, f"second derivative, argument {{diff[k]}}")
print("ok: grad of grad matches finite differences of the gradient")
'''

_VMAP_GRAD = _DERIV_COMMON + '''
def total(*ys):  # the real part of the floating outputs: jax.grad takes a real total only
    return sum(jnp.sum(jnp.real(leaf)) for leaf in jax.tree_util.tree_leaves(restricted(diff, x)(*ys))
               if is_float(jnp.result_type(leaf)))


B = 3
xs = [x[i] for i in diff]
stacked = [np.stack([draw(np.asarray(xi).dtype, np.shape(xi), SPECS[i][2]) for _ in range(B)])
           for i, xi in zip(diff, xs)]
grad = jax.grad(total, argnums=tuple(range(len(xs))))
loop = [grad(*[s[b] for s in stacked]) for b in range(B)]
for name, transformed in (("jax.vmap(jax.grad(f))", jax.vmap(grad)), ("jax.jit(jax.grad(f))", None)):
    if transformed is None:
        for b in range(B):
            for k, (a, e) in enumerate(zip(leaves(jax.jit(grad)(*[s[b] for s in stacked])), leaves(loop[b]))):
                assert_close(a, e, f"{{name}}, example {{b}}, gradient {{k}}")
        continue
    got = leaves(transformed(*stacked))
    for k, a in enumerate(got):
        assert_close(a, np.stack([leaves(item)[k] for item in loop]), f"{{name}}, gradient {{k}}")
print("ok: the gradient composes with vmap and jit")
'''

_VJP_VMAP = '''
B = {batch}
IN_AXES = {in_axes}
axes = list(IN_AXES) if isinstance(IN_AXES, (tuple, list)) else [IN_AXES] * len(SPECS)
batched = []
for (dtype, shape, domain), axis in zip(SPECS, axes):
    if axis is None:
        batched.append(draw(dtype, shape, domain))
    else:
        batched.append(np.moveaxis(draw(dtype, shape, domain, (B,)), 0, axis))
''' + _FLOAT_ARGS + '''

def cotangent(o):  # a different cotangent per example (float0 for an integer output)
    o = np.asarray(o)
    return draw(o.dtype, o.shape, "normal") if is_float(o.dtype) else np.zeros(o.shape, jax.dtypes.float0)


out, pullback = jax.vjp(restricted(diff, batched, jax.vmap(f, in_axes=IN_AXES)), *[batched[i] for i in diff])
cts = jax.tree_util.tree_map(cotangent, out)
grads = pullback(cts)  # JAX's own error here when the transpose rule gets shapes it cannot handle

# Reference: each example's own VJP pulled back its own cotangent; stacked along the argument's batch axis, or
# summed over the examples for an unbatched argument (shared by every example).
per_example = []
for b in range(B):
    example = [x if a is None else np.take(x, b, axis=a) for x, a in zip(batched, axes)]
    _, pull = jax.vjp(restricted(diff, example), *[example[i] for i in diff])
    per_example.append(pull(jax.tree_util.tree_map(lambda c: np.asarray(c)[b], cts)))
for k, i in enumerate(diff):
    parts = [np.asarray(p[k]) for p in per_example]
    expected = sum(parts[1:], parts[0]) if axes[i] is None else np.stack(parts, axis=axes[i])
    assert_close(grads[k], expected.astype(parts[0].dtype), f"cotangent of argument {{i}} (in_axes {{axes[i]}})")
print("ok: jax.vjp(jax.vmap(f)) matches the per-example VJPs")
'''

_FLAT_PRIMAL = '''
import inspect
import re

x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
''' + _FLOAT_ARGS + '''
RULE = getattr(TARGET, "bwd", None) or getattr(TARGET, "jvp", None)  # custom_vjp's bwd, custom_jvp's jvp rule


def gradient(fn, i):
    """jax.grad of the sum of fn's floating-point outputs with respect to argument i (the others fixed)."""
    def total(y):
        full = list(x)
        full[i] = y
        return sum(jnp.sum(jnp.real(v)) for v in jax.tree_util.tree_leaves(fn(*full)) if is_float(jnp.result_type(v)))
    return np.asarray(jax.grad(total)(jnp.asarray(x[i])))


def declared_surrogate(rule):
    """The rule's def line says its derivative is a surrogate on purpose (an `intended[{code}]` comment)."""
    try:
        lines = inspect.getsourcelines(rule)[0]
    except (OSError, TypeError):
        return False
    head = next((line for line in lines if line.lstrip().startswith("def ")), "")
    return re.search(r"#.*\\bintended\\[[^\\]]*\\b{code}\\b", head) is not None


for i in diff:
    flat = gradient(lambda *a: f(*a, TARGET=TARGET.fun), i)  # autodiff of the undecorated primal
    custom = gradient(f, i)
    if np.all(flat == 0) and np.all(np.isfinite(custom)) and np.any(custom != 0) and not declared_surrogate(RULE):
        raise AssertionError(
            f"argument {{i}}: the custom derivative is {{np.array2string(custom, precision=4, threshold=12)}} where "
            "the primal is flat (autodiff of TARGET.fun gives exactly 0): a surrogate (an estimator or a relaxation) "
            "that its rule does not declare as intended")
print("ok: the custom derivative is autodiff's wherever the primal is flat, or declared a surrogate")
'''

_JIT = '''
x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
expected = leaves(f(*x))
actual = leaves(jax.jit(f)(*x))
assert len(actual) == len(expected), f"jit returned {{len(actual)}} outputs, eager {{len(expected)}}"
for k, (a, e) in enumerate(zip(actual, expected)):
    assert_close(a, e, f"output {{k}} of jax.jit vs eager")
print("ok: jax.jit matches eager execution")
'''

_CALL = '''
x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
expected = leaves(f(*x))  # eager: needs the impl
shapes = jax.tree_util.tree_leaves(jax.eval_shape(f, *x))  # tracing: needs the abstract evaluation
assert len(shapes) == len(expected), f"abstract evaluation gives {{len(shapes)}} outputs, the impl {{len(expected)}}"
for k, (s, e) in enumerate(zip(shapes, expected)):
    assert (tuple(s.shape), np.dtype(s.dtype)) == (e.shape, e.dtype), (
        f"output {{k}}: the impl gives {{e.dtype}}{{list(e.shape)}}, the abstract evaluation "
        f"{{np.dtype(s.dtype)}}{{list(s.shape)}}")
for k, (a, e) in enumerate(zip(leaves(jax.jit(f)(*x)), expected)):
    assert_close(a, e, f"output {{k}} of jax.jit vs eager")
print("ok: eager, abstract evaluation and jit agree")
'''

_LOWER = '''
x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
PLATFORM = {platform}
# Lowering for a platform does not need its device: this raises NotImplementedError when a primitive has no
# lowering for it.
jax.jit(f).trace(*x).lower(lowering_platforms=(PLATFORM,))
print(f"ok: lowers for {{PLATFORM}}")
'''

_LEGACY = '''
x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
jaxpr = str(jax.make_jaxpr(f)(*x))
# JAX still runs it, so the script looks at what the function declares: the deprecated method is slated for removal.
assert "legacy_vectorized" not in jaxpr, (
    "expected vmap_method 'expand_dims' or 'sequential', actual 'legacy_vectorized' (deprecated, slated for removal)")
print("ok: no deprecated vmap_method")
'''

_ABSTRACT_VMAP = '''
B = {batch}
IN_AXES, OUT_AXES = {in_axes}, {out_axes}
axes = list(IN_AXES) if isinstance(IN_AXES, (tuple, list)) else [IN_AXES] * len(SPECS)


def with_batch(shape, axis):  # the shape with a batch of B inserted at `axis` (negative counts from the end)
    shape = list(shape)
    shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, B)
    return tuple(shape)


# The target cannot run on this platform: shapes and dtypes only, by tracing (no kernel runs).
one = [jax.ShapeDtypeStruct(shape, dtype) for dtype, shape, _ in SPECS]
batched = [x if a is None else jax.ShapeDtypeStruct(with_batch(x.shape, a), x.dtype) for x, a in zip(one, axes)]
expected = jax.tree_util.tree_leaves(jax.eval_shape(f, *one))
actual = jax.tree_util.tree_leaves(jax.eval_shape(jax.vmap(f, in_axes=IN_AXES, out_axes=OUT_AXES), *batched))
out_axes = list(OUT_AXES) if isinstance(OUT_AXES, (tuple, list)) else [OUT_AXES] * len(actual)
assert len(actual) == len(expected), f"vmap returned {{len(actual)}} outputs, one example {{len(expected)}}"
for k, (a, e, axis) in enumerate(zip(actual, expected, out_axes)):
    want = e.shape if axis is None else with_batch(e.shape, axis)
    assert (a.shape, a.dtype) == (want, e.dtype), (f"output {{k}}: vmap gives {{a.dtype}}{{list(a.shape)}}, "
                                                   f"expected {{e.dtype}}{{list(want)}} (batch of {{B}} at {{axis}})")
print("ok: jax.vmap gives the per-example shapes and dtypes with the batch axis")
'''

# Before a check that compares a transformation with a reference computed by calling the target: the target must
# run on such inputs at all, or the failure that follows is not the defect (a required option left out, an input
# outside the function's contract). The generator is rewound after it: the check draws what it draws without it.
PREFLIGHT = '''
state = rng.bit_generator.state
try:
    f(*[draw(dtype, shape, domain) for dtype, shape, domain in SPECS])
except Exception as error:
    sys.exit(f"not a reproduction: the target does not run on the drawn inputs ({type(error).__name__}: {error})")
rng.bit_generator.state = state
'''
# The checks whose failure may be the plain call itself, or that run no kernel: no preflight.
NO_PREFLIGHT = {"call", "lower", "legacy", "abstract_vmap"}

CHECKS = {"vmap": _VMAP, "abstract_vmap": _ABSTRACT_VMAP, "vjp": _VJP, "jvp": _JVP, "grad2": _GRAD2,
           "vmap_grad": _VMAP_GRAD, "vjp_vmap": _VJP_VMAP, "flat_primal": _FLAT_PRIMAL, "jit": _JIT,
           "call": _CALL, "lower": _LOWER, "legacy": _LEGACY}
