"""Rules reached only through public functions taking a function (probe package tests/data/inputs_callables): a
parameter annotated `Callable` (or named `fn`, `*_fn`...) gets a stand-in from a short ladder (elementwise,
scalar, a tuple of pointwise outputs), a decorator factory is applied to it and what it returns is traced, a
custom_vjp caller runs as its primal, and a required keyword-only int takes the int ladder on the traced-reach path
too. What is assumed is named in the notes; a callback is never blamed for what the stand-in computes."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from clirun import check_json, missing_vmap_method_code

DATA = Path(__file__).parent / "data"


def test_parameters_taking_a_function_are_read_off_annotations_and_names() -> None:
    from jaxdiag._jobs._callables import callable_params, rungs

    def annotated(fn: Callable, x, *, size: int): ...
    def named(body_fn, n, x, f=None): ...
    def plain(x, y): ...

    assert callable_params(annotated) == (["fn"], True)
    assert callable_params(named) == (["body_fn"], False)  # `f` has a default: nothing to give it
    assert rungs(annotated) == [{"fn": "elementwise"}, {"fn": "scalar"}, {"fn": "tuple"}]
    assert rungs(named)[0] == {}  # a name alone: an array is tried first (`f` is also a field of values)
    assert rungs(plain) == [{}]


def test_a_function_unpacking_what_its_function_returns_gets_the_tuple_stand_in_first() -> None:
    """`out = barrier(fn(*xs)); tuple(y for y in out)`, `a, b = step(x)`, `tuple(fn(x))`: several outputs, so the
    stand-in returning one per array comes first (an elementwise one's array unpacked row by row can run by accident
    on some shapes, and the rule it reaches then sees what no caller passes)."""
    from jaxdiag._jobs._callables import rungs

    def held(fn: Callable, *xs):
        out = np.negative(fn(*xs))
        return tuple(y for y in out)

    def unpacked(step: Callable, x):
        a, b = step(x)
        return a + b

    def converted(fn: Callable, x):
        return tuple(fn(x))

    def summed(fn: Callable, x):
        return fn(x).sum()

    for fn in (held, unpacked, converted):
        assert rungs(fn)[0] == {next(iter(rungs(fn)[0])): "tuple"}, fn.__name__
    assert rungs(summed)[0] == {"fn": "elementwise"}


def test_factories_are_told_by_their_returns_or_annotation() -> None:
    from jaxdiag._jobs._callables import makes_function

    def factory(fn):
        def _inner(x):
            return fn(x)
        return _inner

    def annotated(fn) -> Callable: ...

    def not_one(fn, x):
        def helper(y):
            return y
        return helper(fn(x))

    assert makes_function(factory) and makes_function(annotated) and not makes_function(not_one)


def test_the_stand_in_is_numpy_in_numpy_out_and_hashable() -> None:
    import jax.numpy as jnp

    from jaxdiag._jobs._callables import StandIn

    elementwise, scalar = StandIn("elementwise"), StandIn("scalar")
    out = elementwise(np.ones(2, np.float32), np.arange(3.0))
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    assert np.shape(scalar(np.ones(2), np.ones(3))) == ()
    assert elementwise(jnp.ones(3)).shape == (3,) and hash(elementwise) == hash(StandIn("elementwise"))


def test_a_function_taking_one_is_run_with_the_stand_in_in_its_place() -> None:
    from jaxdiag._jobs._callables import carrier
    from jaxdiag._loading._targets import Target

    def apply(f: Callable, pars, x, *, size: int):
        return f(pars, x) * size

    made = carrier(Target("m:apply", apply, "function"), {"size": 2}, {"f": "elementwise"})
    assert list(__import__("inspect").signature(made.obj).parameters) == ["pars", "x"]
    # each position of the last argument scaled by its own factor (0.5, 2/3, 5/6), the others entering by their sum
    np.testing.assert_allclose(made.obj(np.ones(2), np.ones(3)), (np.array([0.5, 4 / 6, 5 / 6]) + 0.5) * 2)


def test_the_elementwise_stand_in_is_an_operator_a_krylov_method_can_use() -> None:
    """A multiple of the identity makes Lanczos break down at its first step (the start vector is an eigenvector):
    the stand-in a matrix-free solver is handed has distinct eigenvalues, and keeps its input's dtype."""
    from jaxdiag._jobs._callables import StandIn

    matvec = StandIn("elementwise")
    operator = np.stack([matvec(e) for e in np.eye(4, dtype=np.float32)])
    assert operator.dtype == np.float32
    assert len(set(np.round(np.linalg.eigvalsh(operator), 6))) == 4
    assert matvec(np.float32(2.0)) == 1.0  # a scalar: halved


def check(module: str) -> tuple[int, dict]:
    return check_json(f"inputs_callables.{module}", DATA)


def findings(data: dict, *severities: str) -> list[dict]:
    return [f for t in data["targets"] for f in t["findings"] if f["severity"] in severities]


@pytest.mark.slow
def test_a_factorys_callback_is_reached_by_applying_it_to_a_stand_in(monkeypatch) -> None:
    """`wrap_numpy(fn)` returns the function calling pure_callback with no vmap_method; before, its site was JXN012
    (traced, but it reaches none of them)."""
    monkeypatch.chdir(DATA)
    code, data = check("wrapped")
    assert data["summary"]["checked"] == 1, data["summary"]
    (missing,) = findings(data, "error", "warning")
    assert missing["code"] == missing_vmap_method_code(), missing
    (note,) = [f for f in findings(data, "info") if f["code"] == "JXN001"]
    assert "fn=<jaxdiag's elementwise stand-in> (assumed)" in note["message"], note


