"""Rules whose inputs inference finds only past the plain ladder (probe package tests/data/inputs_derived): an
operand shaped from an int parameter (`flm` of (L, 2L - 1) complex coefficients, reached through a wrapper jitted
with `L` static), and a shape-named static argument (`transform1(output_shape, values, points)`) whose primitives
take complex values at real points sharing their batch and point axes."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from clirun import check_json, errors_and_warnings

DATA = Path(__file__).parent / "data"


def test_names_say_int_or_shape_for_function_and_bind_params_alike() -> None:
    from jaxdiag._run._int_params import int_kind, name_kind

    assert name_kind("output_shape") == "shape" and name_kind("grid_sizes") == "shape"
    assert name_kind("L") == "int" and name_kind("n_modes") == "int" and name_kind("max_degree") == "int"
    assert name_kind("x") is None and name_kind("x", bind_param=True) == "int"  # a bind param is never an array
    assert name_kind("L_lower", bind_param=True) == "int" and name_kind("L_lower") is None
    param = inspect.Parameter("output_shape", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    assert int_kind(param) == ("shape", True)


def test_derived_dims_are_a_small_family_of_n() -> None:
    from jaxdiag._run._climb import derived_dims

    assert derived_dims(4) == [4, 7, 5, 3, 8, 16]
    assert derived_dims(2) == [2, 3, 1, 4]


def test_a_static_int_or_shape_without_a_value_climbs_the_int_ladder(monkeypatch) -> None:
    """`L: int` and `output_shape` static, no default and no call passing them: given ladder values, not refused
    as static arguments nobody gives a value."""
    from jaxdiag._run import _engine, _static_values

    monkeypatch.syspath_prepend(str(DATA))
    for label, position, kind in (("inputs_derived.synthesis:synthesis", 1, "int"),
                                  ("inputs_derived.nonuniform:transform1", 0, "shape")):
        subject = _engine._root_subject(_engine.resolve(label), {})
        statics = _static_values.static_templates(subject)
        assert statics is not None and position not in statics, label
        assert _static_values.static_without_default(subject) == []
        assert _static_values.int_positions(subject, statics, 3)[0][position] == kind, label


def check(module: str, monkeypatch) -> tuple[int, dict]:
    monkeypatch.chdir(DATA)
    return check_json(f"inputs_derived.{module}", DATA)


@pytest.mark.slow
def test_an_operand_shaped_from_a_static_int_is_found(monkeypatch):
    """`synthesis(flm, L)` jitted with `L` static: `flm` complex (L, 2L - 1), learned from the rule's own error and
    from the complex output its lowering names. Not checked before (JXN012: `L` static without a value)."""
    code, data = check("synthesis", monkeypatch)
    assert data["summary"]["checked"] == 1, data["summary"]
    (found,) = data["targets"]
    (note,) = [f for f in found["findings"] if f["code"] == "JXN016"]
    assert "synthesis ran on c64[4,7] 4" in note["message"] and "with L=4, width=7" in note["message"], note
    assert found["inputs"] == ["c64[4,7]", "f32[4]"], found["inputs"]
    assert not errors_and_warnings(found) and code == 0


@pytest.mark.slow
def test_complex_values_at_real_points_and_a_static_shape_are_found(monkeypatch):
    """Both transforms checked: `output_shape` from the shape ladder, complex values beside real points (the
    abstract eval names a complex dtype). Neither was checked before (JXN012, JXN004)."""
    code, data = check("nonuniform", monkeypatch)
    assert data["summary"]["checked"] == 2, data["summary"]
    for found in data["targets"]:
        assert found["inputs"][0].startswith("c64[") and found["inputs"][1].startswith("f32["), found["inputs"]
        assert not errors_and_warnings(found), found["findings"]
    assert code == 0
