"""Discovery beyond module attributes, inputs inside the library's contract, and findings graded by the provenance
of their inputs. Probe packages live in tests/data/disc_*/; no real library is imported."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import jaxdiag
from jaxdiag import _rules as rules
from jaxdiag._core._report import Report
from clirun import missing_vmap_method_code

DATA = Path(__file__).resolve().parent / "data"


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


@functools.lru_cache(maxsize=None)
def _checked(name: str) -> Report:
    return jaxdiag.check_module(str(DATA / name), app_dir=str(DATA))


def _targets(report: Report) -> dict[str, object]:
    return {t.target.rpartition(":")[2]: t for t in report.targets if t.kind not in ("module", "config")}


@pytest.mark.slow
def test_primitives_held_by_kernel_objects_are_discovered_and_checked() -> None:
    targets = _targets(_checked("disc_kernels"))
    assert {"power_p.primitive", "scaled_p.primitive"} <= set(targets)
    for name in ("power_p.primitive", "scaled_p.primitive"):
        assert any(c.status in ("passed", "failed") for c in targets[name].checks), targets[name].checks


@pytest.mark.slow
def test_required_bind_params_come_from_the_librarys_own_call_sites() -> None:
    targets = _targets(_checked("disc_kernels"))
    for target in targets.values():
        assert not any(f.code in (rules.TARGET_NOT_CHECKABLE.code, rules.INPUTS_NOT_INFERRED.code)
                       for f in target.findings), target.findings


def test_bind_site_params_read_literal_and_default_values() -> None:
    from jaxdiag._checks._base import Subject
    from jaxdiag._run._signature import bind_site_params

    import importlib
    import sys

    sys.path.insert(0, str(DATA))
    try:
        ops = importlib.import_module("disc_kernels.ops")
    finally:
        sys.path.remove(str(DATA))
    for holder, expected in ((ops.power_p, 3), (ops.scaled_p, 2)):  # a parameter's default, a literal
        subject = Subject(label="x", kind="primitive", obj=holder.primitive, specs=[], module=ops.__name__)
        assert bind_site_params(subject) == {"order": expected}


@pytest.mark.slow
def test_a_finding_in_a_shared_method_of_the_kernel_class_points_at_the_objects_definition() -> None:
    target = _targets(_checked("disc_kernels"))["scaled_p.primitive"]
    wrong = [f for f in target.findings if f.code == rules.JVP_MISMATCH.code]
    assert wrong, target.findings
    ops = DATA / "disc_kernels" / "ops.py"
    assert wrong[0].location is not None and Path(wrong[0].location.path).name == "ops.py"
    assert wrong[0].location.line == _line_of(ops, "scaled_p = Kernel(")


@pytest.mark.slow
def test_a_finding_seen_only_on_inferred_inputs_is_a_warning_that_says_so() -> None:
    target = _targets(_checked("disc_kernels"))["scaled_p.primitive"]
    wrong = next(f for f in target.findings if f.code == rules.JVP_MISMATCH.code)
    assert rules.JVP_MISMATCH.severity == "error"
    assert wrong.severity == "warning"
    assert wrong.inputs == {"provenance": "inferred", "specs": ["f32[3]"]}
    assert wrong.message.startswith("on f32[3] inferred;")
    assert wrong.to_dict()["inputs"]["provenance"] == "inferred"


def test_declared_inputs_keep_the_error_and_record_their_provenance() -> None:
    from jaxdiag._api import check_grad

    import importlib
    import sys

    sys.path.insert(0, str(DATA))
    try:
        ops = importlib.import_module("disc_kernels.ops")
    finally:
        sys.path.remove(str(DATA))
    report = check_grad(ops.scaled_p.primitive, "f32[3]", params={"order": 2})
    wrong = [f for t in report.targets for f in t.findings if f.code == rules.JVP_MISMATCH.code]
    assert wrong and wrong[0].severity == "error"
    assert wrong[0].inputs == {"provenance": "declared", "specs": ["f32[3]"]}
    assert "inferred" not in wrong[0].message


def test_a_fact_read_off_the_object_keeps_its_severity_on_inferred_inputs() -> None:
    from jaxdiag._core import _provenance
    from jaxdiag._core._report import TargetReport

    finding = rules.MISSING_IMPL.finding(var="p", prim_name="p", also="", fix="", location=None)
    _provenance.stamp([finding], "inferred", ["f32[3]"])
    _provenance.grade(Report([TargetReport("t", "primitive", findings=[finding])]))
    assert finding.severity == "error" and not finding.message.startswith("on ")
    assert finding.to_dict()["inputs"] == {"provenance": "inferred", "specs": ["f32[3]"]}


def test_a_declared_index_domain_is_never_probed_beyond() -> None:
    """int8 start declared in 0..4: the fill-mode gather agrees with the impl's clamping on every declared value."""
    target = f"{DATA / 'disc_ranges' / 'int8_window.py'}:window_p"
    report = jaxdiag.check_batching(target, "f32[8]", "i8[]@0..4")
    assert not [f for t in report.targets for f in t.findings if f.severity in ("error", "warning")]
    assert not [c for t in report.targets for c in t.checks if c.status == "error"]


