"""The package a new user might write, and a probe check: shared by the lint, format and plugin tests."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path
from typing import Iterator

from jaxdiag import _compat
from jaxdiag._core import _locate
from jaxdiag import _rules as rules
from jaxdiag._checks._base import Context, check
from jaxdiag._core._report import Finding

PROBE = rules.MISSING_LOWERING.code  # the code the probe check reports (a warning)

PRIMS = '''
import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.lax import sin_p  # JAX's own primitive: never a target

good_p = Primitive("good")
good_p.def_impl(lambda x: x * 2)
good_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))

bad_p = Primitive("bad"){creation_comment}


def bad_impl(x):{impl_comment}
    return x + 1


bad_p.def_impl(bad_impl)

needs_p = Primitive("needs")


def needs_impl(x, *, axis):
    return jnp.sum(x, axis=axis)


needs_p.def_impl(needs_impl)

bare_p = Primitive("bare")  # no rule registered: not a target


def helper(x):{helper_comment}
    """Not a suppression: # jaxdiag: ignore[JXB001] inside a string."""
    return x
'''

FUNCS = '''
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


@jax.custom_jvp
def smooth_bad(x):
    return jnp.sin(x)


@smooth_bad.defjvp
def smooth_bad_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), jnp.cos(x) * t


@jax.custom_vjp
def clipped(x):
    return x


def clipped_fwd(x):
    return x, None


def clipped_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)


clipped.defvjp(clipped_fwd, clipped_bwd)
clipped_jit = jax.jit(clipped)  # the same custom_vjp behind jax.jit: checked once
relu = jax.nn.relu  # JAX's own custom_jvp: never a target


@custom_vmap
def row_sum(x):
    return jnp.sum(x)


@row_sum.def_vmap
def row_sum_vmap(axis_size, in_batched, xs):
    return jnp.sum(xs, axis=1), in_batched[0]
'''

MORE = '''
import jax
import jax.numpy as jnp


@jax.custom_vjp
def scaled(x, y):
    return x * y


scaled.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))


def plain(x):
    return jnp.cos(x)


JAXDIAG = {"scaled": {"args": ["f32[4]", "f32[4]"]}, "plain": {"args": ["f32[2]"]}}
'''

ALL_TARGETS = [
    "lintpkg/funcs.py:smooth_bad", "lintpkg/funcs.py:clipped", "lintpkg/funcs.py:row_sum",
    "lintpkg/prims.py:good_p", "lintpkg/prims.py:bad_p", "lintpkg/prims.py:needs_p",
    "lintpkg/sub/more.py:scaled", "lintpkg/sub/more.py:plain",
]


def write_pkg(root: Path, creation_comment: str = "", impl_comment: str = "", helper_comment: str = "",
              extra: dict[str, str] | None = None) -> Path:
    """A package with primitives, custom functions, a re-export, a sub-package and a test folder."""
    files = {
        "lintpkg/__init__.py": "from .prims import bad_p, good_p\nfrom .funcs import smooth_bad\n",
        "lintpkg/prims.py": PRIMS.format(creation_comment=creation_comment, impl_comment=impl_comment,
                                         helper_comment=helper_comment),
        "lintpkg/funcs.py": FUNCS,
        "lintpkg/sub/__init__.py": "",
        "lintpkg/sub/more.py": MORE,
        "lintpkg/tests/__init__.py": "",
        "lintpkg/tests/test_it.py": "raise RuntimeError('test modules are not imported')\n",
        **(extra or {}),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    # Hermetic: forget any `lintpkg` an earlier test imported or left on sys.path (jaxdiag puts --app-dir there).
    for module in [m for m in sys.modules if m == "lintpkg" or m.startswith("lintpkg.")]:
        del sys.modules[module]
    sys.path[:] = [p for p in sys.path if not (p and (Path(p) / "lintpkg").is_dir() and Path(p) != root)]
    importlib.invalidate_caches()  # the finders cached the folders before these files existed
    return root / "lintpkg"


def _rule_of(subject) -> object:
    obj = subject.obj
    if subject.kind == "primitive":
        return _compat.impl(obj)
    return getattr(obj, "bwd", None) or getattr(obj, "jvp", None) or getattr(obj, "fun", obj)


@check("probe", family="batching", kinds={"primitive", "custom_vjp", "custom_jvp", "custom_vmap", "function"})
def probe(ctx: Context) -> Iterator[Finding]:
    """A warning located at the target's rule when its name says `bad`; an internal error when it says `crash`."""
    name = ctx.subject.name
    if "crash" in name:
        raise RuntimeError("probe crashed")
    if "bad" in name:
        yield rules.MISSING_LOWERING.finding(var=f"probe: {name} is bad", prim_name=name, fix="make it good",
                                             location=_locate.locate(_rule_of(ctx.subject)))
