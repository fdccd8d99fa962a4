"""Rules checked at the inputs their own package's callers pass them: bind params built at run time, matrices where
inference would draw vectors, integer operands where it would draw floats (probe package tests/data/inputs_callsite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import Runner as CliRunner  # stdout/stderr apart on every click
from clirun import check_json, only_target

from jaxdiag._parent._cli import app

runner = CliRunner()
DATA = Path(__file__).parent / "data"


def check(module: str) -> tuple[int, dict]:
    return check_json(module, DATA)


def call_site_note(target: dict) -> dict:
    (note,) = [f for f in target["findings"] if f["code"] == "JXN016"]
    return note


@pytest.mark.slow
def test_bind_params_built_by_the_caller_at_run_time_come_from_the_call(monkeypatch):
    """`outs` (shape structs the caller builds from its operands) is in no literal: the kernel is checked where its
    public caller binds it, that caller's keyword-only `transpose` taken from the package's own call sites."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.ops")
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 1, data["summary"]
    target = only_target(data)
    assert target["target"] == "inputs_callsite.ops:matvec_p.primitive"
    note = call_site_note(target)
    assert "inputs_callsite.ops:matvec calls it" in note["message"] and "outs=" in note["message"]
    assert "transpose=" in note["message"]
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0


@pytest.mark.slow
def test_a_rule_every_caller_passes_matrices_is_not_checked_on_vectors(monkeypatch):
    """The bwd reduces along axis 1: right for the matrices its caller passes, failing on the 1-D draw inference
    starts with. The call site's rank wins, and the failure outside the contract is gone."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.rows")
    target = only_target(data)
    note = call_site_note(target)
    spec = note["message"].rpartition(": ")[2]
    assert spec.startswith("f32[") and spec.count(",") == 1, note["message"]  # a matrix
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0


@pytest.mark.slow
def test_integer_operands_stay_integers_and_get_no_float_tangent(monkeypatch):
    """The ids are integers at every call: checked as integers (no float draw, no float tangent), where a float
    draw cannot even run the rule."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.segments")
    assert data["summary"]["checked"] == 1 and not data["summary"]["not_verified"], data["summary"]
    target = only_target(data)
    note = call_site_note(target)
    assert " i32[" in note["message"], note["message"]
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0
    grad_checks = [c for c in target["checks"] if c["status"] == "passed" and "jvp" in c["name"]]
    assert grad_checks, target["checks"]


def test_a_wrong_rule_is_still_caught_at_its_call_site(monkeypatch, tmp_path):
    """Checking at the call site is not a pass by construction: the same segment rule with a JVP that forgets
    the data's tangent is reported there."""
    package = tmp_path / "callsite_wrong"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = (DATA / "inputs_callsite" / "segments.py").read_text()
    broken = source.replace("jax.ops.segment_sum(t_data, ids", "2.0 * jax.ops.segment_sum(t_data, ids")
    assert broken != source
    (package / "segments.py").write_text(broken)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check", "callsite_wrong.segments", "--app-dir", str(tmp_path), "--format",
                                 "json", "--no-cache"])
    data = json.loads(result.stdout)
    target = only_target(data)
    assert call_site_note(target)
    assert [f for f in target["findings"] if f["severity"] in ("error", "warning")], target["findings"]


def test_a_factory_other_modules_call_at_import_is_not_an_unreached_rule(monkeypatch):
    """`cube_p = make_primitive(...)` in one module, the `Primitive(...)` call in the factory's module: what the
    factory makes is a module attribute, discovered and checked, never a rule 'made at run time' left unchecked."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_factory")
    assert data["summary"]["discovered"] == data["summary"]["checked"] == 1, data["summary"]
    assert [t["target"].rpartition(":")[2] for t in data["targets"] if t["kind"] != "module"] == ["cube_p"]
    assert code == 0


@pytest.mark.slow
def test_an_operand_every_caller_stops_gradients_gets_no_perturbation(monkeypatch):
    """The temperature's gradient is stopped by the caller and the bwd gives it None: perturbing it (a float draw
    for it) checks the rule outside its contract; at its call site it is left unperturbed, and its rank is the
    caller's (a scalar)."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.stopped")
    target = only_target(data)
    assert call_site_note(target)["message"].endswith("f32[3] f32[]")
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0


@pytest.mark.slow
def test_a_parameter_annotated_float_is_inferred_as_a_scalar(monkeypatch):
    """`gamma: float` is a scalar at every call: drawn as an array, the rule's scalar cotangent for it looks wrong
    (a finding outside the contract); drawn as the scalar the signature names, the rule checks clean."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_annotated.smoothing")
    target = only_target(data)
    inferred = next(f for f in target["findings"] if f["code"] == "JXN001")
    assert inferred["message"].endswith("f32[3] f32[]"), inferred["message"]
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0


@pytest.mark.slow
def test_a_rule_built_in_a_class_method_is_reached_and_checked(monkeypatch):
    """The custom_jvp is built in `__init__` of a class the public function instantiates at run time: its site is
    read from the method, the public function traced, the rule checked and its wrong slope reported."""
    monkeypatch.chdir(DATA)
    _, data = check("inputs_methods")
    assert data["summary"]["discovered"] == data["summary"]["checked"] == 1, data["summary"]
    (target,) = data["targets"]
    assert "inside inputs_methods.layers:soft_clip" in target["target"]
    bad = [f for f in target["findings"] if f["severity"] != "info"]
    lines = (DATA / "inputs_methods" / "layers.py").read_text().splitlines()
    rule = next(i for i, text in enumerate(lines, 1) if "def clip_jvp" in text)
    assert bad and bad[0]["code"].startswith("JXG") and bad[0]["location"]["line"] == rule


def test_a_kernel_whose_backend_module_is_missing_is_checked_abstractly(monkeypatch):
    """The impl raises the library's own error around a missing compiler module: the kernel cannot run here, but
    its inputs are those its trace accepts and its rules are checked by tracing (JXN013), not left uninferred."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.backend")
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 1, data["summary"]
    target = only_target(data)
    assert [f["code"] for f in target["findings"] if f["code"] == "JXN013"] == ["JXN013"]
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0