@pytest.mark.slow
def test_a_difference_only_out_of_range_indices_show_is_a_warning_naming_them() -> None:
    from jaxdiag._rules._catalog import SAMPLES_DIR

    report = jaxdiag.check_batching(f"{SAMPLES_DIR / 'jxb016_bad.py'}:pick_p", "f32[8]", "i32[]")
    found = [f for t in report.targets for f in t.findings if f.severity in ("error", "warning")]
    assert [f.code for f in found] == [rules.OUT_OF_RANGE_INDEX_ONLY.code]
    assert found[0].severity == "warning" and "argument 1 = 8, 9" in found[0].message


@pytest.mark.slow
def test_rules_made_in_factories_and_closures_are_reached_through_public_functions() -> None:
    ops = DATA / "disc_factories" / "ops.py"
    made = {t.target.split(" ")[0].rpartition(":")[2]: t for t in _checked("disc_factories").targets
            if "made in a function" in t.target}
    assert {"scaled_exp", "square"} <= set(made), list(made)
    for target in made.values():
        assert any(c.status in ("passed", "failed") for c in target.checks), target.checks
    wrong = [f for f in made["scaled_exp"].findings if f.severity == "warning"]
    assert wrong and wrong[0].location is not None
    assert wrong[0].location.line == _line_of(ops, "def _jvp(primals, tangents):")
    assert wrong[0].inputs is not None and wrong[0].inputs["provenance"] == "inferred"
    assert not [f for f in made["square"].findings if f.severity in ("error", "warning")]


@pytest.mark.slow
def test_rules_behind_size_branches_and_64_bit_refusals_are_reached() -> None:
    """Four cached factories each make a rule named `f`: reaching one no longer marks the others reached by name;
    a function returning early on an odd size is traced again on other sizes; one refusing every odd or non-square
    input runs on the ladder's even square; one refusing to run without x64 is traced under x64 (then restored)."""
    import jax

    made = {t.target.rpartition("inside disc_shapes.ops:")[2].rstrip(")"): t
            for t in _checked("disc_shapes").targets if "made in a function" in t.target}
    assert set(made) == {"squared", "paired", "even_only", "wide_only"}, list(made)
    for target in made.values():
        assert not target.unverified and any(c.status == "passed" for c in target.checks), target.checks
        assert not [f for f in target.findings if f.severity in ("error", "warning")]
    assert not jax.config.jax_enable_x64


@pytest.mark.slow
def test_a_factory_called_only_by_the_main_block_is_reached() -> None:
    """`if __name__ == "__main__": make_softclip(3.0)(...)` never runs on import: the factory's rule is no module
    attribute. It was taken for one made at import, so nothing reached it and nothing said so."""
    targets = _checked("disc_shapes").targets
    made = [t for t in targets if "softclip (made by disc_shapes.demo:make_softclip" in t.target]
    assert len(made) == 1 and not made[0].unverified, [t.target for t in targets]
    assert any(c.status == "passed" for c in made[0].checks)


@pytest.mark.slow
def test_a_rule_closing_over_an_array_its_function_computed_is_checked_as_the_eager_run_makes_it() -> None:
    """The custom_vjp met while tracing `shrink` closes over that trace's tracer `d`: every check calling it raised
    UnexpectedTracerError and skipped (no check ran). The same rule made by the eager run is checked instead."""
    ops = DATA / "closure_capture" / "ops.py"
    made = {t.target.split(" ")[0].rpartition(":")[2]: t for t in _checked("closure_capture").targets}
    for name in ("apply", "apply_wrong"):
        assert not made[name].unverified, made[name].checks
        assert [c.status for c in made[name].checks if c.name == "vjp-fwd"] == ["passed"]
    assert not [f for f in made["apply"].findings if f.severity != "info"]
    wrong = [f for f in made["apply_wrong"].findings if f.severity != "info"]
    assert wrong and wrong[0].location is not None  # at the def line of the bwd at fault
    assert wrong[0].location.line == _line_of(ops, "        return (g,)") - 1


