"""Inputs as the library's own code makes them: a configuration object from the library's factory, the grid an
int parameter names in a docstring, and reverse mode probed with the JAX arrays JAX hands a bwd.

From a NUFFT package: `spread_2d(x, y, c, nf1, nf2, kernel_params: "Kernel | KernelParams")` takes an object only
`compute_kernel_params(tol)` makes consistently, its interpolation's grid is stated as `fw: shape (nf2, nf1)`, and
its bwd indexes the cotangent with traced indices (a NumPy cotangent raised there, JAX's never does). Before, the
six spreading custom_vjps were not checkable, then checked on a grid of another size than nf1 x nf2 (two false
JXG010s). Each fixture is one member of its class."""

from __future__ import annotations

import itertools
from pathlib import Path
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from clirun import check_json

from jaxdiag._checks._base import Subject
from jaxdiag._loading._inputs import ArgSpec
from jaxdiag._run import _climb, _signature, _stated_shapes
from jaxdiag._run._made_objects import annotation_classes, factory_build

ACC = Path(__file__).resolve().parent / "data" / "acc"


def test_an_operand_annotated_as_a_configuration_class_is_the_object_its_factory_makes(monkeypatch):
    monkeypatch.syspath_prepend(str(ACC))
    import made_config

    def factory_build_for(text, namespace):
        return factory_build(annotation_classes(text, namespace), namespace)

    build = factory_build_for('"WindowParams"', vars(made_config))
    assert build is not None
    made = build(ArgSpec(np.dtype(np.float32), (3,))).value  # the drawn spec is not used: the object is static
    assert made == made_config.make_window_params(1e-6)
    union = factory_build_for("Kernel | WindowParams", {**vars(made_config), "Kernel": object})
    assert union is not None and union(None).value == made
    assert factory_build_for("SomethingElse", vars(made_config)) is None  # no such class, no factory
    assert factory_build_for("int", vars(made_config)) is None


@pytest.mark.slow  # two custom_vjps reached through their public functions (about 4 s)
def test_custom_vjps_taking_closures_built_from_a_configuration_object_are_checked():
    _, data = check_json(str(ACC / "made_config.py"), ACC)
    by_name = {t["target"].rsplit(":", 1)[-1]: t for t in data["targets"]}
    assert by_name["_window"]["verified"] and by_name["_steep_window"]["verified"]
    assert not [f for f in by_name["_window"]["findings"] if f["severity"] != "info"]
    assert {f["code"] for f in by_name["_steep_window"]["findings"] if f["severity"] != "info"} == {"JXG024"}
    (note,) = [f for f in by_name["_window"]["findings"] if f["code"] == "JXN016"]
    assert "<WindowParams>" in note["message"]


def test_an_axis_named_as_an_int_parameter_has_that_int_s_value():
    """`fw: shape (nf2, nf1)` beside `nf1: int, nf2: int`: the first stated rung is nf2 x nf1 at the ints' first
    values (4, 4), the points `x: shape (M,)` at a size of their own."""
    statements = [{0: ("M",), 1: ("M",), 2: ("nf2", "nf1")}]
    names = ["x", "y", "fw", "nf1", "nf2"]
    first = next(_stated_shapes.stated_rungs([0, 1, 2], statements, np.dtype(np.float32), names,
                                             {3: "int", 4: "int"}))
    assert [s.shape for s in first] == [(2,), (2,), (4, 4)]
    rungs = list(itertools.islice(_stated_shapes.stated_rungs([0, 1, 2], statements, np.dtype(np.float32), names,
                                                              {3: "int", 4: "int"}), 20))
    assert all(r[2].shape == (4, 4) for r in rungs)  # the named axes never take another size
    unnamed = next(_stated_shapes.stated_rungs([0, 1, 2], statements, np.dtype(np.float32)))
    assert unnamed[2].shape != (4, 4)  # without the ints, sizes are guessed apart


@jax.custom_vjp
def _sorted_values(x):
    return jnp.sort(x)


def _sorted_values_fwd(x):
    return jnp.sort(x), jnp.argsort(x)


def _sorted_values_bwd(order, g):
    return (g[jnp.argsort(order)],)  # the cotangent indexed by a traced array: fine for JAX's, not for NumPy


_sorted_values.defvjp(_sorted_values_fwd, _sorted_values_bwd)


def test_reverse_mode_is_probed_with_the_jax_arrays_jax_hands_a_bwd():
    subject = Subject("sorted_values", "function", _sorted_values, specs=[])
    _signature.apply(subject, [ArgSpec(np.dtype(np.float32), (4,))])
    assert _climb._reverse_fails(subject) == ""
    x = jnp.asarray([3.0, 1.0, 2.0, 0.0])
    w = jnp.arange(4.0)
    np.testing.assert_allclose(jax.grad(lambda v: (w * _sorted_values(v)).sum())(x),
                               jax.grad(lambda v: (w * jnp.sort(v)).sum())(x))  # and the bwd is right


