"""lax.custom_linear_solve and lax.custom_root as custom rules: solve / transpose_solve / symmetric=True /
tangent_solve checked against matvec and f (JXG029-JXG032), located at the user's solver, and the function's
gradient compared with finite differences. Each defect is first shown with plain JAX."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdiag
from jaxdiag import _compat
from jaxdiag._harness import jaxdiag_code
from tests.clirun import Runner, flat
from tests.markers import expect_line

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
DATA = ROOT / "tests" / "data" / "solves"
SQUARE = ("f32[3,3]", "f32[3]")


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"solves_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def codes(report: jaxdiag.Report) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f.location.line if f.location else -1)
    return out


def no_internal_errors(report: jaxdiag.Report) -> None:
    assert not [c.detail for t in report.targets for c in t.checks if c.status == "error"]


A = np.array([[0.3, -1.2, 0.5], [0.8, 0.1, -0.7], [-0.4, 0.9, 0.2]], np.float32)
B = np.array([0.5, -1.0, 2.0], np.float32)


def exact(a, b):
    return jnp.linalg.solve(a + 4.0 * jnp.eye(3), b).sum()


@pytest.mark.slow  # plain JAX compiles every gradient, ~5 s on a shared machine
def test_plain_jax_shows_the_solve_samples_wrong():
    ref_a = jax.grad(exact)(A, B)
    scaled = load(SAMPLES / "jxg029_bad.py").scaled_solve
    assert np.allclose(jax.grad(lambda a: scaled(a, B).sum())(A), 2 * ref_a, rtol=1e-4, atol=1e-6)
    ref_b = jax.grad(exact, argnums=1)(A, B)
    for fn in (load(SAMPLES / "jxg030_bad.py").reused_solve, load(SAMPLES / "jxg031_bad.py").assumed_symmetric):
        assert np.isclose(fn(A, B), exact(A, B), rtol=1e-5)  # the forward value is right
        assert not np.allclose(jax.grad(fn, argnums=1)(A, B), ref_b, rtol=1e-3)  # the gradient is not


@pytest.mark.slow  # plain JAX compiles every gradient, ~5 s on a shared machine
def test_plain_jax_shows_the_root_samples_wrong():
    bad = load(SAMPLES / "jxg032_bad.py")
    assert np.isclose(jax.grad(bad.cube_root)(8.0), 1.0)
    assert np.isclose((bad.cube_root(8.001) - bad.cube_root(7.999)) / 0.002, 1 / 12, rtol=1e-2)
    c = jnp.array([0.3, -0.2, 0.5])
    fd = np.stack([(bad.fixed_point(c + 1e-3 * e) - bad.fixed_point(c - 1e-3 * e)) / 2e-3 for e in jnp.eye(3)], 1)
    assert not np.allclose(jax.jacobian(bad.fixed_point)(c), fd, atol=1e-2)


@pytest.mark.slow  # runs every grad check of a function, 5-35 s on a shared machine
@pytest.mark.parametrize("name, code", [("scaled_solve", "JXG029"), ("reused_solve", "JXG030"),
                                        ("assumed_symmetric", "JXG031")])
def test_solve_sample_members_found_at_their_solver(name, code):
    sample = f"{code.lower()}_bad.py"
    report = jaxdiag.check_grad(f"{SAMPLES / sample}:{name}", *SQUARE)
    no_internal_errors(report)
    found = codes(report)
    assert expect_line(sample, code) in found.get(code, []), found
    others = {"JXG029", "JXG030", "JXG031"} - {code}
    assert not others & set(found), found  # one cause, named once
    assert found.get("JXG014"), found  # and the function's gradient disagrees with finite differences


@pytest.mark.slow  # runs every grad check of a function, 5-35 s on a shared machine
def test_solve_messages_say_how_the_solver_is_wrong():
    scaled = jaxdiag.check_grad(f"{SAMPLES / 'jxg029_bad.py'}:scaled_solve", *SQUARE)
    (hit,) = [f for f in scaled.findings if f.code == "JXG029"]
    assert "2 times the exact solution" in hit.message and "double_solve" in hit.message
    reused = jaxdiag.check_grad(f"{SAMPLES / 'jxg030_bad.py'}:reused_solve", *SQUARE)
    (hit,) = [f for f in reused.findings if f.code == "JXG030"]
    assert "not its transpose" in hit.message and "vecmat" in hit.fix


@pytest.mark.slow  # runs every grad check of a function, 5-35 s on a shared machine
@pytest.mark.parametrize("name", ["cube_root", "fixed_point"])
def test_root_sample_members_found_at_tangent_solve(name):
    spec = "f32[]@positive" if name == "cube_root" else "f32[3]"
    report = jaxdiag.check_grad(f"{SAMPLES / 'jxg032_bad.py'}:{name}", spec)
    no_internal_errors(report)
    hits = [f for f in report.findings if f.code == "JXG032"]
    assert len(hits) == 1 and "tangent_solve" in hits[0].message
    assert hits[0].location.line in [expect_line("jxg032_bad.py", "JXG032", k) for k in (0, 1)]


@pytest.mark.slow  # runs every grad check of a function, 5-35 s on a shared machine
@pytest.mark.parametrize("sample, name, args", [
    ("jxg029_good.py", "exact_solve", SQUARE), ("jxg030_good.py", "transposed_solve", SQUARE),
    ("jxg031_good.py", "symmetric_solve", SQUARE),
    ("jxg032_good.py", "cube_root", ("f32[]@positive",)), ("jxg032_good.py", "fixed_point", ("f32[3]",)),
])
def test_good_samples_are_clean(sample, name, args):
    report = jaxdiag.check_grad(f"{SAMPLES / sample}:{name}", *args)
    no_internal_errors(report)
    assert report.ok, [(f.code, f.message) for f in report.findings]


@pytest.mark.slow  # runs every grad check of a function, 5-35 s on a shared machine
@pytest.mark.parametrize("name, args, code", [
    ("jacobi_two_steps", SQUARE, "JXG029"), ("jacobi_converged", SQUARE, None),
    ("half_transpose", SQUARE, "JXG030"), ("pytree_aux", SQUARE, None), ("jax_gmres", SQUARE, None),
    ("jax_cg", SQUARE, None),
    ("sqrt_wrong_root", ("f32[]@positive",), "JXG032"), ("sqrt_newton", ("f32[]@positive",), None),
    ("sqrt_negated_tangent", ("f32[]@positive",), "JXG032"), ("cg_nonsymmetric", SQUARE, "JXG031"),
])
def test_other_class_members(name, args, code):
    report = jaxdiag.check_grad(f"{DATA / 'members.py'}:{name}", *args)
    no_internal_errors(report)
    found = codes(report)
    if code is None:  # JAX's own solvers: none of the solver rules (other checks of these functions are not ours)
        assert not {"JXG029", "JXG030", "JXG031", "JXG032"} & set(found), found
        assert report.ok or name.startswith("jax_"), found
        return
    source = (DATA / "members.py").read_text().splitlines()
    lines = found.get(code, [])
    # at the solver's def line, or at the call for a symmetry JAX's solver was promised
    at_fault = [source[line - 1].lstrip().startswith("def ") or "the finding's line" in source[line - 1]
                for line in lines]
    assert lines and all(at_fault), found


@pytest.mark.slow  # plain JAX compiles every gradient, ~5 s on a shared machine
def test_plain_jax_shows_the_other_members_wrong():
    members = load(DATA / "members.py")
    c = 2.0
    assert np.isclose(jax.grad(members.sqrt_newton)(c), 0.5 / np.sqrt(c), rtol=1e-4)
    assert np.isclose(jax.grad(members.sqrt_negated_tangent)(c), -0.5 / np.sqrt(c), rtol=1e-4)
    ref = jax.grad(exact)(A, B)
    assert not np.allclose(jax.grad(lambda a: members.jacobi_two_steps(a, B).sum())(A), ref, rtol=1e-2)
    assert np.allclose(jax.grad(lambda a: members.jacobi_converged(a, B).sum())(A), ref, rtol=1e-3, atol=1e-5)
    cg_grad = jax.grad(lambda b: members.cg_nonsymmetric(A, b).sum())(B)
    assert not np.allclose(cg_grad, jax.grad(exact, argnums=1)(A, B), rtol=1e-2)


@pytest.mark.slow  # runs every grad check of a function, 5-35 s on a shared machine
def test_discovered_in_a_module_without_declarations():
    from jaxdiag._parent._cli import app

    result = Runner().invoke(app, ["check", str(DATA / "solvers_lib.py"), "--format", "json"])
    import json

    report = json.loads(result.stdout)
    found = {(f["code"], f["location"]["line"]) for t in report["targets"] for f in t["findings"]}
    source = (DATA / "solvers_lib.py").read_text().splitlines()
    transpose_line = next(n for n, t in enumerate(source, 1) if "def solve(matvec" in t)
    tangent_line = next(n for n, t in enumerate(source, 1) if "def tangent_solve" in t)
    assert ("JXG030", transpose_line) in found and ("JXG032", tangent_line) in found, found
    assert "no custom rule inside" not in flat(result.stdout)


def test_solve_calls_read_from_jaxprs_and_recorder_restores():
    members = load(DATA / "members.py")
    closed = jax.make_jaxpr(members.half_transpose)(A, B)
    calls = _compat.solve_calls_in(closed, [])  # jnp.linalg.solve inside the user's solvers makes its own
    (call,) = [c for c in calls if _compat.jaxpr_source(c.jaxprs["solve"])[1].endswith("members.py")]
    assert call.kind == "linear" and not call.symmetric
    name, path, _ = _compat.jaxpr_source(call.jaxprs["transpose_solve"])
    assert name == "transpose_solve" and path.endswith("members.py")
    bind, jvp_call = _compat.Primitive.bind, type(jax.custom_jvp(lambda x: x)).__call__
    seen: list = []
    with _compat.record_solves(seen, jaxdiag_code), jax.disable_jit():
        members.sqrt_newton(jnp.float32(2.0))
        members.half_transpose(A, B)
    ours = [c for c in seen if _compat.jaxpr_source(c.jaxprs["solve"])[1].endswith("members.py")]
    assert [c.kind for c in ours] == ["root", "linear"] and all(c.concrete for c in ours)
    assert _compat.Primitive.bind is bind and type(jax.custom_jvp(lambda x: x)).__call__ is jvp_call