@pytest.mark.slow
def test_an_operand_every_caller_passes_as_a_python_literal_is_held_constant(monkeypatch, tmp_path):
    """`power_no_nan(x, 3)`: the exponent is a constant at every call, so its JVP owes it no tangent. Checked at
    the call with the literal in place, the rule is clean; the same JVP with a wrong slope is still caught there."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.literal")
    target = only_target(data)
    assert call_site_note(target)["message"].endswith("f32[3] 3"), call_site_note(target)["message"]
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0

    package = tmp_path / "literal_wrong"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = (DATA / "inputs_callsite" / "literal.py").read_text()
    broken = source.replace("y * safe_x ** (y - 1) * dx", "(y - 1) * safe_x ** (y - 1) * dx")
    assert broken != source
    (package / "literal.py").write_text(broken)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check", "literal_wrong.literal", "--app-dir", str(tmp_path), "--format",
                                 "json", "--no-cache"])
    target = only_target(json.loads(result.stdout))
    assert call_site_note(target)
    assert [f for f in target["findings"] if f["code"] == "JXG024"], target["findings"]


@pytest.mark.slow
def test_a_call_that_perturbs_none_of_the_operands_does_not_leave_them_all_fixed(monkeypatch):
    """The only caller builds the rule's matrix from an integer, in a loop: JAX perturbs nothing there. Before, the
    rule was checked there with every operand fixed: each derivative check skipped, and the target was verified
    with its doubled JVP unseen. Now the caller's matrix is perturbed, as where no call was read."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.constant")
    target = only_target(data)
    assert call_site_note(target)["message"].endswith("f32[4,4]"), target
    assert "skipped" not in {c["status"] for c in target["checks"] if c["name"] == "jvp-reference"}, target
    (wrong,) = [f for f in target["findings"] if f["severity"] != "info"]
    assert wrong["code"] == "JXG024" and code == 1, wrong


@pytest.mark.slow
def test_a_primitive_bound_only_in_a_bwd_is_reached_under_grad(monkeypatch):
    """`scale_bwd_p` is bound only in a custom_vjp's bwd, with a bind param built at run time: the public function
    calling that custom_vjp reaches it under jax.grad (through `.defvjp(fwd, bwd)`), where it is checked."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.kernel_pair")
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 3, data["summary"]
    (bwd,) = [t for t in data["targets"] if t["target"].endswith(":scale_bwd_p")]
    note = call_site_note(bwd)
    assert "kernel_pair:scaled calls it under differentiation" in note["message"]
    assert "mode=<Mode>" in note["message"]  # the object's class, never its address
    assert code == 0


@pytest.mark.slow
def test_a_caller_that_asks_for_x64_is_run_under_x64(monkeypatch):
    """The rule takes float64 values and an int64 seed: inference's float32 draws cannot run it, and its public caller
    refuses to run without x64 ("requires 64-bit mode"). The caller runs under x64 for this target, as its users
    enable it, and the rule is checked where it is called: its doubled derivative is found (a warning, on the inputs
    inference drew for the caller). Before, the x64 refusal ended the call-site try: not verified (JXN004)."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.needs_x64")
    target = only_target(data)
    assert target["target"] == "inputs_callsite.needs_x64:_scaled_sin"
    assert "f64[" in call_site_note(target)["message"] and "i64[" in call_site_note(target)["message"]
    codes = {(f["code"], f["severity"]) for f in target["findings"]}
    assert ("JXG024", "warning") in codes, codes
    assert code == 1 and data["summary"]["checked"] == 1


@pytest.mark.slow
def test_a_caller_reaching_the_rule_through_a_module_level_alias_is_its_call_site(monkeypatch):
    """`series` calls `_apply = jax.jit(_series, static_argnums=0)`, never `_series` by name. Its int order cannot be
    drawn as a float, so only the caller can run it: the alias counts as a reference, and the doubled derivative is
    found where `series` calls the rule (before: no caller found, not verified, JXN004)."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.jit_alias")
    target = only_target(data)
    assert target["target"] == "inputs_callsite.jit_alias:_series"
    assert "inputs_callsite.jit_alias:series calls it" in call_site_note(target)["message"]
    assert ("JXG024", "warning") in {(f["code"], f["severity"]) for f in target["findings"]}
    assert code == 1 and data["summary"]["checked"] == 1


def _loud(target: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in target["findings"] if f["severity"] != "info"]


@pytest.mark.slow
def test_a_rule_only_a_batching_rule_calls_is_checked_under_vmap_of_its_caller(monkeypatch):
    """`_rows_scaled` takes integer counts inference cannot draw, and the public `scale` never calls it: only the
    vmap rule of `_scale` does. It is checked where `jax.vmap(scale)` calls it (before: not verified, JXN004).
    Its own rule calls it again on a batch of batches merged into one axis: that call's examples have other shapes,
    which is no batch-axis defect (before: JXV003 on correct code). The twin that merges the axes in the wrong order
    is found."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_callsite.under_vmap")
    targets = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 4, data["summary"]
    assert "jax.vmap(inputs_callsite.under_vmap:scale)" in call_site_note(targets["_rows_scaled"])["message"]
    assert _loud(targets["_rows_scaled"]) == [] and _loud(targets["_scale"]) == []
    assert ("JXV004", "warning") in _loud(targets["_rows_scaled_wrong"])
    assert code == 1
