"""Values inside the contract. Targets that refuse values their shapes allow (tests/data/value_domains/
refusals.py): a sign check in a primitive's impl, an assertion on a scalar that the first normal draw passes by
luck, NumPy's Cholesky on the host. Inference draws them from a domain they accept (JXN002 says which and why)
instead of reporting the refusal as the target's defect (JXR011) or leaving the target unchecked; a wrong rule is
still found there. And a module that turns on x64 is checked on float64 inputs, the ones its users make."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from clirun import check_json

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def targets() -> dict[str, dict]:
    return {t["target"].split(":")[-1]: t for t in check_json("value_domains.refusals", DATA)[1]["targets"]}


def _problems(target: dict) -> set[str]:
    return {f["code"] for f in target["findings"] if f["severity"] != "info"}


def _fallback(target: dict) -> str:
    return next(f["message"] for f in target["findings"] if f["code"] == "JXN002")


@pytest.mark.slow
def test_a_sign_check_in_an_impl_is_a_domain_not_a_defect(targets: dict[str, dict]) -> None:
    for name in ("root_p", "scalar_log_p"):  # the scalar's first normal draw is positive: one draw decided nothing
        assert targets[name]["verified"] and _problems(targets[name]) == set(), targets[name]["findings"]
        assert "'positive' domain" in _fallback(targets[name]) and "must be" in _fallback(targets[name])
    assert targets["root_p"]["inputs"] == ["f32[3]"]  # the first rung of the ladder, not a shape it fell back to


@pytest.mark.slow
def test_a_wrong_rule_is_still_found_on_the_values_the_impl_accepts(targets: dict[str, dict]) -> None:
    assert "JXG001" in _problems(targets["bad_root_p"]), targets["bad_root_p"]["findings"]


@pytest.mark.slow
def test_a_host_factorisation_is_checked_on_positive_definite_matrices(targets: dict[str, dict]) -> None:
    target = targets["host_cholesky_p"]
    assert target["inputs"] == ["f32[3,3]"] and "'spd' domain" in _fallback(target)
    assert "not positive definite" in _fallback(target)
    assert _problems(target) == set() and target["verified"], target["findings"]


def test_errors_raised_on_host_values_are_told_from_jax_shape_errors() -> None:
    from jaxdiag._compat import raised_by_host_code

    def caught(fn) -> BaseException:  # type: ignore[no-untyped-def]
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - the exception is the subject
            return exc
        raise AssertionError("did not raise")

    def host(x: np.ndarray) -> np.ndarray:
        if np.any(x < 0):
            raise ValueError("negative")
        return x

    assert raised_by_host_code(caught(lambda: host(np.array([-1.0, 1.0]))))  # an impl's own check
    assert raised_by_host_code(caught(lambda: np.linalg.cholesky(-np.eye(2))))
    assert not raised_by_host_code(caught(lambda: jnp.ones(3) @ jnp.ones(4)))  # a shape error, raised by JAX


@pytest.mark.slow
def test_a_module_that_turns_on_x64_is_checked_on_float64_inputs() -> None:
    """Under x64 the arrays a module's users make are float64; float32 ones showed a dtype mismatch between a
    host-computed primal (NumPy's float64) and its JVP (JXG007, JXG017) that no caller meets."""
    saved = jax.config.jax_enable_x64  # the module turns it on as the check imports it, in this process
    try:
        target = check_json("x64_module.host_scale", DATA)[1]["targets"][0]
    finally:
        jax.config.update("jax_enable_x64", saved)
    assert target["inputs"] == ["f64[3]"]
    assert _problems(target) == set() and target["verified"], target["findings"]


@pytest.mark.slow
def test_a_bwd_that_needs_concrete_values_decides_the_inputs_by_running() -> None:
    """Tracing its reverse mode fails on every shape (NumPy on a residual), so the first shape the primal runs on
    was kept, a 2x3 matrix where the bwd builds a 2x2 cotangent (JXG010, outside its contract). Running the
    reverse mode once instead moves on to the square matrix it is written for."""
    target = check_json("host_bwd.pack", DATA)[1]["targets"][0]
    assert target["inputs"] == ["f32[3,3]"]
    assert "JXG010" not in _problems(target), target["findings"]