@pytest.mark.slow
def test_a_rule_closing_over_an_object_of_traced_arrays_is_checked_as_the_eager_run_makes_it() -> None:
    """The same, where the closure holds the tracer inside an object (`held = Scaled(factor)`, a dataclass of
    arrays) and the rule takes a list, so it is checked through a flat view of its arguments: the view is made again
    of the eager run's rule. Before, every check skipped with UnexpectedTracerError."""
    made = {t.target.split(" ")[0].rpartition(":")[2]: t for t in _checked("closure_object").targets}
    assert not made["apply"].unverified, made["apply"].checks
    assert [c.status for c in made["apply"].checks if c.name == "vjp-fwd"] == ["passed"]
    assert not [f for f in made["apply"].findings if f.severity != "info"]


@pytest.mark.slow
def test_callback_call_sites_inside_functions_get_the_callback_checks() -> None:
    targets = _targets(_checked("disc_factories"))
    sine = targets["host_sine (calls a callback)"]
    cosine = targets["host_cosine (calls a callback)"]
    assert [c.status for c in sine.checks if c.name == "ffi-vmap-method"] == ["passed"]
    assert missing_vmap_method_code() in {f.code for f in cosine.findings}


@pytest.mark.slow
def test_a_factory_no_public_function_reaches_is_reported_with_the_reason() -> None:
    targets = _targets(_checked("disc_factories"))
    note = targets["_never_called_factory"].findings
    assert [f.code for f in note] == [rules.TARGET_NOT_CHECKABLE.code]
    assert "no public function" in note[0].message
    # a rule factory jaxdiag cannot call (`_rule_factories`): the name it assumes is no jax.numpy function
    assert "name='name' (assumed)), it raised AttributeError" in note[0].message


def test_an_unreached_rule_names_what_its_own_module_tried_and_only_counts_the_rest() -> None:
    """The reason of an unreached rule lists its module's traced functions with why each missed it; the other
    modules' are counted, not listed (listed for every rule, they read as tried for it)."""
    from jaxdiag._jobs._traced_reach import Tried, _attempts_for

    tried = [Tried("pkg.a:f", ""), Tried("pkg.a:g", "could not infer inputs"), Tried("pkg.b:h", "")]
    text = _attempts_for("pkg.a", tried)
    assert "pkg.a:f: traced; reaches other rules" in text and "pkg.a:g: could not infer inputs" in text, text
    assert "pkg.b:h" not in text and "1 public function(s) of other modules" in text, text
    assert _attempts_for("pkg.c", tried).startswith("no public function of pkg.c was traced"), text


def test_the_plugin_loads_without_an_assert_rewrite_warning_when_jaxdiag_was_imported_first() -> None:
    """Under `jaxdiag record -- pytest` the recorder imports jaxdiag when the interpreter starts; pytest then marks
    the plugin's package for assert rewriting and warns that it cannot, unless the package opts out the way pytest
    reads it (the module docstring)."""
    from _pytest.assertion.rewrite import AssertionRewriter

    assert AssertionRewriter.is_rewrite_disabled(jaxdiag.__doc__ or "")


def test_checking_one_module_reports_only_its_rules_even_with_a_whole_suite_recording(tmp_path: Path) -> None:
    import json
    import shutil

    shutil.copytree(DATA / "disc_recscope", tmp_path / "disc_recscope")
    other = tmp_path / "disc_recscope" / "other.py"
    call = {"target": "disc_recscope.other:make_bad.<locals>.bad", "kind": "custom_jvp", "name": "bad",
            "defined_at": f"{other}:{_line_of(other, 'def bad(x):')}", "reachable": False, "replayable": True,
            "args": ["f32[3]"], "params": {}, "ranges": [None], "count": 1}
    (tmp_path / ".jaxdiag").mkdir()
    (tmp_path / ".jaxdiag" / "calls.json").write_text(json.dumps({"schema": 1, "calls": [call]}))
    report = jaxdiag.check_module("disc_recscope.softplus", app_dir=str(tmp_path))
    labels = [t.target for t in report.targets if t.kind not in ("module", "config")]
    assert labels and all("other" not in label for label in labels), labels
    assert report.exit_code == 0, str(report)