@pytest.mark.slow
def test_a_good_factorys_callback_is_checked_and_clean(monkeypatch) -> None:
    monkeypatch.chdir(DATA)
    code, data = check("wrapped_good")
    assert data["summary"]["checked"] == 1 and not findings(data, "error", "warning") and code == 0, data


@pytest.mark.slow
def test_a_factorys_wrong_jvp_is_caught_on_the_stand_in_as_a_warning(monkeypatch) -> None:
    monkeypatch.chdir(DATA)
    code, data = check("smoothing")
    assert data["summary"]["checked"] == 1, data["summary"]
    wrong = findings(data, "error", "warning")
    assert wrong and all(f["code"].startswith("JXG") and f["severity"] == "warning" for f in wrong), wrong
    assert all("fn=<jaxdiag's elementwise stand-in> (assumed)" in f["message"] for f in wrong), wrong


@pytest.mark.slow
def test_a_custom_vjp_taking_functions_is_checked_where_a_custom_vjp_caller_passes_its_closure(monkeypatch) -> None:
    """`damped` is a custom_vjp: before, it was no carrier ("it is a custom_vjp, checked as such") and
    `iterate_backprop` (a function in nondiff_argnums) was JXN012."""
    monkeypatch.chdir(DATA)
    code, data = check("loops")
    assert data["summary"]["checked"] == 2 and code == 0, data["summary"]
    (note,) = [f for f in findings(data, "info") if f["code"] == "JXN016"]
    assert "where inputs_callables.loops:damped calls it" in note["message"], note


@pytest.mark.slow
def test_a_custom_vjp_reached_through_a_public_function_taking_the_function(monkeypatch) -> None:
    monkeypatch.chdir(DATA)
    code, data = check("averages")
    assert data["summary"]["checked"] == 1, data["summary"]
    wrong = findings(data, "error", "warning")
    assert wrong and all(f["code"].startswith("JXG") and f["severity"] == "warning" for f in wrong), wrong
    (note,) = [f for f in findings(data, "info") if f["code"] == "JXN016"]
    assert "fun=<jaxdiag's elementwise stand-in> (assumed)" in note["message"], note


@pytest.mark.slow
def test_a_rule_behind_a_keyword_only_int_and_a_function_is_reached_by_tracing(monkeypatch) -> None:
    """`apply_rows(f, pars, x, *, chunk_size)`: before, "it requires keyword-only argument(s) chunk_size, which
    positional --arg cannot pass" (JXN012)."""
    monkeypatch.chdir(DATA)
    code, data = check("rows")
    assert data["summary"]["checked"] == 1 and not data["summary"]["not_verified"], data["summary"]
    (note,) = [f for f in findings(data, "info") if f["code"] == "JXN001"]
    assert "chunk_size=" in note["message"] and "(assumed)" in note["message"], note
    assert any(f["code"] == "JXG014" for f in findings(data, "warning")), data


@pytest.mark.slow
def test_a_rule_using_the_given_functions_values_as_a_derivative_is_not_judged_on_the_stand_in(monkeypatch) -> None:
    """`make_max(argmax_fn)`'s JVP is the maximiser's value (Danskin): right for an argmax, half the derivative for
    jaxdiag's elementwise stand-in. Before, a JXG024 warning on a correct rule; now a note that it depends on the
    function, while a rule that has JAX differentiate the function (smoothing.py) is still judged."""
    monkeypatch.chdir(DATA)
    code, data = check("danskin")
    assert data["summary"]["checked"] == 1 and not findings(data, "error", "warning") and code == 0, data
    (note,) = [f for f in findings(data, "info") if f["code"] == "JXN003"]
    assert "never differentiates argmax_fn" in note["message"] and "JXG024" in note["message"], note


@pytest.mark.slow
def test_solvers_run_with_stand_ins_are_not_judged_on_what_the_stand_ins_compute(monkeypatch) -> None:
    """Correct implicit solves (confirmed in plain JAX with real solvers) taking the operator and the solver as
    functions. jaxdiag's stand-in "solver" inverts nothing, and returns one array where a recycling solver's
    protocol promises a pair: before, JXG030 on `linear_solve`, JXG014 on `root_solve` (naming `f`'s position as the
    stepped argument) and JXG017 on `_recycled`'s bwd, all warnings on correct code. Now notes that say why."""
    monkeypatch.chdir(DATA)
    code, data = check("solvers")
    # `newton_root`'s solver and tangent solve are module functions: its own custom_root line is the site reached
    # (before, JXN012: "traced, but it reaches none of them", beside its checked solve report)
    assert data["summary"]["checked"] == 4 and not findings(data, "error", "warning") and code == 0, data
    notes = [f["message"] for f in findings(data, "info") if f["code"] == "JXN003"]
    assert any("JXG030 not judged" in n and "matvec, solver" in n for n in notes), notes
    assert any("JXG014 not judged" in n and "step v in x0" in n for n in notes), notes
    assert any("JXG017 not judged" in n and "handed jaxdiag's stand-in" in n for n in notes), notes
