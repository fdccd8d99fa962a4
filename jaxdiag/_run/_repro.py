"""`--repro DIR`: one standalone script per error or warning, using plain JAX and NumPy only (no jaxdiag import).

Each script imports the user's module (or another one named on its command line, to try a fixed version), draws
the example inputs with a fixed seed, applies the transformation that exposed the defect (`_exposure`) and checks
the result against a reference it computes itself: the per-example loop for vmap, central finite differences for
derivatives, eager execution for jit. It fails with an assertion naming expected and actual (shape, dtype or
value), or with JAX's own error; it exits 0 once the defect is gone.
"""

from __future__ import annotations

import dataclasses

import os
import re
import textwrap
from typing import Any

import numpy as np

from . import _engine
from .. import _rules as rules
from ._exposure import Exposure, exposure_for
from .._core._report import Finding, Report, TargetReport


def write_all(report: Report, folder: str) -> list[str]:
    """Write a script per error/warning of `report` into `folder`; returns the paths written."""
    os.makedirs(folder, exist_ok=True)
    written: list[str] = []
    used: set[str] = set()
    for target in report.targets:
        subject = getattr(target, "subject", None)
        if subject is None:
            continue
        for finding in target.findings:
            if finding.severity == "info":
                continue
            text = script(target, subject, finding)
            if text is None:
                continue
            base = f"{finding.code.lower()}_{_slug(subject)}"
            name, n = f"{base}.py", 2
            while name in used:
                name, n = f"{base}_{n}.py", n + 1
            used.add(name)
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            written.append(path)
    return written


def _slug(subject: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", subject.label.rpartition(":")[2]).strip("_").lower() or "target"


# ---------------------------------------------------------------------------------------------------------------
# How the script gets at the target
# ---------------------------------------------------------------------------------------------------------------


def _module_and_attr(subject: Any) -> tuple[Any, str, Any] | None:
    """(module, attribute path, the subject to reproduce) — the subject itself when the module names it, else its
    parent function (a primitive found inside a function)."""
    import sys

    for candidate in (subject, subject.parent):
        if candidate is None:
            continue
        module = sys.modules.get(candidate.module) if candidate.module else None
        label_attr = candidate.label.partition(" > ")[0].rpartition(":")[2]
        if module is not None and candidate is subject and " > " not in candidate.label and label_attr \
                and _resolve(module, label_attr) is not None:
            return module, label_attr, candidate
        for mod in _modules_of(candidate):
            for name, value in vars(mod).items():
                if value is candidate.obj or getattr(value, "__wrapped__", None) is candidate.obj:
                    return mod, name, candidate
    return None


def _modules_of(subject: Any) -> list[Any]:
    import inspect
    import sys

    mods = []
    if subject.module and subject.module in sys.modules:
        mods.append(sys.modules[subject.module])
    root = subject
    while root.parent is not None:
        root = root.parent
    if root.module and root.module in sys.modules:
        mods.append(sys.modules[root.module])
    fn = getattr(subject.obj, "fun", None) or subject.obj
    mod = inspect.getmodule(fn)
    if mod is not None:
        mods.append(mod)
    return list(dict.fromkeys(mods))


def _resolve(module: Any, attr: str) -> Any:
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _literal(value: Any) -> str | None:
    """Python source for a bind parameter or static argument, or None when it has none."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return f"np.dtype({np.dtype(value).name!r})"
    if isinstance(value, (tuple, list)):
        items = [_literal(v) for v in value]
        if any(i is None for i in items):
            return None
        body = ", ".join(items)  # type: ignore[arg-type]
        return f"({body},)" if isinstance(value, tuple) and len(items) == 1 else (
            f"({body})" if isinstance(value, tuple) else f"[{body}]")
    if isinstance(value, dict):
        pairs = [(_literal(k), _literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return None


# ---------------------------------------------------------------------------------------------------------------
# The script
# ---------------------------------------------------------------------------------------------------------------


def script(target: TargetReport, subject: Any, finding: Finding) -> str | None:
    found = _module_and_attr(subject)
    if found is None:
        return None
    module, attr, chosen = found
    kind = chosen.kind
    wrapper = finding.location.function if finding.location is not None else ""
    if finding.code in _AT_WRAPPER and callable(getattr(module, wrapper, None)):
        attr, kind = wrapper, "function"  # the defect is the wrapper's return type: call the wrapper
    params = {k: _literal(v) for k, v in chosen.params.items()} if kind == "primitive" else {}
    statics = {i: _literal(v) for i, v in chosen.static_args.items()}
    if any(v is None for v in [*params.values(), *statics.values()]):
        return None
    module_file = os.path.abspath(getattr(module, "__file__", "") or "")
    if not module_file:
        return None
    exposure = exposure_for(finding, chosen.kind) if chosen is subject else Exposure("call")
    if finding.code == rules.PLATFORM_LOWERING_MISSING.code:
        exposure = Exposure("lower")
    if finding.code == rules.FFI_LEGACY_VECTORIZED.code:
        exposure = Exposure("legacy")
    if any(f.code == rules.VALUES_NOT_COMPARED.code for f in target.findings):
        # checked abstractly (the kernel cannot run on this platform): so is the script, shapes and dtypes only
        if exposure.mode != "vmap":
            return None
        exposure = dataclasses.replace(exposure, mode="abstract_vmap")
    specs = [(np.dtype(s.dtype).name, tuple(s.shape), s.domain or chosen.domain) for s in chosen.specs]
    first = finding.message.split(". ")[0].strip().rstrip(".")
    platform = _platform_of(finding) if exposure.mode == "lower" else ""
    header = (f'"""Reproduces {finding.code} ({finding.name}) found by jaxdiag in {target.target}.\n\n'
              + textwrap.fill(first + ".", 100) + "\n\n"
              + f"Exposed by: {exposure.describe(attr)}. Plain JAX and NumPy, no jaxdiag.\n"
              + "Run: python THIS_FILE [MODULE]  (MODULE: a file or module name to check instead, e.g. a fixed "
                "copy).\nExits 0 once the defect is gone; fails with an AssertionError or JAX's own error while "
                "it is there.\n\"\"\"\n")
    call = _call_text(kind, params, statics, len(chosen.specs))
    if finding.code in _DEPRECATIONS:
        call_prelude = ("import warnings\n"
                        "warnings.simplefilter('error', DeprecationWarning)  # the finding is a deprecation\n")
    else:
        call_prelude = ""
    if any(_engine.needs_x64(s) for s in chosen.specs):
        # a 64-bit spec is checked with x64 on (only there); so is the script, before anything is traced.
        call_prelude += "import jax\njax.config.update('jax_enable_x64', True)  # the inputs are 64-bit\n"
    body = _PRELUDE.format(module_file=module_file, module_name=module.__name__, root=os.getcwd(), attr=attr,
                           specs=repr(specs), call=call)
    check = _CHECKS[exposure.mode].format(in_axes=repr(exposure.in_axes), out_axes=repr(exposure.out_axes),
                                          batch=exposure.batch, platform=repr(platform))
    return header + call_prelude + body + check


