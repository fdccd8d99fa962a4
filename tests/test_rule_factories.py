"""Rules a function returns (probe package tests/data/rule_factories): a site no public function reaches, in a
function whose own `return` hands back the rule, is reached by calling that function with configuration values
(call-site literals, None for Optional, False for bool, the int ladder for ints), and what it returns is checked as a
target."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Optional

import pytest

from clirun import check_json, errors_and_warnings, missing_vmap_method_code

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def package() -> dict:
    """One `jaxdiag check rule_factories` for every CLI test here (a run per module cost a process each)."""
    import os

    here = os.getcwd()
    os.chdir(DATA)
    try:
        return check_json("rule_factories", DATA)[1]
    finally:
        os.chdir(here)


def of(package: dict, module: str) -> dict:
    """The package report's targets of one module, as a report of their own."""
    prefixes = (f"rule_factories.{module}:", f"rule_factories/{module}.py:")  # a package run names targets by path
    return {"targets": [t for t in package["targets"] if t["target"].startswith(prefixes)]}


def _sites(source: str, function: str, lines: list[int]) -> list[int]:
    from jaxdiag._jobs._rule_factories import returned_sites

    return returned_sites(ast.parse(textwrap.dedent(source)), function, lines)


def test_a_factory_is_told_by_returning_the_rule_its_site_makes() -> None:
    source = """
    def by_def(beta):
        @custom_jvp
        def f(x):
            return x
        return f

    def by_name(name):
        p = Primitive(name)
        return p

    def direct():
        return custom_vjp(g)

    def calls_it(x):
        @custom_jvp
        def f(x):
            return x
        return f(x)
    """
    assert _sites(source, "by_def", [3]) == [3]
    assert _sites(source, "by_name", [9]) == [9]
    assert _sites(source, "direct", [13]) == [13]
    assert _sites(source, "calls_it", [16]) == []  # returns what the rule computes, not the rule


def test_a_rule_attached_to_a_returned_rule_counts_as_returned() -> None:
    """An FFI-style factory returns its primitive and attaches a helper primitive to its JVP rule only: checking the
    returned one checks the helper as its nested subject, so the helper's site is reached. A helper kept nowhere a
    returned rule holds is not."""
    source = """
    def build(name):
        prim = Primitive(name)
        jvp_p = Primitive(name + "_jvp")
        impl_p = Primitive(name + "_impl")
        lower_p = Primitive(name + "_lower")
        loose_p = Primitive(name + "_loose")
        ad.primitive_jvps[prim] = partial(_jvp, prim, jvp_p)
        prim.def_impl(partial(_run, impl_p))
        register_lowering(prim, partial(_lower, lower_p))
        REGISTRY[name] = loose_p
        return prim
    """
    assert _sites(source, "build", [3, 4, 5, 6, 7]) == [3, 4, 5, 6]


def test_factory_parameters_take_call_site_literals_then_their_annotation() -> None:
    import types

    from jaxdiag._jobs._rule_factories import factory_arguments

    module = types.ModuleType("factories_probe")

    def factory(pad: Optional[int], flag: bool, n: int, beta: float, mode="a"):
        ...

    def named(name: str, kernel_name):
        ...

    def tabled(table: dict):
        ...

    given, assumed = factory_arguments(factory, module, "factory")
    assert given["pad"] is None and given["flag"] is False and given["beta"] == 1.0
    assert type(given["n"]) is int and "mode" not in given and set(assumed) == {"pad", "flag", "n", "beta"}
    # a name the factory gives what it makes (`Primitive(kernel_name)`): annotated `str`, or named like one
    assert factory_arguments(named, module, "named") == ({"name": "name", "kernel_name": "kernel_name"},
                                                         ["name", "kernel_name"])
    reason = factory_arguments(tabled, module, "tabled")
    assert isinstance(reason, str) and "`table`" in reason


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.slow
def test_a_cached_private_factorys_wrong_bwd_is_found(package: dict) -> None:
    """Before, `_lookup_fn`'s site was JXN012 ("no public function traced on inferred inputs reaches it")."""
    data = of(package, "embedding")
    (target,) = [t for t in data["targets"] if t["kind"] == "custom_vjp"]
    assert "_lookup_fn(" in target["target"] and "padding_idx=None (assumed)" in target["target"], target
    assert target["inputs"][1].startswith("i32"), target["inputs"]  # `table[ids]`: ids are indices
    (wrong,) = errors_and_warnings(target)
    assert wrong["code"] == "JXG024" and wrong["severity"] == "warning", wrong  # inferred inputs: a warning
    assert wrong["location"]["line"] == _line_of(DATA / "rule_factories" / "embedding.py", "def lookup_bwd")


