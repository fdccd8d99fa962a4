"""Primitives whose required bind params their package binds from variables, never literals (probe package
tests/data/inputs_bindvars): the variable followed to the wrapper's callers (a default of theirs, a literal they
pass), the default of the package function the impl hands the param to, the value of the param a transpose binds
it as (a swapped forward/adjoint pair), else a value synthesised from a short ladder that the impl and the abstract
eval agree on (tuples of the length the package's binds give; a resolution doubled until the output converges;
an impl forwarding `*args` read through its abstract eval); the JXN017 note says which values were assumed and
where they came from, and a wrong rule is still caught."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from clirun import Runner as CliRunner  # stdout/stderr apart on every click
from clirun import check_json, only_target

from jaxdiag._parent._cli import app

runner = CliRunner()
DATA = Path(__file__).parent / "data"


def assumed_note(target: dict) -> str:
    (note,) = [f for f in target["findings"] if f["code"] == "JXN017"]
    return str(note["message"])


def clean(target: dict) -> bool:
    return not [f for f in target["findings"] if f["severity"] != "info"]


@pytest.fixture()
def bindvars_modules(monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    return importlib.import_module("inputs_bindvars")


def test_a_bind_site_variable_is_followed_to_the_default_of_the_wrappers_caller(bindvars_modules):
    """`analyse(x, *, L, sampling)` binds its own keyword-only arguments; its one caller passes its parameters on,
    whose defaults are the values. Read from the source, with where each was read."""
    from jaxdiag._loading._passthrough import bind_site_params

    package = [m for n, m in sorted(sys.modules.items()) if n.split(".")[0] == "inputs_bindvars"]
    origins: dict[str, str] = {}
    found = bind_site_params({"_analysis_p"}, package, {"L", "sampling"}, origins)
    assert found == {"L": 2, "sampling": "mw"}
    assert "inputs_bindvars.harmonic:forward" in origins["L"], origins


def test_a_literal_the_wrappers_caller_passes_positionally_is_the_bind_param(bindvars_modules):
    from jaxdiag._loading._passthrough import bind_site_params

    package = [m for n, m in sorted(sys.modules.items()) if n.split(".")[0] == "inputs_bindvars"]
    origins: dict[str, str] = {}
    assert bind_site_params({"_spread_p"}, package, {"output_shape"}, origins) == {"output_shape": (4,)}
    assert "periodogram calls spread" in origins["output_shape"], origins
    # nothing in the package passes `order` a literal: left to the ladder
    assert bind_site_params({"_difference_p"}, package, {"order"}) == {}


def test_a_param_the_impl_hands_to_a_defaulted_function_and_its_swapped_partner_are_read(bindvars_modules):
    """A forward/adjoint pair whose wrapper splits its argument with a helper (no literal at any bind): the impl hands
    `oversample` to the package's `resample(x, oversample=2.0)`, and the transposes bind each other's primitive with
    `oversample=oversample_adjoint, oversample_adjoint=oversample`, so the partner takes the same value."""
    from jaxdiag._checks._base import Subject
    from jaxdiag._run._signature import bind_site_params

    module = importlib.import_module("inputs_bindvars._oversampled_prim")
    for prim in (module._forward_p, module._adjoint_p):
        subject = Subject(label=prim.name, kind="primitive", obj=prim, specs=[], params={}, location=None,
                          module=module.__name__)
        origins: dict[str, str] = {}
        assert bind_site_params(subject, origins) == {"oversample": 2.0, "oversample_adjoint": 2.0}
        assert "the default of `oversample` in inputs_bindvars._oversampled_prim:resample" in origins["oversample"]
        assert origins["oversample_adjoint"].startswith("`oversample`") and "transpose" in origins["oversample_adjoint"]


def test_a_tuple_param_takes_the_length_its_binds_give_it(bindvars_modules):
    """`grid=(n1, n2, n3)` in a JVP rule, or a wrapper's `grid: tuple[int, int, int]` passed as `tuple(grid)`."""
    import ast

    from jaxdiag._loading._passthrough import _tuple_arity, bind_site_arities

    importlib.import_module("inputs_bindvars._volume_prim")
    package = [m for n, m in sorted(sys.modules.items()) if n.split(".")[0] == "inputs_bindvars"]
    assert bind_site_arities({"_volume_p"}, package, {"grid"}) == {"grid": 3}
    wrapper = ast.parse("def f(x, grid: tuple[int, int, int], axes: tuple[int, ...]): pass").body[0]
    annotations = {a.arg: a.annotation for a in wrapper.args.args if a.annotation is not None}
    assert _tuple_arity(ast.parse("tuple(grid)", mode="eval").body, annotations) == 3
    assert _tuple_arity(ast.parse("axes", mode="eval").body, annotations) is None  # any length
    assert _tuple_arity(ast.parse("(a, *rest)", mode="eval").body, annotations) is None