# Findings about a wrapper function around the subject (JXB011: it returns the primitive's list of outputs).
_AT_WRAPPER = {rules.OUT_AXES_TUPLE_FOR_LIST.code}
# Findings about deprecated behaviour: the script turns JAX's DeprecationWarning into the failure.
_DEPRECATIONS = {rules.FFI_VMAP_METHOD_FALLBACK.code}


def _platform_of(finding: Finding) -> str:
    match = re.search(r"\b(cuda|rocm|tpu)\b", finding.message)
    return match.group(1) if match else "cuda"


def _call_text(kind: str, params: dict[str, str | None], statics: dict[int, str | None], n: int) -> str:
    """`def f(*args)`: the target applied to the array arguments, static ones put back in place."""
    total = n + len(statics)
    pieces, k = [], 0
    for i in range(total):
        if i in statics:
            pieces.append(str(statics[i]))
        else:
            pieces.append(f"args[{k}]")
            k += 1
    args = ", ".join(pieces)
    if kind == "primitive":
        kw = ", ".join(f"{name}={value}" for name, value in params.items())
        return f"TARGET.bind({args}{', ' + kw if kw else ''})"
    return f"TARGET({args})"


_PRELUDE = '''
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
    name = {module_name!r} if MODULE == {module_file!r} else "module_under_test"
    spec = importlib.util.spec_from_file_location(name, MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
else:
    module = importlib.import_module(MODULE)
TARGET = module
for part in {attr!r}.split("."):
    TARGET = getattr(TARGET, part)


def f(*args):
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
    real = draw_real(shape, domain)
    if jnp.issubdtype(dtype, jnp.complexfloating):  # a nonzero imaginary part at every entry
        real = real + 1j * draw_real(shape, domain)
    return real.astype(dtype)


def draw_real(shape, domain):
    if domain == "positive":
        return rng.uniform(0.5, 2.0, size=shape)
    if domain == "negative":
        return rng.uniform(-2.0, -0.5, size=shape)
    if domain == "unit":
        return rng.uniform(0.05, 0.95, size=shape)
    if domain == "small":
        return 0.1 * rng.standard_normal(shape)
    if ".." in str(domain):
        lo, hi = (float(v) for v in str(domain).split(".."))
        return rng.uniform(lo, hi, size=shape)
    return rng.standard_normal(shape)


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

_DERIV_COMMON = '''
x = [draw(dtype, shape, domain) for dtype, shape, domain in SPECS]
diff = [i for i, (dtype, _, _) in enumerate(SPECS) if is_float(dtype)]
assert diff, "no floating-point argument to differentiate"


def restricted(which, xs):
    """The target as a function of the arguments in `which` only (the others fixed at their values)."""
    def g(*ys):
        full = list(xs)
        for i, y in zip(which, ys):
            full[i] = y
        return f(*full)
    return g


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
def total(*ys):
    return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(restricted(diff, x)(*ys)))


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
def total(*ys):
    return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(restricted(diff, x)(*ys)))


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

_CHECKS = {"vmap": _VMAP, "abstract_vmap": _ABSTRACT_VMAP, "vjp": _VJP, "jvp": _JVP, "grad2": _GRAD2,
           "vmap_grad": _VMAP_GRAD, "jit": _JIT,
           "call": _CALL, "lower": _LOWER, "legacy": _LEGACY}