@pytest.mark.slow
def test_the_fixed_factory_and_a_public_one_with_defaults_are_checked_and_clean(package: dict) -> None:
    data = of(package, "embedding_good")
    checked = [t for t in data["targets"] if t["kind"] in ("custom_vjp", "custom_jvp")]
    assert len(checked) == 2 and all(any(c["status"] in ("passed", "failed") for c in t["checks"]) for t in checked)
    assert len(checked) == len(data["targets"]) and not [f for t in checked for f in errors_and_warnings(t)], data


@pytest.mark.slow
def test_a_primitive_factory_is_called_with_its_call_site_literals(package: dict) -> None:
    data = of(package, "kernels")
    (made,) = [t for t in data["targets"] if t["kind"] == "primitive"]
    assert "make_reduction(name='total_sum', axis=0)" in made["target"], made["target"]
    assert any(f["code"].startswith("JXB") for f in errors_and_warnings(made)), made
    (refused,) = [t for t in data["targets"] if t["target"].endswith(":make_scale")]
    (note,) = refused["findings"]
    # its names are assumed (`name: str`, `factor: str`), and the factory raises on them: not checked, and why
    assert note["code"] == "JXN012" and "factor='factor' (assumed)), it raised ValueError" in note["message"], note


@pytest.mark.slow
def test_rules_made_in_methods_are_reached_on_an_instance_built_like_a_factory_call(package: dict) -> None:
    """Before, every site of methods.py was JXN012: no module-level function calls the classes."""
    data = of(package, "methods")
    path = DATA / "rule_factories" / "methods.py"
    by_kind = {(t["kind"], t["target"].split(" ")[0].rpartition(":")[2]): t for t in data["targets"]}
    soft = by_kind[("custom_jvp", "Smoother.smooth")]
    assert "Smoother(width=1.0 (assumed), n_terms=4 (assumed))" in soft["target"], soft["target"]
    assert [(f["code"], f["location"]["line"]) for f in errors_and_warnings(soft)] == [
        ("JXG024", _line_of(path, "def soft_jvp"))]
    clip = by_kind[("custom_vjp", "clip")]  # returned by the method: checked as a target (a clipping bwd)
    assert "Clipper().clip_gradient()" in clip["target"] and {
        f["code"] for f in errors_and_warnings(clip)} <= {"JXG014"}, clip
    (note,) = by_kind[("function", "Solver.solve")]["findings"]
    assert note["code"] == "JXN012" and "`linear_operator` has no default" in note["message"], note
    method = by_kind[("function", "Smoother.smooth")]
    assert all(" in self" not in f["message"] for f in method["findings"]), method  # `self` is no operand


@pytest.mark.slow
def test_a_function_only_mentioned_at_import_keeps_its_callback_site(package: dict) -> None:
    """`_SOLVERS = {"cpu": host_solve}`, an annotation and a re-export call nothing: before, they hid the site
    (no target, no note)."""
    data = of(package, "mentions")
    (target,) = [t for t in data["targets"] if t["kind"] != "module"]
    assert [f["code"] for f in errors_and_warnings(target)] == [missing_vmap_method_code()], target


