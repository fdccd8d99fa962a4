"""`jax.vjp(jax.vmap(f))` against the stacked per-example VJPs in the batching command (JXB017/JXB018): transpose
rules that receive operands with a size-1 or broadcast batch dim from the batching rule. Verdicts follow plain JAX
on the running release: each test first runs the same transformation with plain JAX."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag
from tests.markers import expect_line

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
MEMBERS = ROOT / "tests" / "data" / "batched_vjp" / "members.py"
MAPPED = ROOT / "tests" / "data" / "batched_vjp" / "mapped_transpose.py"


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"bvjp_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain_jax_verdict(prim, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> set[str]:
    """What jax.vjp(jax.vmap(bind)) does against the examples over in_axes (0, 0), (None, 0), (0, None): the set of
    'fails' / 'differs' seen (empty: it agrees everywhere)."""
    rng = np.random.default_rng(0)
    f = lambda x, w: prim.bind(x, w)  # noqa: E731
    verdict: set[str] = set()
    for axes in ((0, 0), (None, 0), (0, None)):
        x = rng.standard_normal(((5,) if axes[0] == 0 else ()) + x_shape).astype(np.float32)
        w = rng.standard_normal(((5,) if axes[1] == 0 else ()) + w_shape).astype(np.float32)
        out = jax.vmap(f, in_axes=axes)(x, w)
        ct = rng.standard_normal(out.shape).astype(np.float32)
        try:
            got = jax.vjp(jax.vmap(f, in_axes=axes), x, w)[1](ct)
        except (ValueError, TypeError):
            verdict.add("fails")
            continue
        for k, axis in enumerate(axes):
            rows = [jax.vjp(f, x[j] if axes[0] == 0 else x, w[j] if axes[1] == 0 else w)[1](ct[j])[k]
                    for j in range(5)]
            want = np.stack(rows) if axis == 0 else np.sum(rows, axis=0)
            if not np.allclose(got[k], want, rtol=1e-4, atol=1e-5):
                verdict.add("differs")
    return verdict


def test_plain_jax_refuses_the_sample_and_accepts_its_fix():
    bad, good = load(SAMPLES / "jxb018_bad.py"), load(SAMPLES / "jxb018_good.py")
    assert plain_jax_verdict(bad.scale_p, (3,), (3,)) == {"fails"}
    assert plain_jax_verdict(good.scale_p, (3,), (3,)) == set()
    x = jnp.ones((5, 3))
    assert np.allclose(jax.vmap(lambda a, b: bad.scale_p.bind(a, b), in_axes=(0, None))(x, jnp.arange(3.0)),
                       x * jnp.arange(3.0))  # the forward value is right


def test_sample_found_at_the_transpose_rule_and_names_the_shapes():
    report = jaxdiag.check_batching(f"{SAMPLES / 'jxb018_bad.py'}:scale_p", "f32[3]", "f32[3]")
    hits = [f for f in report.findings if f.code == "JXB018"]
    assert len(hits) == 1, [(f.code, f.message) for f in report.findings]
    assert hits[0].location.line == expect_line("jxb018_bad.py", "JXB018")
    assert "size-1 batch dim" in hits[0].message and "(1, 3)" in hits[0].message
    assert "broadcast_to" in hits[0].fix
    assert jaxdiag.check_batching(f"{SAMPLES / 'jxb018_good.py'}:scale_p", "f32[3]", "f32[3]").ok


def test_transpose_rule_that_raises_on_an_unbatched_linear_operand_is_named_at_its_line():
    # a transpose rule that vmaps its per-example rule with out_axes None for an operand the vmap left unbatched:
    # the batching rule is right, the finding belongs at the transpose rule's failing line, with the sum to return
    assert plain_jax_verdict(load(MAPPED).add_p, (3,), (3,)) == {"fails"}
    report = jaxdiag.check_batching(f"{MAPPED}:add_p", "f32[3]", "f32[3]")
    hits = [f for f in report.findings if f.code == "JXB018"]
    assert len(hits) == 1, [(f.code, f.message) for f in report.findings]
    assert hits[0].location.function == "_transpose" and hits[0].location.line == expect_line(MAPPED, "JXB018")
    assert "operand 0 (shape (3,)) left unbatched" in hits[0].message and "sum over the batch" in hits[0].message
    assert "sum the cotangent" in hits[0].fix


def test_jxb017_sample_silently_wrong_and_found_at_the_transpose_rule():
    bad, good = load(SAMPLES / "jxb017_bad.py"), load(SAMPLES / "jxb017_good.py")
    assert plain_jax_verdict(bad.row_mean_p, (4, 3), (4, 3)) >= {"differs"}
    assert plain_jax_verdict(good.row_mean_p, (4, 3), (4, 3)) == set()
    report = jaxdiag.check_batching(f"{SAMPLES / 'jxb017_bad.py'}:row_mean_p", "f32[4,3]", "f32[4,3]")
    hits = [f for f in report.findings if f.code in ("JXB017", "JXB018")]
    assert len(hits) == 1 and hits[0].location.line == expect_line("jxb017_bad.py", hits[0].code), \
        [(f.code, f.message) for f in report.findings]
    assert jaxdiag.check_batching(f"{SAMPLES / 'jxb017_good.py'}:row_mean_p", "f32[4,3]", "f32[4,3]").ok


@pytest.mark.slow  # four primitives through every batching check, ~20 s
@pytest.mark.parametrize("name, x_shape, w_shape", [
    ("rows_from_axis0_p", (4, 3), (4, 3)), ("rows_broadcast_to_p", (4, 3), (4, 3)), ("rows_summed_p", (4, 3), (4, 3)),
    ("expand_scale_p", (3,), (3,)),
])
def test_verdict_follows_plain_jax(name, x_shape, w_shape):
    members = load(MEMBERS)
    verdict = plain_jax_verdict(getattr(members, name), x_shape, w_shape)
    spec = [f"f32[{','.join(map(str, x_shape))}]", f"f32[{','.join(map(str, w_shape))}]"]
    report = jaxdiag.check_batching(f"{MEMBERS}:{name}", *spec)
    found = {f.code for f in report.findings if f.severity in ("error", "warning")}
    codes = {"fails": "JXB018", "differs": "JXB017"}
    # one finding per target, for the first variant that shows a defect: any code plain JAX backs, none if it agrees
    assert (len(found) == 1 and found <= {codes[v] for v in verdict}) if verdict else not found, \
        (verdict, [(f.code, f.message) for f in report.findings])
    if name == "expand_scale_p":  # the sample's class written with jnp.expand_dims: only newer JAX refuses it
        assert verdict <= {"fails"}
    elif name == "rows_summed_p":
        assert not verdict


@pytest.mark.slow  # the grad command on the same sample, ~6 s
def test_grad_command_does_not_run_the_batching_check():
    report = jaxdiag.check_grad(f"{SAMPLES / 'jxb018_bad.py'}:scale_p", "f32[3]", "f32[3]")
    assert not [f for f in report.findings if f.code in ("JXB017", "JXB018")]
