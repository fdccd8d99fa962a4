"""Plain-JAX repros of the JXS (sharding) bad samples, for `scripts/jax_says.py`: each runs in a child process
with 8 virtual CPU devices (`--xla_force_host_platform_device_count=8`, as `jaxdiag sharding` does), places the
input on a 2x4 mesh of axes `a`, `b`, makes the natural call, and reports what JAX raised, or what is wrong (or
costly) about the result. These are also the confirmation, with plain JAX only, of every JXS sample's defect.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from jax_says import says

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import importlib.util, json, re, sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
sys.path.insert(0, {samples!r})
spec = importlib.util.spec_from_file_location("sample", {path!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("a", "b"))
x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
def put(v, *spec):
    return jax.device_put(v, NamedSharding(mesh, P(*spec)))
def gathers(f, *args):
    hlo = jax.jit(f).lower(*args).compile().as_text()
    return len(re.findall(r"\\ball-gather(?:-start)?\\(", hlo))
def off(got, want):
    return float(np.max(np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))))
"""


class PlainJaxError(Exception):
    """What the child's plain-JAX call raised (renamed to the original type below)."""


def in_child(sample: str, body: str) -> str:
    """Run `body` (which sets `result`) after PRELUDE in a child with 8 CPU devices."""
    from jaxdiag._mesh._sharding import child_env

    script = PRELUDE.format(samples=str(ROOT / "samples"), path=str(ROOT / "samples" / sample)) + textwrap.dedent(
        """
        try:
        {body}
            print(json.dumps({{"result": result}}))
        except Exception as exc:
            print(json.dumps({{"raises": [type(exc).__name__, str(exc)]}}))
        """).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=child_env(8),
                          check=False, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"the plain-JAX repro of {sample} failed: {done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(lines[-1])
    if "raises" in answer:
        name, message = answer["raises"]
        raise type(name, (PlainJaxError,), {})(message)
    return str(answer["result"])


@says("JXS001")
def _jxs001(m: Any) -> str | None:
    """`jax.jit(fft_real)(x)` with `x` placed as `P(None, 'b')` on a 2x4 mesh"""
    return in_child("jxs001_bad.py", """
        err = off(jax.jit(m.fft_real)(put(x, None, "b")), np.fft.fft(x, axis=-1).real)
        result = f"nothing: wrong result (off by up to {err:.3g}; exact for P() and P('a', None))" if err > 1e-3 \\
            else "nothing: no error, correct result"
    """)


@says("JXS002")
def _jxs002(m: Any) -> str | None:
    """`jax.jit(scale)(x)` with `x` placed as `P('a', None)` on a 2x4 mesh"""
    return in_child("jxs002_bad.py", """
        try:
            jax.jit(m.scale)(put(x, "a", None))
        except Exception as exc:  # XLA wraps the partitioner's ValueError in a traceback: keep its last line
            cause = [line for line in str(exc).splitlines() if "Mismatch in result shapes" in line]
            if not cause:
                raise
            raise ValueError(cause[-1].split("ValueError: ", 1)[-1]) from None
        result = "nothing: no error, correct result"
    """)


@says("JXS003")
def _jxs003(m: Any) -> str | None:
    """`jax.jit(running_total)(x)` with `x` placed as `P(None, 'b')` on a 2x4 mesh"""
    return in_child("jxs003_bad.py", """
        err = off(jax.jit(m.running_total)(put(x, None, "b")), np.cumsum(x, axis=-1))
        result = f"nothing: wrong result (off by up to {err:.3g}; exact for P() and P('a', None))" if err > 1e-3 \\
            else "nothing: no error, correct result"
    """)


@says("JXS004")
def _jxs004(m: Any) -> str | None:
    """`jax.grad` of `shard_map(soft_sign_p.bind)` summed, over all 8 devices"""
    return in_child("jxs004_bad.py", """
        try:
            from jax import shard_map
        except ImportError:
            from jax.experimental.shard_map import shard_map
        names = ("a", "b")
        f = shard_map(lambda v: m.soft_sign_p.bind(v), mesh=mesh, in_specs=P(names), out_specs=P(names))
        g = jax.jit(jax.grad(lambda v: f(v).sum()))(put(x[:, :1].reshape(8), names))
        result = "nothing: no error, correct result"
    """)


@says("JXS005")
def _jxs005(m: Any) -> str | None:
    """`jax.jit(cumsum_rows)(x)` with `x` placed as `P('a', None)` on a 2x4 mesh"""
    return in_child("jxs005_bad.py", """
        xs = put(x, "a", None)
        err = off(jax.jit(m.cumsum_rows)(xs), np.cumsum(x, axis=-1))
        result = f"nothing: correct result (off by {err:.1g}), but the compiled HLO all-gathers the operand " \\
                 f"({gathers(m.cumsum_rows, xs)} all-gather) before the custom call"
    """)


@says("JXS006")
def _jxs006(m: Any) -> str | None:
    """`jax.jit(row_norms)(x)` with `x` replicated on a 2x4 mesh"""
    return in_child("jxs006_bad.py", """
        out = jax.jit(m.row_norms)(put(x))
        result = "nothing: no error, correct result"
    """)


@says("JXS007")
def _jxs007(m: Any) -> str | None:
    """`jax.jit(scale)(x)` with `x` placed as `P('a', None)` on a 2x4 mesh"""
    return in_child("jxs007_bad.py", """
        xs = put(x, "a", None)
        err = off(jax.jit(m.scale)(xs), 2 * x)
        result = f"nothing: correct result (off by {err:.1g}), but the compiled HLO has {gathers(m.scale, xs)} " \\
                 "all-gather(s) for an elementwise op"
    """)


@says("JXS008")
def _jxs008(m: Any) -> str | None:
    """`jax.jit(fft_last)(x)` with complex `x` placed as `P(None, 'b')` on a 2x4 mesh (Shardy on)"""
    return in_child("jxs008_bad.py", """
        jax.config.update("jax_use_shardy_partitioner", True)
        xc = (x + 1j * x[::-1]).astype(np.complex64)
        xs = put(xc, None, "b")
        err = off(jax.jit(m.fft_last)(xs), np.fft.fft(xc, axis=-1))
        result = f"nothing: correct result (off by {err:.1g}), but the compiled HLO has " \\
                 f"{gathers(m.fft_last, xs)} all-gather(s), and the result stays sharded along the FFT axis"
    """)


@says("JXS009")
def _jxs009(m: Any) -> str | None:
    """`jax.grad` with respect to a replicated weight of a psum-reduced loss inside `shard_map`, over 8 devices"""
    return in_child("jxs009_bad.py", """
        try:
            from jax import shard_map
        except ImportError:
            from jax.experimental.shard_map import shard_map
        names = ("a", "b")
        xb, w = x[:, :4], x[0, 4:8]
        def loss(v, w):
            return jax.lax.psum(jnp.sum(jnp.sin(m.scale(v, jnp.broadcast_to(w, v.shape)))), names)
        f = shard_map(loss, mesh=mesh, in_specs=(P(names), P()), out_specs=P())
        err = off(jax.grad(f, argnums=1)(xb, w), jax.grad(lambda v, w: jnp.sum(jnp.sin(v * w)), argnums=1)(xb, w))
        result = f"nothing: wrong gradient for the replicated weight (off by up to {err:.3g})" if err > 1e-3 \\
            else "nothing: no error, correct result"
    """)