@pytest.mark.slow
def test_a_decorator_factory_applied_at_import_whose_wrapper_makes_the_rule_is_traced(package: dict) -> None:
    """`@implicit(scale=1.5)` runs at import, but its product makes the custom_vjp only when called: before, the
    site was skipped as "made at import" (no target, no note)."""
    data = of(package, "decorated")
    (target,) = [t for t in data["targets"] if t["kind"] == "custom_vjp"]
    assert target["target"].endswith("decorated:double_angle)"), target
    assert [(f["code"], f["location"]["line"]) for f in errors_and_warnings(target)] == [
        ("JXG024", _line_of(DATA / "rule_factories" / "decorated.py", "def solve_bwd"))]


@pytest.mark.slow
def test_callback_sites_called_through_module_level_aliases_are_sites(package: dict) -> None:
    """`host_call = functools.partial(jax.pure_callback, ...)`, `raw_callback = jax.pure_callback`: before, their
    calls were no sites (no target, no note)."""
    data = of(package, "aliased")
    targets = {t["target"].split(" ")[0].rpartition(":")[2]: t for t in data["targets"] if t["kind"] != "module"}
    assert set(targets) == {"host_double", "host_half"}, list(targets)
    assert not errors_and_warnings(targets["host_double"])
    assert [f["code"] for f in errors_and_warnings(targets["host_half"])] == [missing_vmap_method_code()]


def test_a_module_level_decorated_rule_is_no_site_inside_its_own_function(monkeypatch) -> None:
    """`@functools.partial(jax.custom_jvp, ...) def scaled_tanh`: the decorator runs at import (discovery finds
    the rule), never inside the function it decorates; read as a site there, it sent tracing through every caller
    of the function."""
    import importlib

    from jaxdiag._jobs._reach_plan import sites_in

    monkeypatch.syspath_prepend(str(DATA))
    module = importlib.import_module("rule_factories.toplevel")
    assert [s.function for s in sites_in(module)] == []


@pytest.mark.slow
def test_a_helper_primitive_attached_to_a_returned_ones_jvp_is_checked_not_unreached(package: dict) -> None:
    """`_build` (called at import) returns `scale_p` and attaches `tangent_p` to its JVP rule only. Before, its site
    was JXN012 ("not checked") although `scale_p > scale_tangent` was checked; and `scale_p`'s impl
    `partial(_scaled, factor)` was read as taking two operands (JXN004)."""
    data = of(package, "attached")
    labels = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert set(labels) == {"scale_p", "scale_p > scale_tangent"}, labels
    assert all(t["verified"] and t["inputs"] == ["f32[3]"] for t in labels.values()), labels
    unreached = [t for t in package["targets"] if "attached" in t["target"]
                 and any(f["code"] == "JXN012" for f in t["findings"])]
    assert not unreached, unreached


@pytest.mark.slow
def test_a_factory_returning_the_function_that_calls_its_rule_is_checked_through_it(package: dict) -> None:
    """`_power_sum(depth, *, custom_vjp: bool)` makes its custom_vjp only under the flag and returns `estimate`,
    which calls it: the flag takes the value reaching the site (True), and the returned function is checked with
    the rule as its nested subject. Before, the sites were JXN012 (`estimate` is never called in the package)."""
    targets = {t["target"]: t for t in of(package, "closures")["targets"]}
    good = [t for name, t in targets.items() if "_power_sum(" in name]
    wrong = [t for name, t in targets.items() if "_power_sum_wrong(" in name]
    assert len(good) == 2 and len(wrong) == 2, list(targets)  # the function, and its rule nested in it
    assert all("custom_vjp=True (assumed)" in t["target"] and t["verified"] for t in good + wrong)
    assert not [f for t in good for f in errors_and_warnings(t)]
    assert "JXG024" in {f["code"] for t in wrong for f in errors_and_warnings(t)}


