"""Rules reached only through public wrappers taking int parameters (probe package tests/data/inputs_intparams): a
parameter annotated `int` (`Optional[int]`, `tuple[int, ...]`), unannotated with an int default, or named as a
count (`n`, `L`) is given a Python int from a short ladder, shown as a literal among the carrier's inputs; a
keyword-only `L: int` no call site passes is assumed from the same ladder; a wrapper's own keyword naming one of
the primitive's operands is never read as a bind param."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Optional

import pytest

from clirun import check_json, errors_and_warnings, only_target

DATA = Path(__file__).parent / "data"


def _param(name: str, annotation=inspect.Parameter.empty, default=inspect.Parameter.empty) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)


def test_int_parameters_are_read_off_annotations_defaults_and_names() -> None:
    from jaxdiag._run._int_params import int_kind

    assert int_kind(_param("L", int)) == ("int", False)
    assert int_kind(_param("nside", Optional[int])) == ("int", False)
    assert int_kind(_param("nside", int | None)) == ("int", False)
    assert int_kind(_param("nside", "int | None")) == ("int", False)  # postponed annotations
    assert int_kind(_param("dims", tuple[int, ...])) == ("shape", False)
    assert int_kind(_param("order", default=2)) == ("int", False)
    assert int_kind(_param("n")) == ("int", True) and int_kind(_param("num_steps")) == ("int", True)
    assert int_kind(_param("block_size")) == ("int", True)
    # a string parameter takes a name (`sow(value, name: str)`), never an array
    assert int_kind(_param("name", str)) == ("str", False) and int_kind(_param("L", "str")) == ("str", False)
    # ... but no string serves a mapped axis's name: its collectives run inside a shard_map/pmap binding it only
    assert int_kind(_param("axis_name", str)) is None and int_kind(_param("seq_axis_name", "str")) is None
    # arrays, floats and truth values are left as they were
    for param in (_param("x"), _param("f"), _param("gamma", float), _param("flag", default=True),
                  _param("scale", default=1.0), _param("L", "jnp.ndarray"), _param("name")):
        assert int_kind(param) is None, param


def test_bind_calls_passing_an_operand_positionally_make_it_no_bind_param(monkeypatch) -> None:
    from jaxdiag._loading._passthrough import bind_site_params, bound_positionally

    monkeypatch.syspath_prepend(str(DATA))
    import inputs_intparams.spectrum as module

    assert bound_positionally({"spectrum", "_spectrum_p"}, [module]) == 2
    # `analyse` calls the wrapper `spectrum(x, L=L, spin=spin)`: `spin` is the wrapper's, an operand of the impl
    assert bind_site_params({"spectrum", "_spectrum_p"}, [module], None) == {"spin": 0}
    assert bind_site_params({"spectrum", "_spectrum_p"}, [module], None, operands=frozenset({"spin"})) == {}
    del sys.modules["inputs_intparams.spectrum"]


def check(module: str, tmp_path: Path, monkeypatch) -> tuple[int, dict]:
    monkeypatch.chdir(DATA)
    return check_json(f"inputs_intparams.{module}", DATA)


@pytest.mark.slow
def test_a_primitive_bound_by_a_wrapper_taking_an_int_is_checked_through_it(tmp_path, monkeypatch):
    """`forward(f, L: int, ...)` runs on `range(L)` and `f` shaped (L, 2L - 1): (4, 7) with L=4, a shape derived
    from the int (`_climb`). Not checked before (JXN012: L drawn as an array)."""
    code, data = check("transform", tmp_path, monkeypatch)
    assert data["summary"]["checked"] == 1, data["summary"]
    found = only_target(data)
    (note,) = [f for f in found["findings"] if f["code"] == "JXN016"]
    assert "forward ran on f32[4,7] 4)" in note["message"] and "with L=4, width=7" in note["message"], note
    assert not errors_and_warnings(found) and code == 0


@pytest.mark.slow
def test_a_keyword_only_int_no_call_site_passes_is_assumed_from_the_ladder(tmp_path, monkeypatch):
    code, data = check("adjoint", tmp_path, monkeypatch)
    assert data["summary"]["checked"] == 1, data["summary"]
    found = only_target(data)
    (note,) = [f for f in found["findings"] if f["code"] == "JXN016"]
    assert "with L=4 (assumed)" in note["message"], note
    assert not errors_and_warnings(found) and code == 0


@pytest.mark.slow
def test_a_factory_rule_is_reached_through_a_function_taking_its_order(tmp_path, monkeypatch):
    code, data = check("powers", tmp_path, monkeypatch)
    assert data["summary"]["checked"] == 1, data["summary"]
    found = only_target(data)
    assert "inside inputs_intparams.powers:smooth" in found["target"], found["target"]
    (note,) = [f for f in found["findings"] if f["code"] == "JXN001"]
    assert "f32[4] 4 for inputs_intparams.powers:smooth" in note["message"], note  # the assumed int, as a literal
    assert not errors_and_warnings(found) and code == 0


@pytest.mark.slow
def test_a_wrong_rule_reached_with_an_assumed_int_is_a_warning(tmp_path, monkeypatch):
    """`smooth(x, n)`, `n` unannotated: its name makes it an int; the factory's JVP off by two is caught, graded as
    seen on inferred inputs."""
    code, data = check("powers_wrong", tmp_path, monkeypatch)
    found = only_target(data)
    wrong = errors_and_warnings(found)
    assert wrong and all(f["code"].startswith("JXG") for f in wrong), found["findings"]
    assert all(f["severity"] == "warning" and f["inputs"]["provenance"] == "inferred" for f in wrong)
    assert code == 1


@pytest.mark.slow
def test_a_wrappers_keyword_naming_an_operand_is_not_a_bind_param(tmp_path, monkeypatch):
    """Read as a bind param, `spin=0` filled the impl's `spin` operand: one operand drawn, false warnings. Checked
    where the wrapper binds it (the `spin` operand it builds from its int setting is a constant there, held fixed),
    with `L` assumed from the int ladder and `spin` in no bind param."""
    code, data = check("spectrum", tmp_path, monkeypatch)
    found = only_target(data)
    assert found["inputs"] == ["f32[4]", "f32[4]"], found["inputs"]  # (L,) operands first with L assumed
    (note,) = [f for f in found["findings"] if f["code"] == "JXN016"]
    assert "with L=4 (assumed)" in note["message"] and "spin" not in note["message"], note
    assert not errors_and_warnings(found) and code == 0


@pytest.mark.slow
def test_a_bind_param_from_a_wrappers_str_parameter_takes_a_name(tmp_path, monkeypatch):
    """`tag(value, name: str)` binds `name=name`: drawn as an array, the bind param was an array no caller passes
    (not checked: JXN012). A `str` parameter takes a name now, and the batching rule's wrong axis is found."""
    code, data = check("tagged", tmp_path, monkeypatch)
    assert data["summary"]["checked"] == 1, data["summary"]
    found = only_target(data)
    assert any("name='jaxdiag'" in f["message"] for f in found["findings"] if f["severity"] == "info"), found
    assert any(f["code"].startswith("JXB") for f in errors_and_warnings(found)), found["findings"]
    assert code == 1