def test_a_docstring_entry_for_several_parameters_describes_each():
    from jaxdiag._harness.source import parameter_descriptions

    doc = "Args:\n    x, y: Points in grid units, shape (M,)\n    grid: Values, shape (ny, nx)\n"
    described = parameter_descriptions(doc, ["x", "y", "grid"])
    assert described["x"] == described["y"] == " Points in grid units, shape (M,)"
    assert described["grid"] == " Values, shape (ny, nx)"
    assert parameter_descriptions("x, z: unrelated", ["x", "y"]) == {}  # `z` is no parameter: no entry


@pytest.mark.slow  # one custom_jvp checked (about 2 s)
def test_the_shapes_a_delegate_documents_are_the_inputs_of_the_function_that_calls_it():
    _, data = check_json(str(ACC / "delegated_doc.py"), ACC)
    (target,) = data["targets"]
    x, y, grid = target["inputs"]
    assert x == y and x.count(",") == 0 and grid.count(",") == 1  # the points alike and 1-D, the grid 2-D
    assert target["verified"] and not [f for f in target["findings"] if f["severity"] != "info"]


def _rotate(points, frames):
    """Express points in local frames.

    Args:
        points: Positions of shape `(..., 3)`.
        frames: Orthonormal frames of shape `(*batch, 3, 3)`.
    """
    return jnp.einsum("...ij,...j->...i", frames, points)


def test_a_stated_shape_with_leading_batch_axes_states_its_trailing_axes():
    """`(..., 3)` and `(*batch, 3, 3)`: any leading batch axes, none the least; the trailing axes are the statement
    (a ray tracer's `tx: shape (..., 3)`, `object_vectors: shape (..., num_interactions, num_dims, 3)`)."""
    subject = Subject("rotate", "function", _rotate, specs=[])
    (statement, *_) = _stated_shapes.stated_axes(subject, ["points", "frames"])
    assert statement == {0: ("3",), 1: ("3", "3")}
    first = next(_stated_shapes.stated_rungs([0, 1], [statement], np.dtype(np.float32)))
    assert [s.shape for s in first] == [(3,), (3, 3)]


def test_the_keyword_option_a_function_s_own_error_asks_for_is_given_a_value(monkeypatch):
    monkeypatch.syspath_prepend(str(ACC))
    import asked_option

    from jaxdiag._run._asked_options import asked_keywords

    subject = Subject("relax", "function", asked_option.relax, specs=[])
    error = "ValueError: Exactly one of 'num_iters' or 'tol' must be set."
    assert asked_keywords(subject, error) == {"num_iters": 4}  # the first quoted, an int: the int ladder's first
    subject.keywords = {"num_iters": 4}
    assert asked_keywords(subject, error) == {"tol": 1e-6}  # passed already: the next, a tolerance
    assert asked_keywords(subject, "ValueError: 'a' must be positive") == {}  # a positional parameter: not an option


@pytest.mark.slow  # a solver reached through the function whose error asked for its option (about 3 s)
def test_a_rule_reached_only_once_the_function_s_required_option_is_set_is_checked():
    _, data = check_json(str(ACC / "asked_option.py"), ACC)
    (target,) = data["targets"]
    assert target["verified"] and not [f for f in target["findings"] if f["severity"] != "info"]
    (note,) = [f for f in target["findings"] if f["code"] == "JXN016"]
    assert "num_iters=4" in note["message"]


@pytest.mark.slow  # a grad check and two script runs (about 10 s)
def test_the_repro_of_a_function_called_with_an_asked_option_passes_it(tmp_path, monkeypatch):
    """The script calls the target as jaxdiag did (`TARGET(args[0], steps=4)`) and fails on the defect; without the
    option it fails on the function's own ValueError, which is not the defect: such a script is not written."""
    import jaxdiag
    from jaxdiag._evidence import _repro

    monkeypatch.chdir(tmp_path)
    report = jaxdiag.check_grad(f"{ACC / 'asked_option_slope.py'}:smooth")
    target = next(t for t in report.targets if t.subject is not None and t.subject.label.endswith("smooth"))
    assert target.subject.keywords == {"steps": 4}
    assert target.keywords == ["steps=4"] and target.to_dict()["keywords"] == ["steps=4"]  # shown with the inputs
    (finding, *_) = [f for f in target.findings if f.severity != "info"]
    text = _repro.script(target, target.subject, finding)
    assert text is not None and "TARGET(args[0], steps=4)" in text
    assert _repro.verify_script(text, _repro.module_path(text)) is None  # fails as the defect
    reason = _repro.verify_script(text.replace(", steps=4", ""), _repro.module_path(text))
    assert reason is not None and "does not run on the drawn inputs (ValueError: 'steps' must be set)" in reason