@pytest.mark.slow
def test_a_returned_function_calling_a_parameter_runs_with_a_stand_in_and_says_nothing_it_decides(package) -> None:
    """`krylov_like(depth)` returns `run(matvec, v)`, whose code calls `matvec`: it runs with jaxdiag's stand-in
    there, so what it computes is the stand-in's doing and any verdict on its rules is a note (JXN003) naming it;
    the checks still ran."""
    targets = {t["target"]: t for t in of(package, "closures")["targets"]}
    runs = {name: t for name, t in targets.items() if "krylov_like" in name}
    assert len(runs) == 4 and all("matvec=<jaxdiag's elementwise stand-in> (assumed)" in n for n in runs), list(runs)
    assert all(t["verified"] and not errors_and_warnings(t) for t in runs.values())
    notes = [f for name, t in runs.items() if "krylov_like_wrong" in name for f in t["findings"]
             if f["code"] == "JXN003"]
    assert any("JXG024 not judged" in f["message"] and "stand-in as matvec" in f["message"] for f in notes), notes


def test_the_flags_guarding_a_site_and_a_returned_closure_are_read_from_the_source() -> None:
    from jaxdiag._jobs._rule_factories import guarding_flags, returns_closure

    source = textwrap.dedent("""
    def factory(n, *, custom_vjp, plain, other):
        if custom_vjp:
            f = custom_vjp_of(g)
        if not plain:
            h = custom_jvp_of(g)
        else:
            pass
        if other:
            pass

        def run(x):
            return f(x)

        return run

    def direct(n):
        return lambda x: x

    def value(n):
        return n
    """)
    tree = ast.parse(source)
    assert guarding_flags(tree, "factory", [4, 6]) == {"custom_vjp": True, "plain": False}
    assert [returns_closure(tree, name) for name in ("factory", "direct", "value")] == [True, True, False]


def test_a_carrier_made_of_a_partial_is_batched_under_its_own_name() -> None:
    """A returned function run on a stand-in is a `functools.partial`, which has no `__name__`: copying None there
    raised TypeError, an internal error of the whole target."""
    import functools

    import numpy as np

    from jaxdiag._jobs._record_carrier import _under_vmap
    from jaxdiag._loading._inputs import ArgSpec

    def scaled(factor, x):
        return factor * x

    batched = _under_vmap(functools.partial(scaled, 2.0), [ArgSpec(np.dtype(np.float32), (3,))])
    assert batched.__name__ == "batched"
    np.testing.assert_allclose(batched(np.ones((4, 3), np.float32)), 2.0 * np.ones((4, 3)))


@pytest.mark.slow
def test_a_returned_function_no_check_applies_to_is_no_target_and_its_site_says_why(package: dict) -> None:
    """`ticker(every)` returns `loop(total: int)`: no array argument, so every check is skipped. It is not reported
    as a target (nothing was verified); the callback site keeps its JXN012 note, which says why."""
    targets = of(package, "closures")["targets"]
    assert not [t for t in targets if "ticker(" in t["target"]], [t["target"] for t in targets]
    (site,) = [t for t in targets if t["target"].endswith(":ticker")]
    (note,) = [f for f in site["findings"] if f["code"] == "JXN012"]
    assert "ticker(every=4 (assumed)) returns: no check applies to it" in note["message"], note["message"]
    assert not site["verified"]


@pytest.mark.slow  # two solver factories called and their rules checked (about 4 s)
def test_a_factory_configured_by_keywords_alone_is_called_on_its_defaults_and_its_solver_run():
    """`scaled_solver(*, scale=2.0)` returns the solver it defines; no positional argument to infer. Before, the rule
    its inner function is wrapped in (by a module helper) was unreached (JXN012: "a call on its defaults is no
    inferred input"). Now the factory is called on its defaults and the solver it returns is run with a stand-in
    operator (`matvec`, JAX's own name for one): the right rule is clean, the forgetful one is found."""
    from clirun import check_json

    acc = DATA / "acc"
    _, data = check_json(f"{acc / 'configured_solver.py'}", acc)
    targets = {t["target"].rpartition("inside ")[2].rstrip(")"): t for t in data["targets"]}
    assert data["summary"]["checked"] == 2 and set(targets) == {"configured_solver:scaled_solver",
                                                                 "configured_solver:scaled_solver_wrong"}, targets
    assert not [f for f in targets["configured_solver:scaled_solver"]["findings"] if f["severity"] != "info"]
    assert {f["code"] for f in targets["configured_solver:scaled_solver_wrong"]["findings"]} & {"JXG014", "JXG024"}