def test_only_int_shape_and_str_annotated_params_are_synthesised() -> None:
    from jaxdiag._run._assumed_params import kind_of

    assert kind_of("order", "int") == "int" and kind_of("L", None) == "int" and kind_of("n_modes", None) == "int"
    assert kind_of("output_shape", None) == "shape" and kind_of("dims", "tuple[int, ...]") == "shape"
    assert kind_of("sampling", None) is None and kind_of("fn", None) is None
    # a tag or a name its wrapper annotates `str` takes a name (tried: kept only where the impl runs on it)
    assert kind_of("name", "str") == "str"


@pytest.mark.slow
@pytest.mark.parametrize(("module", "target", "assumed"), [
    ("_harmonic_prim", "_analysis_p", ["L=2 (read from the default of `L` in inputs_bindvars.harmonic:forward",
                                       "sampling='mw'"]),
    ("_spread_prim", "_spread_p", ["output_shape=(4,) (read from inputs_bindvars.spectra line"]),
    ("_difference_prim", "_difference_p", ["order=4 (synthesised"]),  # x of n + 1 samples, derived from order
    # an impl forwarding `*args, **kwargs`: the abstract eval names the params its callers pass by keyword
    ("_forwarded_prim", "_scaled_solve_p", ["n_devices=4 (synthesised", "n_shift=4 (synthesised"]),
    # a tuple its code always gives three entries: tuples of three
    ("_volume_prim", "_volume_p", ["grid=(4, 4, 4) (synthesised: the first rung of ((4, 4, 4), (3, 3, 3)"]),
    # a resolution (a quadrature's node count): doubled until the output stops changing
    ("_resolution_prim", "_mean_exp_p", ["(synthesised: doubled from 4, the first rung of (4, 2, 3, 8)"]),
])
def test_a_primitive_bound_from_variables_is_checked_with_the_assumed_params(monkeypatch, module, target, assumed):
    """Left unchecked before (JXN012 "needs bind parameter(s)"): now checked, clean, the note naming each value."""
    monkeypatch.chdir(DATA)
    code, data = check_json(f"inputs_bindvars.{module}", DATA)
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 1, data["summary"]
    found = only_target(data)
    assert found["target"] == f"inputs_bindvars.{module}:{target}"
    note = assumed_note(found)
    assert all(part in note for part in assumed), note
    assert any(c["status"] == "passed" and c["name"].startswith("batching") for c in found["checks"])
    assert clean(found) and code == 0, found["findings"]


@pytest.mark.slow
def test_a_transform_pair_bound_without_literals_is_checked_with_the_params_read_from_its_code(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check_json("inputs_bindvars._oversampled_prim", DATA)
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 2, data["summary"]
    for found in data["targets"]:
        note = assumed_note(found)
        assert "oversample=2.0" in note and "oversample_adjoint=2.0" in note, note
        assert any(c["status"] == "passed" and c["name"] == "primitive-transpose" for c in found["checks"])
        assert clean(found), found["findings"]
    assert code == 0


@pytest.mark.slow
@pytest.mark.parametrize(("module", "old", "new", "code"), [
    # a batching rule that moves the batch axis to the front but reports it where it was
    ("_harmonic_prim", "sampling=sampling), 0\n\n\n_analysis_p.def_impl", "sampling=sampling), d\n\n\n"
                                                                          "_analysis_p.def_impl", "JXB"),
    # a JVP off by a factor of two, on a synthesised order
    ("_difference_prim", ", _difference_p.bind(t, order=order)", ", 2.0 * _difference_p.bind(t, order=order)", "JXG"),
])
def test_a_wrong_rule_is_still_caught_with_assumed_params(monkeypatch, tmp_path, module, old, new, code):
    name = f"bindvars_wrong{module.removesuffix('_prim')}"  # one package per case: a run imports it in-process
    package = tmp_path / name
    shutil.copytree(DATA / "inputs_bindvars", package, ignore=shutil.ignore_patterns("__pycache__"))
    source = (package / f"{module}.py").read_text()
    assert source.count(old) == 1, old
    (package / f"{module}.py").write_text(source.replace(old, new))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check", f"{name}.{module}", "--app-dir", str(tmp_path), "--format",
                                 "json", "--no-cache"])
    data = json.loads(result.stdout)
    found = only_target(data)
    assert assumed_note(found)
    wrong = [f for f in found["findings"] if f["severity"] in ("error", "warning")]
    assert wrong and all(f["code"].startswith(code) for f in wrong), found["findings"]
    # assumed bind params are inputs nobody gave: at most warnings
    assert all(f["severity"] == "warning" and f["inputs"]["provenance"] == "inferred" for f in wrong)
    assert result.exit_code == 1