def test_a_module_level_primitive_is_recorded_at_its_assignment_line() -> None:
    import importlib
    import sys

    from jaxdiag._jobs._record import definition_site

    sys.path.insert(0, str(DATA))
    try:
        ops = importlib.import_module("disc_kernels.ops")
    finally:
        sys.path.remove(str(DATA))
    where = definition_site(ops.scaled_p.primitive, "primitive")
    path, _, line = where.rpartition(":")
    assert Path(path).name == "ops.py" and int(line) == _line_of(DATA / "disc_kernels" / "ops.py", "scaled_p = Kernel(")


def test_a_bind_param_only_the_rules_require_comes_from_the_librarys_call_site() -> None:
    """The impl defaults `order`; the JVP and batching rules require it; the library's bind passes a module
    setting. Checked with that value, the rules are clean: nothing about a missing `order`."""
    report = jaxdiag.check_all(f"{DATA / 'disc_bindparams' / 'series.py'}:series_p")
    found = [f for t in report.targets for f in t.findings if f.severity in ("error", "warning")]
    assert not found, [(f.code, f.message[:120]) for f in found]
    assert any(c.status == "passed" and c.name.startswith("batching") for t in report.targets for c in t.checks)


def test_impl_parameters_the_library_binds_by_keyword_are_bind_params_never_operands(monkeypatch) -> None:
    """`Pad.outer_primitive.bind(x, width=width, mode=mode)` for `impl(x, width, mode)`: one operand and two bind
    params. `mode` is read from the wrapper's default; with no value for `width` anywhere, the primitive is left
    unchecked, saying which param it needs (before: three arrays were bound, and the batching rule's missing
    `width` was reported as a JXR009 error). `Scale`, bound the same way under the same attribute name, is checked
    with the literal its wrapper binds."""
    path = DATA / "disc_bindparams" / "halo.py"
    with pytest.raises(Exception, match=r"needs bind parameter\(s\) width \("):
        jaxdiag.check_all(f"{path}:Pad.outer_primitive")
    monkeypatch.syspath_prepend(str(DATA))
    linted = jaxdiag.check_module("disc_bindparams.halo")
    by_target = {t.target.split(":")[-1]: t for t in linted.targets}
    assert not [f for t in linted.targets for f in t.findings if f.severity in ("error", "warning")], [
        (f.code, f.message[:120]) for t in linted.targets for f in t.findings]
    assert any(f.code == "JXN012" and "--param width=" in f.message for f in by_target["Pad.outer_primitive"].findings)
    scaled = jaxdiag.check_all(f"{path}:Scale.outer_primitive")
    (target,) = scaled.targets
    assert target.inputs == ["f32[3]"] and scaled.ok, [(f.code, f.message[:120]) for f in target.findings]


TWO_RULES = '''
import jax


def make_pair(scale):
    @jax.custom_jvp
    def first(x):
        return scale * x

    first.defjvp(lambda p, t: (first(p[0]), scale * t[0]))

    @jax.custom_jvp
    def second(x):
        return x * x

    second.defjvp(lambda p, t: (second(p[0]), 2 * p[0] * t[0]))
    return first, second
'''