def _solve_sized(A, rhs, step):
    """Solves Ax=b.

    Args:
        A (Array): A positive definite linear operator of size (n, n).
        rhs (Array): A single right hand side of size (n,).
        step (float): The step size (float) of each iteration.
    """
    return A, rhs, step


def test_a_docstring_giving_an_operand_s_size_in_brackets_states_its_shape():
    """"of size (n, n)" states a shape as "of shape (n, n)" does (a linear operator drawn as a vector ran on a
    1-D rung before); a size whose brackets hold no comma ("step size (float)") states none."""
    subject = Subject("solve", "function", _solve_sized, specs=[])
    (statement, *_) = _stated_shapes.stated_axes(subject, ["A", "rhs", "step"])
    assert statement == {0: ("n", "n"), 1: ("n",)}


def test_a_primitive_taking_star_ins_reads_its_operands_domains_under_the_names_its_binding_call_gives(
        monkeypatch):
    """The impl takes `*ins`; the library's call of the kernel object holding the primitive names them
    (`mv_kernel(weights, spikes, ...)`), and the function making that call documents `spikes` as "The binary vector":
    drawn 0s and 1s, not normal floats (on which an event-driven kernel's transpose and batching disagree)."""
    monkeypatch.syspath_prepend(str(ACC))
    import kernel_binary

    from jaxdiag._run import _operand_kinds

    subject = Subject("binary_mv", "primitive", kernel_binary.mv_kernel.primitive, specs=[],
                      module="kernel_binary", params={"transpose": False})
    operands = _signature.bind_site_operands(subject)
    assert ["weights", "spikes"] in [list(o) for o in operands], operands
    assert _operand_kinds.documented_domains(subject, operands) == {1: "binary"}
    import jaxdiag

    (target, *_) = jaxdiag.check_batching(f"{ACC / 'kernel_binary.py'}:mv_kernel.primitive").targets
    assert target.inputs[1].endswith("@binary"), target.inputs  # what inference draws


def test_an_output_that_is_not_a_function_of_the_inputs_is_no_fwd_mismatch():
    """A call counter beside the result (a solver's iteration time is another): fwd's value there differs from the
    function's because the function differs from itself; the result output is still compared (JXG012 at the shifted
    fwd, on the result only)."""
    import jaxdiag

    right = jaxdiag.check_grad(f"{ACC / 'counted_calls.py'}:counted_square", "f32[3]")
    assert not [f for f in right.findings if f.code == "JXG012"], [f.message for f in right.findings]
    wrong = [f for f in jaxdiag.check_grad(f"{ACC / 'counted_calls.py'}:counted_shifted", "f32[3]").findings
             if f.code == "JXG012"]
    assert len(wrong) == 1 and "difference 0.5 " in wrong[0].message, [f.message for f in wrong]


@pytest.mark.slow  # a module check through the documented wrapper's example call (about 3 s)
def test_a_rule_reached_through_its_wrappers_docstring_example_keeps_the_domain_that_docstring_states():
    """`binary_mv` runs on the values of its docstring example (given without a domain); the primitive it binds takes
    `spikes` as that function's docstring states it, binary, so the checks' own draws are 0s and 1s too."""
    _, data = check_json(str(ACC / "kernel_binary.py"), ACC)
    (target,) = [t for t in data["targets"] if t["target"].endswith("mv_kernel.primitive")]
    assert target["inputs"] == ["f32[3,4]", "f32[4]@binary"], target["inputs"]


@pytest.mark.slow  # a module check through the function's docstring example (about 2 s)
def test_a_custom_rule_made_in_a_documented_function_takes_the_domain_its_docstring_states_for_what_it_hands_on():
    """`gated(x, mask)` documents `mask` as binary and makes `gate(a, m)` inside: `m` is `mask` at the call, so the
    rule is checked on 0s and 1s there, as the primitive behind a documented wrapper is."""
    _, data = check_json(str(ACC / "documented_mask.py"), ACC)
    (target,) = [t for t in data["targets"] if "made in a function" in t["target"]]
    assert target["inputs"] == ["f32[3]", "f32[3]@binary"], target["inputs"]


def test_the_options_are_appended_to_the_scripts_call_with_or_without_positional_arguments():
    from jaxdiag._evidence._repro import with_keywords

    assert with_keywords("TARGET(args[0])", {"steps": "4"}) == "TARGET(args[0], steps=4)"
    assert with_keywords("TARGET()", {"steps": "4", "tol": "1e-06"}) == "TARGET(steps=4, tol=1e-06)"