@pytest.mark.slow
def test_an_int_order_in_a_custom_jvps_nondiff_argnums_is_a_python_int(tmp_path, monkeypatch):
    """`periodic(n, x)` with `n` in nondiff_argnums and used by `range(n)`: it was drawn as an f32[] array, which
    `range` refuses (or, where the code truncates it, a non-integer order no caller passes). Now the int ladder's
    4, as for a function's int parameter; the JVP missing its factor `n` is still found."""
    code, data = check("bernoulli", tmp_path, monkeypatch)
    targets = {t["target"].split(":")[-1]: t for t in data["targets"]}
    assert targets["periodic"]["inputs"][0] == "4" and targets["periodic"]["verified"], targets["periodic"]
    assert not errors_and_warnings(targets["periodic"])
    wrong = errors_and_warnings(targets["periodic_wrong"])
    assert targets["periodic_wrong"]["inputs"][0] == "4" and {f["code"] for f in wrong} & {"JXG014", "JXG024"}, wrong


@pytest.mark.slow
def test_two_int_statics_in_an_unstated_relation_get_distinct_values(tmp_path, monkeypatch):
    """`recurrence(k, x, M)` needs `M > k + 1`, which nothing states: the ladder's equal values (4 and 4, ...) all
    fail, so before it was not checked (JXN004). Now the ints also climb apart (2 and 8, then 8 and 2)."""
    code, data = check("recurrence", tmp_path, monkeypatch)
    targets = {t["target"].split(":")[-1]: t for t in data["targets"]}
    assert targets["recurrence"]["inputs"] == ["2", "f32[3]", "8"] and targets["recurrence"]["verified"]
    assert not errors_and_warnings(targets["recurrence"])
    wrong = errors_and_warnings(targets["recurrence_wrong"])
    assert {f["code"] for f in wrong} & {"JXG014", "JXG024"}, wrong


def test_several_int_statics_climb_equal_then_apart() -> None:
    from jaxdiag._run._int_params import ladder_values

    assert ladder_values({0: "int"}) == [{0: 4}, {0: 2}, {0: 3}, {0: 8}]
    rungs = ladder_values({0: "int", 2: "int", 3: "str"})
    assert [(r[0], r[2]) for r in rungs] == [(4, 4), (2, 2), (3, 3), (8, 8), (2, 8), (8, 2)]
    assert {r[3] for r in rungs} == {"jaxdiag"}
    assert [r[i] for r in ladder_values(dict.fromkeys(range(3), "int"))[-2:] for i in range(3)] == [2, 4, 8, 8, 4, 2]


def test_a_static_named_as_an_index_is_an_int_and_a_functions_index_array_is_not() -> None:
    from jaxdiag._run._int_params import int_kind

    for name in ("ignore_index", "idx", "dim", "rank"):
        assert int_kind(_param(name), static=True) == ("int", True), name
        assert int_kind(_param(name)) is None, name  # a function's `idx` is usually an array of indices
    assert int_kind(_param("x"), static=True) is None