def test_a_checked_rule_covers_its_own_site_not_the_other_rule_its_function_makes(tmp_path: Path) -> None:
    """One factory making two rules, one of them checked (recorded or discovered): the other is still a site to
    reach, so it is checked or reported, never silently counted as checked."""
    import importlib.util

    from jaxdiag._core._report import Location
    from jaxdiag._jobs._reach_plan import plan

    path = tmp_path / "two_rules.py"
    path.write_text(TWO_RULES, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("two_rules_probe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    first, second = _line_of(path, "def first(x):"), _line_of(path, "def second(x):")
    assert [s.line for s in plan([module], []).sites] == [first, second]
    assert [s.line for s in plan([module], [Location(str(path), first, "first")]).sites] == [second]
    jvp_of_second = _line_of(path, "second.defjvp(")
    assert [s.line for s in plan([module], [Location(str(path), jvp_of_second, "second")]).sites] == [first]


def _revpairs(module: str) -> dict[str, Any]:
    return _targets(_checked(f"disc_revpairs/{module}.py"))


def _note(target: Any) -> str:
    (note,) = [f.message for f in target.findings if f.code == rules.INPUTS_FROM_CALL_SITE.code]
    return note


@pytest.mark.slow
def test_primitives_bound_only_inside_other_primitives_rules_are_checked_where_those_rules_bind_them() -> None:
    """A factory's reverse primitive (its abstract eval takes `*args`, its arity only in the op's spec) is bound only
    by the transpose rule of the JVP primitive, which only the forward primitive's JVP rule holds: both are checked
    where `jax.grad` / `jax.jvp` of the public function binds them, on the operands that call passes."""
    targets = _revpairs("ops")
    assert {"scale_p", "scale_rev_p", "scale_p > revpairs_scale_jvp", "mix_p", "mix_rev_p",
            "mix_p > revpairs_mix_jvp"} == set(targets), list(targets)
    for name, target in targets.items():
        assert not target.unverified and any(c.status == "passed" for c in target.checks), (name, target.checks)
        assert not [f for f in target.findings if f.severity in ("error", "warning")], (name, target.findings)
    rev = _note(targets["mix_rev_p"])
    assert "disc_revpairs.ops:mix calls it under differentiation" in rev, rev
    assert "the transpose rule of revpairs_mix_jvp binds it" in rev, rev
    assert rev.rpartition("): ")[2].split() == ["f32[3]"] * 8, rev  # the 8 operands the transpose rule passes
    assert "the JVP rule of revpairs_scale binds it" in _note(targets["scale_p > revpairs_scale_jvp"])


@pytest.mark.slow
def test_a_wrong_rule_of_a_primitive_bound_only_by_a_transpose_rule_is_caught_there() -> None:
    bad = DATA / "disc_revpairs" / "bad.py"
    target = _revpairs("bad")["scale_bad_rev_p"]
    found = [f for f in target.findings if f.severity in ("error", "warning")]
    assert [f.code for f in found] == [rules.BATCH_AXIS_SIZE_MISMATCH.code], found
    assert found[0].location.line == _line_of(bad, "# the wrong out dim")
    assert "transpose rule of revpairs_scale_bad_jvp" in _note(target)


def test_rule_bound_primitives_follow_partials_and_closures() -> None:
    import importlib
    import sys

    from jaxdiag import _compat
    from jaxdiag._core import _locate

    sys.path.insert(0, str(DATA))
    try:
        ops = importlib.import_module("disc_revpairs.ops")
    finally:
        sys.path.remove(str(DATA))
    ((role, jvp_prim),) = _compat.rule_bound_primitives(ops.scale_p)
    assert (role, jvp_prim.name) == ("jvp", "revpairs_scale_jvp")
    assert _compat.rule_bound_primitives(jvp_prim) == [("transpose", ops.scale_rev_p)]
    assert _compat.rule_bound_primitives(ops.scale_rev_p) == []
    where = _locate.locate_assignment(ops, ops.scale_rev_p)  # one of the names a factory's result is unpacked into
    assert where is not None and where.line == _line_of(DATA / "disc_revpairs" / "ops.py", "scale_p, scale_rev_p =")


@pytest.mark.slow
def test_a_reverse_mode_only_op_is_noted_once_at_its_forward_primitive_and_checked_in_reverse_mode() -> None:
    """The JVP primitive of a reverse-only op has no impl: `jax.jvp` of the op fails by design. The forward primitive
    says so in a note naming it (JXN019, not a broken-rule JXG017), and its reverse mode is checked against finite
    differences instead; the JVP primitive, which no user calls, is no target of its own."""
    targets = _revpairs("reverse_only")
    parent = targets["scale_rev_only_p"]
    noted = [f for f in parent.findings if f.code == rules.FORWARD_MODE_UNSUPPORTED.code]
    assert noted and "revpairs_scale_rev_only_jvp" in noted[0].message, parent.findings
    assert not [f for f in parent.findings if f.code == rules.DERIVATIVE_RULE_RAISED.code], parent.findings
    assert {c.name: c.status for c in parent.checks}["reverse-only-reference"] == "passed", parent.checks
    assert not [name for name in targets if "revpairs_scale_rev_only_jvp" in name], list(targets)
    assert not [f for f in targets["scale_rev_only_rev_p"].findings if f.severity in ("error", "warning")]


def test_a_librarys_own_class_named_like_a_rule_maker_makes_no_rule_site(tmp_path: Path, monkeypatch) -> None:
    """A quantum library's gate base class `Primitive` (no JAX class among its bases): its gates are not rules, and
    no public function is traced to reach them; a JAX Primitive made in a function still is a site."""
    import importlib

    from jaxdiag._jobs._reach_plan import sites_in

    (tmp_path / "gates_lib.py").write_text(
        "from jax.extend import core\n\n\nclass Primitive:\n    def __init__(self, name):\n        self.name = name\n"
        "\n\ndef X():\n    return Primitive('X')\n\n\ndef make_rule():\n    return core.Primitive('rule')\n"
        "\n\ndef made_later(fun=None):\n    import functools\n    return functools.partial(Primitive, 'Y')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("gates_lib")
    assert [(s.function, s.kind) for s in sites_in(module)] == [("make_rule", "primitive")]


def test_a_function_forwarding_its_parameter_to_a_rule_maker_is_another_name_of_the_maker(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    """A backend layer's `def custom_vjp(func, nondiff_argnums=()): return jax.custom_vjp(func, ...)` makes no rule
    of its own (every call of it is a site, by its name): before, it was reported unreached (JXN012), a target that
    exits non-zero. A function making a rule from its own body is still a site."""
    import importlib

    from jaxdiag._jobs._reach_plan import sites_in

    (tmp_path / "backend_lib.py").write_text(
        "import jax\n\n\ndef custom_vjp(func, /, nondiff_argnums=()):\n    \"\"\"Doc.\"\"\"\n"
        "    return jax.custom_vjp(func, nondiff_argnums=nondiff_argnums)\n\n\n"
        "def made(scale):\n    return jax.custom_jvp(lambda x: scale * x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("backend_lib")
    assert [(s.function, s.kind) for s in sites_in(module)] == [("made", "custom_jvp")]


@pytest.mark.slow
def test_a_rule_made_in_a_private_helper_no_public_function_reaches_is_reached_by_running_the_helper() -> None:
    """`_flat_pointwise(fn, *xs)` makes its custom_vmap on every call and only a private class's methods call it:
    no public function leads there. The helper itself is run, its function a stand-in returning one pointwise
    output per array (the helper unpacks a tuple); the right rule passes, the wrong one is found at its rule."""
    ops = DATA / "disc_private" / "ops.py"
    made = {t.target.rpartition("inside disc_private.ops:")[2].rstrip(")"): t
            for t in _checked("disc_private").targets if "made in a function" in t.target}
    assert set(made) == {"_flat_pointwise", "_first_example"}, list(made)
    for target in made.values():
        assert any(c.status in ("passed", "failed") for c in target.checks), target.checks
    assert not [f for f in made["_flat_pointwise"].findings if f.severity in ("error", "warning")]
    (wrong, *_) = [f for f in made["_first_example"].findings if f.severity in ("error", "warning")]
    second = [i for i, line in enumerate(ops.read_text().splitlines(), start=1) if "def pointwise_vmap(" in line][1]
    assert wrong.location is not None and wrong.location.line == second, wrong.location
    assert wrong.inputs is not None and wrong.inputs["provenance"] == "inferred"


@pytest.mark.slow
def test_a_rule_stored_on_the_class_a_registration_at_import_is_handed_is_not_reported_unreached() -> None:
    """`register(cls)` stores its primitive on the class (`cls.primitive = prim`) and the op module calls it at
    import: discovery finds `Halve.primitive` and checks it; the site inside `register` is that same rule, never a
    JXN012 'not checkable' target (which made the run exit 5)."""
    targets = _targets(_checked("disc_published"))
    assert "Halve.primitive" in targets, list(targets)
    assert any(c.status == "passed" for c in targets["Halve.primitive"].checks)
    assert not [t for t in targets if "register" in t], list(targets)


@pytest.mark.slow
def test_a_placeholder_module_standing_in_for_a_missing_dependency_is_a_note_not_an_internal_error() -> None:
    """The package puts a module in `sys.modules` whose `__getattr__` raises ImportError for every name (haiku's
    stand-in for flax): reading its `__path__` or its config table crashed the walk (exit 3). It is now reported as
    the missing optional dependency it names, and the package's own rule is checked."""
    report = jaxdiag.check_module(str(DATA / "placeholder_pkg"), app_dir=str(DATA))
    assert not [c for t in report.targets for c in t.checks if c.status == "error"]
    (note,) = [f for t in report.targets for f in t.findings if f.code == "JXN011"]
    assert "'fancylib'" in note.message and "placeholder" in note.message
    assert any(t.target.endswith("softplus") and not t.unverified for t in report.targets)
