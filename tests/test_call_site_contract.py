"""A rule checked where its package calls it gets the values that call passes, which on inferred inputs for the
caller may be outside the rule's own contract (tests/data/acc/schur_sqrtm.py): a non-symmetric matrix for an
operand the rule's code hands to `eigh` (through a helper of its module or not), only empty arrays, or values outside
the interval its docstring defines it on (tests/data/acc/unit_basis.py). Such a call site is passed over and the rule
checked on its own draws."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from clirun import check_json

from jaxdiag._checks._base import Subject

ACC = Path(__file__).parent / "data" / "acc"


def _module(name: str = "schur_sqrtm"):
    spec = importlib.util.spec_from_file_location(name, ACC / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # a whole module checked (about 5 s); the readings below stay fast
def test_a_rule_given_a_nonsymmetric_or_empty_matrix_by_its_caller_is_checked_on_its_own_spd_draws():
    _, data = check_json(f"{ACC / 'schur_sqrtm.py'}", ACC)
    targets = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert targets["sqrtm"]["inputs"] == ["f32[3,3]@spd"]  # was f32[4,4] from `refine`, and a JXG014/JXG024
    assert not [f for f in targets["sqrtm"]["findings"] if f["severity"] != "info"]
    assert targets["solve"]["inputs"][0] == "f32[3,3]@spd"  # was f32[0,0] f32[0,4]: a check comparing nothing
    assert "JXG024" in {f["code"] for f in targets["sqrtm_doubled"]["findings"]}


def test_a_helper_that_factorises_an_operand_makes_it_symmetric_and_a_call_passing_otherwise_is_outside():
    from jaxdiag._jobs._record_carrier import _asymmetric
    from jaxdiag._run._operand_kinds import documented_domains, factorised_positions

    module = _module()
    root = Subject("schur_sqrtm:sqrtm", "custom_jvp", module.sqrtm, specs=[])
    assert factorised_positions(root) == {0}  # `_root(m)` calls eigh(m)
    assert factorised_positions(Subject("schur_sqrtm:solve", "custom_jvp", module.solve, specs=[])) == {0}
    a = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
    domains = documented_domains(root)
    assert "non-symmetric f32[4,4] matrix for operand 0" in _asymmetric(root, [a], domains)
    assert _asymmetric(root, [a + a.T], domains) == ""


@pytest.mark.slow  # a whole module checked (about 4 s); the reading below stays fast
def test_an_operand_every_bind_site_stop_gradients_is_never_differentiated_by_the_checks():
    _, data = check_json(f"{ACC / 'surrogate_spike.py'}", ACC)
    codes = {t["target"].rpartition(":")[2]: {f["code"] for f in t["findings"]} for t in data["targets"]}
    assert "JXB018" not in codes["spike_p"]  # was: vjp of vmap fails, differentiating the stopped slope
    assert "JXB018" in codes["leaky_spike_p"]  # its slope is differentiated at its bind site


def test_the_contract_tangents_of_a_primitive_are_read_from_every_bind_site_but_its_own_rules():
    import ast
    import sys

    from jaxdiag._run._contract_tangents import _through_stopper, stopped_operands
    from jaxdiag._harness.source import called_name

    module = _module("surrogate_spike")
    sys.modules["surrogate_spike"] = module  # as an imported package is: its bind sites are read from it
    try:
        assert stopped_operands(Subject("surrogate_spike:spike_p", "primitive", module.spike_p, specs=[])) == {1}
        assert stopped_operands(Subject("surrogate_spike:leaky_spike_p", "primitive", module.leaky_spike_p,
                                        specs=[])) == frozenset()
    finally:
        del sys.modules["surrogate_spike"]

    def through(text: str) -> bool:
        return _through_stopper(ast.parse(text, mode="eval").body, called_name)

    assert through("self.slope(jax.lax.stop_gradient(x))") and through("2.0 * lax.stop_gradient(x)")
    assert not through("self.slope(lax.stop_gradient(x)) + x") and not through("self.slope(x)")


def test_a_name_bound_otherwise_too_or_a_parameter_is_not_stopped():
    """The stopped value must be all a name can hold at the bind: a name also bound by unpacking, a loop or `+=`,
    or a parameter of the caller reassigned on one path only, may carry a differentiated value."""
    import ast

    from jaxdiag._harness.source import called_name
    from jaxdiag._run._contract_tangents import _stopped

    def stopped(source: str) -> bool:
        caller = ast.parse(source).body[0]
        call = next(n for n in ast.walk(caller) if isinstance(n, ast.Call) and called_name(n.func) == "bind")
        return _stopped(call.args[1], caller, called_name)

    assert stopped("def f(x):\n    dx = slope(stop_gradient(x))\n    return p.bind(x, dx)")
    assert not stopped("def f(x, pair):\n    dx = slope(stop_gradient(x))\n    x, dx = pair\n    return p.bind(x, dx)")
    assert not stopped("def f(x, dx, c):\n    if c:\n        dx = stop_gradient(dx)\n    return p.bind(x, dx)")
    assert not stopped("def f(x):\n    dx = stop_gradient(x)\n    dx += x\n    return p.bind(x, dx)")


@pytest.mark.slow  # a whole module checked (about 5 s); the readings below stay fast
def test_a_basis_its_docstring_defines_on_the_unit_interval_is_checked_there_not_where_a_caller_strays():
    _, data = check_json(f"{ACC / 'unit_basis.py'}", ACC)
    targets = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert targets["bernstein"]["inputs"][0] == "f32[3]@unit"  # was f32[3] from `basis`, and a JXG024
    assert not [f for f in targets["bernstein"]["findings"] if f["severity"] != "info"]
    assert "JXG024" in {f["code"] for f in targets["bernstein_steep"]["findings"]}  # wrong inside [0, 1] too


def test_the_unit_interval_a_docstring_states_is_read_and_values_outside_it_are_outside_the_contract():
    from jaxdiag._jobs._record_carrier import _outside_documented
    from jaxdiag._run._operand_kinds import _domains_in, documented_domains

    module = _module("unit_basis")
    basis = Subject("unit_basis:bernstein", "custom_jvp", module.bernstein, specs=[])
    assert documented_domains(basis) == {0: "unit"}  # "defined for x in the interval [0, 1]": x bare
    assert documented_domains(Subject("unit_basis:bernstein_steep", "custom_jvp", module.bernstein_steep,
                                      specs=[])) == {0: "unit"}  # "for 0 <= x <= 1"
    domains = documented_domains(basis)
    assert "outside [0, 1] for operand 0 (x: -0.5)" in _outside_documented(basis, [np.array([0.5, -0.5]), 3], domains)
    assert _outside_documented(basis, [np.array([0.0, 0.5, 1.0]), 3], domains) == ""
    assert _domains_in("Args:\n  p: a probability in [0, 1].\n  axes: the axes, e.g. (0, 1).", ["p", "axes"]) == {
        0: "unit"}  # a bare pair is a shape or axes as often: only after words that make it an interval
    assert _domains_in("Valid for xs in [0, 1].", ["x"]) == {} and _domains_in("x: not in [0, 1]", ["x"]) == {}
    assert _domains_in("w: weights between 0 and 1.", ["w"]) == {0: "unit"}


def test_a_precondition_the_package_states_with_its_own_raise_is_told_from_any_other_error():
    from jaxdiag._checks._shared import stated_precondition

    module = _module("stated_precondition")

    def raised(fn, *args):
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - the test inspects what each raises
            return exc
        raise AssertionError("did not raise")

    where = stated_precondition(raised(module.amplitude_damping, 0.8, 0.7))
    path, _, line = where.rpartition(":")
    assert path.endswith("stated_precondition.py")
    assert "raise ValueError" in (ACC / "stated_precondition.py").read_text().splitlines()[int(line) - 1]
    assert stated_precondition(raised(module.checked_by_assert, 2.0)) == ""  # an assert
    assert stated_precondition(raised(module.numpy_refuses, np.ones(3))) == ""  # NumPy's own error
    assert stated_precondition(raised(module.reraised, np.ones(3))) == ""  # a caught error raised again
