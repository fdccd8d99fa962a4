"""Real signatures: static literals in nondiff_argnums (the JAX docs' clip_gradient), pytree arguments, PRNG keys,
partials, bound methods, zero-argument functions, jit static_argnums, and usage errors for missing inputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

import jaxdiag
from jaxdiag._parent._cli import app

runner = CliRunner()
SIGS = Path(__file__).parent / "data" / "sigs"


def cli(*args: str):
    result = runner.invoke(app, [*args, "--app-dir", str(SIGS), "--format", "json"])
    return result, (json.loads(result.stdout) if result.exit_code in (0, 1, 5) else None)


def marker_line(marker: str) -> int:
    lines = (SIGS / "sigs.py").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def codes(data) -> set[str]:
    return {f["code"] for t in data["targets"] for f in t["findings"]}


def test_clip_gradient_with_static_floats_is_clean():
    result, data = cli("grad", "sigs:clip_gradient", "--arg", "-0.1", "--arg", "0.1", "--arg", "f32[3]")
    assert result.exit_code == 0, result.output
    target = data["targets"][0]
    assert target["inputs"] == ["-0.1", "0.1", "f32[3]"]
    assert not any(f["severity"] in ("error", "warning") for f in target["findings"])
    ran = {c["name"]: c["status"] for c in target["checks"]}
    assert sum(status == "passed" for status in ran.values()) >= 2


@pytest.mark.parametrize("name", ["clip_gradient", "bounded"])
def test_clip_gradient_without_the_ignore_warns_only_about_the_clipping_unless_its_name_says_so(tmp_path, name):
    source = (SIGS / "sigs.py").read_text().replace("# jaxdiag: ignore[JXG014]", "#").replace("clip_gradient", name)
    (tmp_path / f"sigs_noignore_{name}.py").write_text(source)  # one module per case: imports are cached
    result = runner.invoke(app, ["grad", f"sigs_noignore_{name}:{name}", "--arg", "-0.1", "--arg", "0.1", "--arg",
                                 "f32[3]", "--app-dir", str(tmp_path), "--format", "json"])
    data = json.loads(result.stdout)
    # deliberate by design (a warning, never JXG015 against lo/hi); a rule named for gradient clipping states it
    assert codes(data) == (set() if name == "clip_gradient" else {"JXG014"})


def test_pytree_argument_custom_vjp_is_checked_on_its_leaves():
    result, data = cli("grad", "sigs:dense", "--arg", '{"w": f32[3,4], "b": f32[3]}', "--arg", "f32[4]")
    assert result.exit_code == 0, result.output
    assert data["targets"][0]["inputs"] == ["{'w': f32[3,4], 'b': f32[3]}", "f32[4]"]
    assert any(c["status"] == "passed" and c["name"].startswith("vjp") for c in data["targets"][0]["checks"])


@pytest.mark.slow
def test_pytree_argument_custom_vjp_with_a_wrong_leaf_cotangent_is_found():
    result, data = cli("grad", "sigs:dense_bad", "--arg", '{"w": f32[3,4], "b": f32[3]}', "--arg", "f32[4]")
    assert result.exit_code == 1
    finding = next(f for t in data["targets"] for f in t["findings"] if f["severity"] != "info")
    assert finding["code"].startswith("JXG")
    assert finding["location"]["line"] == marker_line("# jaxdiag-expect: JXG")
    assert finding["location"]["function"] == "dense_bad_bwd"


@pytest.mark.slow
def test_prng_key_argument_is_checked():
    for command in ("grad",):
        result, data = cli(command, "sigs:noisy_relu", "--arg", "key[]", "--arg", "f32[3]")
        assert result.exit_code == 0, result.output
        target = data["targets"][0]
        assert target["inputs"] == ["key[]", "f32[3]"]
        assert any(c["status"] == "passed" for c in target["checks"])


@pytest.mark.slow  # > 1 s; the fast tier keeps a cheaper test of the same feature
def test_prng_key_function_batches_over_keys():
    result, data = cli("batching", "sigs:dropout", "--arg", "key[]", "--arg", "f32[4]")
    assert result.exit_code == 0, result.output
    assert {c["name"]: c["status"] for c in data["targets"][0]["checks"]}["batching-vs-loop"] == "passed"


@pytest.mark.parametrize("target", ["sigs:scale_by_3", "sigs:bound_apply"])
def test_partials_and_bound_methods_use_the_remaining_signature(target):
    result, data = cli("batching", target)
    assert result.exit_code == 0, result.output
    assert data["targets"][0]["inputs"] == ["f32[3]"]


def test_zero_argument_function_under_grad_is_not_verified():
    result, data = cli("grad", "sigs:ones")  # nothing to differentiate: every check skipped, nothing verified
    assert result.exit_code == 5, result.output
    assert data["targets"][0]["inputs"] == []
    assert data["summary"]["not_verified"] == [{"target": "sigs:ones", "reason": "no-check-ran"}]


def test_jit_static_argnums_are_static():
    result, data = cli("batching", "sigs:power", "--arg", "f32[3]", "--arg", "2")
    assert result.exit_code == 0, result.output
    # a static named as a count without a value climbs the int ladder; one the code multiplies by is a number
    # (`_static_use`; one it compares with a string stays the user's to give: tests/test_stated_shapes.py)
    result, data = cli("batching", "sigs:power")
    assert result.exit_code == 0 and data["targets"][0]["inputs"] == ["f32[4]", "4"], result.output
    result, data = cli("batching", "sigs:rescale")
    assert result.exit_code == 0 and data["targets"][0]["inputs"] == ["f32[3]", "0.5"], result.output


def test_too_few_args_is_a_one_line_usage_error():
    result = runner.invoke(app, ["grad", "sigs:clip_gradient", "--arg", "f32[3]", "--app-dir", str(SIGS)])
    assert result.exit_code == 2
    assert re.fullmatch(r"jaxdiag: error: .*takes 3 positional argument\(s\) \(lo, hi, x\) but 1 --arg given.*\n",
                        result.stderr)


def test_missing_bind_param_is_a_usage_error_not_a_finding(monkeypatch):
    data_dir = str(Path(__file__).parent / "data")
    monkeypatch.syspath_prepend(data_dir)
    result = runner.invoke(app, ["batching", "recpkg.ops:pad_p", "--arg", "f32[4]", "--app-dir", data_dir])
    assert result.exit_code == 2
    assert "needs bind parameter(s) width" in result.stderr and "--param width=…" in result.stderr
    assert result.stderr.count("\n") == 1
    result = runner.invoke(app, ["batching", "recpkg.ops:pad_p", "--arg", "f32[4]", "--param", "width=2",
                                 "--app-dir", data_dir])
    assert result.exit_code == 0, result.output


def test_api_static_values(monkeypatch):
    monkeypatch.syspath_prepend(str(SIGS))
    import sigs

    report = jaxdiag.check_grad(sigs.clip_gradient, -0.1, 0.1, "f32[3]")
    assert report.ok, str(report)
    report = jaxdiag.check_grad(sigs.dense, {"w": "f32[3,4]", "b": "f32[3]"}, "f32[4]")
    assert report.ok and report.targets[0].inputs == ["{'b': f32[3], 'w': f32[3,4]}", "f32[4]"]
    assert any(c.status == "passed" for c in report.targets[0].checks)


def _flags_any(flags, x):
    return jnp.where(jnp.any(flags), x, 0.0)


def _conditioned(a, pred):
    return jax.lax.cond(pred, lambda m: m, lambda m: -m, jnp.linalg.cond(a))


def _masked(x, mask):
    return x * ~mask


def test_operands_the_code_uses_as_truth_values_are_found_and_a_condition_number_is_not_one():
    from types import SimpleNamespace

    from jaxdiag._run._predicates import predicate_positions

    def positions(fn):
        return predicate_positions(SimpleNamespace(kind="function", original=None, obj=fn))

    assert positions(_flags_any) == {0}
    assert positions(_conditioned) == {1}  # `lax.cond(pred, ...)`; `jnp.linalg.cond(a)` is a number
    assert positions(_masked) == {1}
