"""Classes met on libraries nobody here tuned for: a kernel object that holds its primitive and binds it when called
(its operands are named at those calls only), operands named as indices or as tolerances, public functions that take
no input, calls of the package re-run on the values they were prepared with, and positive definite matrices moved
along symmetric steps only. Each fixture is one member of its class; the test fails without the change it covers."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from clirun import check_json

from jaxdiag._checks._base import Subject
from jaxdiag._run import _signature

DATA = Path(__file__).parent / "data"
ACC = DATA / "acc"


def _findings(data: dict, name: str) -> list[tuple[str, str]]:
    (target,) = [t for t in data["targets"] if t["target"].endswith(name)]
    return [(f["code"], f["severity"]) for f in target["findings"]]


def test_the_calls_of_a_kernel_object_holding_a_primitive_name_its_operands(monkeypatch):
    monkeypatch.syspath_prepend(str(ACC))
    import held_kernel

    prim = held_kernel.gather_p.primitive
    subject = Subject(label="gather_p", kind="primitive", obj=prim, specs=[], module="held_kernel")
    assert _signature.bind_site_operands(subject) == [["weights", "indices"]]


@pytest.mark.slow  # a whole module checked (about 2.5 s); the index-name reading below stays fast
def test_operands_named_as_indices_are_drawn_as_integers_and_a_wrong_rule_is_still_caught():
    """`gather_p`'s transpose indexes with `indices`: on float indices (before) a JXG017 warning about an input the
    library never passes. Drawn as in-range integers, the right kernel is clean and the doubled JVP is found."""
    _, data = check_json(f"{ACC / 'held_kernel.py'}", ACC)
    good, bad = _findings(data, ":gather_p.primitive"), _findings(data, ":gather_doubled_p.primitive")
    assert [c for c, s in good if s != "info"] == [], good
    assert ("JXG001", "warning") in bad and "JXG017" not in {c for c, _ in bad}, bad
    (note,) = [t for t in data["targets"] if t["target"].endswith(":gather_p.primitive")][0]["findings"]
    assert "i32[3]" in note["message"], note


def test_a_public_function_without_positional_arguments_is_never_called(monkeypatch, tmp_path):
    """`tune()` would tune and save (the marker file); the rule it builds is checked through `apply_scaled`."""
    marker = tmp_path / "saved"
    monkeypatch.setenv("SETUP_ROUTINE_MARKER", str(marker))
    code, data = check_json(f"{ACC / 'setup_routine.py'}", ACC)
    assert not marker.exists()
    checked = [t for t in data["targets"] if "scaled" in t["target"]]
    assert checked and all("apply_scaled" in t["target"] for t in checked), [t["target"] for t in data["targets"]]
    assert code == 0, [(t["target"], t["findings"]) for t in data["targets"]]


def test_a_function_parameter_named_as_indices_is_drawn_as_integers():
    """`pick(values, indices)`'s bwd scatters with `indices`: on float indices (before) a JXG017 warning."""
    code, data = check_json(f"{ACC / 'indexed_vjp.py'}", ACC)
    assert code == 0, _findings(data, ":pick")
    assert any("i32[" in f["message"] for t in data["targets"] for f in t["findings"] if f["code"] == "JXN001")


def _sized_findings() -> dict[str, list[tuple[str, str]]]:
    _, data = check_json(f"{ACC / 'sized_transform.py'}", ACC)
    return {name: _findings(data, f":{name}") for name in ("synthesis_p", "analysis_p", "summed_p")}


def _expect_sized(found: dict[str, list[tuple[str, str]]]) -> None:
    for name in ("synthesis_p", "analysis_p"):  # inferred at the packed and grid sizes their transposes state
        assert [c for c, s in found[name] if s != "info"] == [], found[name]
    # its output follows its operand: a bug, reported (JXG017 where JAX rejects the cotangent, JXG003 where not)
    assert {c for c, s in found["summed_p"] if s == "warning"} & {"JXG017", "JXG003"}, found["summed_p"]


def test_an_operand_the_forward_never_sizes_takes_the_shape_its_transpose_rule_states():
    """Each abstract eval reads its params only, so f32[7] (a shape derived from bands=4) traced; the transposes
    then returned f32[10] and f32[12]: before, a JXG017 warning on each for inputs the library never passes."""
    _expect_sized(_sized_findings())


def test_the_transpose_shape_is_read_where_jax_does_not_check_it_itself():
    """JAX before 0.6 accepts a cotangent of another shape silently: jaxdiag compares the pullback's shapes with the
    operands' itself and words the mismatch as newer JAX does, so the lower bound restates the same operands."""
    import jax
    import numpy as np

    from jaxdiag import _compat
    from jaxdiag._harness import UserResult
    from jaxdiag._run._climb import _cotangents_checked

    operand = jax.ShapeDtypeStruct((4,), np.complex64)
    checked = _cotangents_checked(UserResult((jax.ShapeDtypeStruct((192,), np.float32),)), [operand])
    assert checked.error is not None
    assert _compat.transpose_cotangent_mismatch(checked.error) == (("complex64", (4,)), ("float32", (192,)))
    same = UserResult((jax.ShapeDtypeStruct((4,), np.complex64),))
    assert _cotangents_checked(same, [operand]) is same


def test_a_primitive_jvp_where_its_impl_never_moves_is_a_surrogate_not_a_wrong_derivative():
    """An event kernel reads `spikes > 0`: finite differences of its impl are exactly 0 at every step, and its JVP's
    straight-through tangent for the spikes is a surrogate gradient on purpose. Before, a JXG001 error."""
    from tests.markers import expect_line

    path = ACC / "event_kernel.py"
    code, data = check_json(str(path), ACC)
    (target,) = [t for t in data["targets"] if t["target"].endswith(":event_matvec_p")]
    found = [(f["code"], f["severity"], f["location"]["line"]) for f in target["findings"] if f["severity"] != "info"]
    assert found == [("JXG033", "warning", expect_line(path, "JXG033"))], found


def test_a_rule_checked_at_a_documented_call_draws_its_batches_near_those_values(monkeypatch):
    """A rule reached through a call of its package (a docstring example, a recorded call, a traced caller) is
    checked at the values that call passes it, and its batches are drawn near them (`Context.draw_examples`: the
    indices kept as passed), as a rule nested in a function target is. Before, random indices: a compiled CSR
    kernel's transpose read out of bounds on them and the process aborted (a JXU002 error at "observed" inputs)."""
    from jaxdiag._run import _engine

    seen: dict[str, bool] = {}
    original = _engine.run_subject_by_check

    def spy(subject, options, cache, *args, **kwargs):
        seen[subject.label] = cache.observed
        return original(subject, options, cache, *args, **kwargs)

    monkeypatch.setattr(_engine, "run_subject_by_check", spy)
    check_json(str(ACC / "documented_rows.py"), ACC)
    (label,) = [k for k in seen if k.endswith("documented_rows")]
    assert seen[label] is True, seen


def test_every_later_run_of_a_documented_call_runs_on_its_documented_values(monkeypatch):
    """Observing how the documented call calls its rules (whether it binds them only under tracing, the inputs JAX
    never perturbs there) runs the call again: it ran on a fresh random draw of the example's shapes, so a CSR
    structure was redrawn and a compiled kernel read out of bounds; the supervised worker died (a JXU002 error,
    "no check had started"). Every run of the carrier now takes the values it was prepared with."""
    import numpy as np
    from jaxdiag._checks import _call_site

    examples: list[list] = []
    original = _call_site.traced_only_primitives

    def spy(root, nested, example):
        examples.append([np.asarray(x).tolist() for x in example])
        return original(root, nested, example)

    monkeypatch.setattr(_call_site, "traced_only_primitives", spy)
    check_json(str(ACC / "documented_rows.py"), ACC)
    assert examples == [[[1.0, 2.0, 3.0, 4.0], [3, 0, 2]]], examples


@pytest.mark.slow  # a whole module checked (5-11 s); the plain-JAX test below stays fast
def test_a_positive_definite_matrix_passed_through_moves_its_rule_along_symmetric_steps_only():
    """`quad_form` hands its SPD matrix straight to a custom_jvp whose primal reads one triangle (a Cholesky factor):
    the rule, right along symmetric steps, was found wrong (JXG024) along the random non-symmetric tangents the
    function was pushed with. The function's own symmetric directions now drive what its rules receive; a rule
    doubling the matrix term is still found."""
    _, data = check_json(f"{ACC / 'spd_passthrough.py'}", ACC)
    good, bad = _findings(data, ":_quad"), _findings(data, ":_quad_doubled")
    assert [c for c, s in good if s != "info"] == [], good
    assert ("JXG024", "warning") in bad, bad


def test_plain_jax_the_quadratic_form_rule_is_right_along_symmetric_steps_and_the_doubled_one_is_not():
    import importlib.util

    import jax
    import numpy as np

    from jaxdiag import _compat

    spec = importlib.util.spec_from_file_location("spd_passthrough", ACC / "spd_passthrough.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    matrix, rhs, step = a @ a.T + 3 * np.eye(3), rng.standard_normal(3), rng.standard_normal((3, 3))
    with _compat.x64_scope(True):
        for symmetric, right in ((step + step.T, True), (step, False)):
            for fn, doubled in ((module.quad_form, False), (module.quad_form_doubled, True)):
                tangent = jax.jvp(lambda m: fn(m, rhs), (matrix,), (symmetric,))[1]  # noqa: B023
                fd = (fn(matrix + 1e-6 * symmetric, rhs) - fn(matrix - 1e-6 * symmetric, rhs)) / 2e-6
                assert np.isclose(tangent, fd, rtol=1e-5) == (right and not doubled), (symmetric, doubled)


@pytest.mark.slow  # a whole module checked (5-11 s); the plain-JAX test below stays fast
def test_a_tolerance_operand_is_drawn_small_and_held_constant():
    """`tol` of a root finder is its setting: drawn at 1e-6 and never differentiated. On a random `tol` the right
    implicit-function rule was a JXG024; the rule halving the derivative is still found."""
    _, data = check_json(f"{ACC / 'solver_tolerance.py'}", ACC)
    good, bad = _findings(data, ":cube_root"), _findings(data, ":cube_root_halved")
    assert [c for c, s in good if s != "info"] == [], good
    assert ("JXG024", "warning") in bad, bad
    (target,) = [t for t in data["targets"] if t["target"].endswith(":cube_root")]
    assert target["inputs"][1].endswith("@0.000001..0.000002"), target["inputs"]


def test_plain_jax_the_root_finder_rule_is_right_once_converged_and_not_at_a_loose_tolerance():
    import importlib.util

    import jax.numpy as jnp
    import numpy as np

    spec = importlib.util.spec_from_file_location("solver_tolerance", ACC / "solver_tolerance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import jax

    y = jnp.array([0.5, 2.0, 7.0])
    for tol, converged in ((1e-6, True), (1.0, False)):
        tangent = jax.jvp(lambda v: module.cube_root(v, jnp.full(3, tol)), (y,), (jnp.ones(3),))[1]  # noqa: B023
        assert np.allclose(tangent, 1 / (3 * np.cbrt(np.asarray(y)) ** 2), rtol=1e-4) == converged, tol


@pytest.mark.slow  # a whole module checked (about 4 s); the plain-JAX test below stays fast
def test_a_rule_on_a_kink_of_its_documented_example_is_judged_beside_it():
    """Binary spikes (0 and 1) through a ReLU and inputs on a clip's bounds: the right rules chose their values at
    the kink (JXG024 errors before, and a JXG019 from finite differences of a gradient that jumps there); the
    rules wrong beside the kink, at first or at second order, are still found."""
    _, data = check_json(f"{ACC / 'kink_example.py'}", ACC)
    for right in (":_relu_matvec", ":_clip_scale"):
        assert [c for c, s in _findings(data, right) if s != "info"] == [], (right, _findings(data, right))
    assert ("JXG024", "error") in _findings(data, ":_relu_matvec_doubled")
    assert ("JXG024", "error") in _findings(data, ":_clip_scale_doubled")
    held = _findings(data, ":_relu_matvec_held")
    assert [c for c, s in held if s != "info"] == ["JXG019"], held


def test_plain_jax_the_kink_example_has_no_derivative_at_its_point_and_the_rules_differ_only_beside_it():
    import importlib.util

    import jax
    import numpy as np

    from jaxdiag import _compat

    spec = importlib.util.spec_from_file_location("kink_example", ACC / "kink_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    weights = np.array([[0.5, -1.0, 2.0, 1.5], [1.0, 0.25, -0.5, 2.0], [-1.5, 1.0, 0.5, -0.25]])
    spikes, step = np.array([1.0, 0.0, 1.0, 0.0]), np.array([0.3, -0.7, 0.2, 0.5])
    with _compat.x64_scope(True):
        def primal(s):
            return module._relu_matvec.fun(weights, s)

        h = 1e-6
        right = (primal(spikes + h * step) - primal(spikes)) / h
        left = (primal(spikes) - primal(spikes - h * step)) / h
        assert not np.allclose(right, left, atol=1e-3)  # a kink at the documented point itself
        for side in (1.0, -1.0):
            beside = spikes + side * 1e-2 * step
            fd = (primal(beside + h * step) - primal(beside - h * step)) / (2 * h)
            for rule, wrong in ((module._relu_matvec, False), (module._relu_matvec_doubled, True)):
                tangent = jax.jvp(lambda s: rule(weights, s), (beside,), (step,))[1]  # noqa: B023
                assert np.allclose(tangent, fd, atol=1e-6) != wrong, (side, wrong)


@pytest.mark.slow  # a whole module checked (about 4 s); the docstring reading below stays fast
def test_a_rule_behind_a_kernel_that_takes_documented_integer_coordinates_is_checked_where_its_function_calls_it():
    """`spmv(rows, cols, values, x)` documents `rows: [nnz; int32]: the row indices` and hands them to a kernel that
    rejects any other buffer type; its custom_jvp is made anew on every call. Before: float coordinates, every
    candidate refused, both rules NOT VERIFIED. Now the documented operands are drawn as in-range integers, the
    rules are checked on the values the function passes them (their twins made by the eager run), and the doubled
    rule is found."""
    _, data = check_json(f"{ACC / 'documented_indices.py'}", ACC)
    assert not data["summary"]["not_verified"], data["summary"]
    right, doubled = _findings(data, "spmv)"), _findings(data, "spmv_doubled)")
    assert [c for c, s in right if s != "info"] == [], right
    assert ("JXG024", "warning") in doubled, doubled


def test_operands_a_docstring_says_hold_integers_or_indices_are_index_positions():
    from jaxdiag._run._static_use import documented_indices

    def spmv(rows, cols, values, x, refraction):
        """Multiply.

        Args:
            rows: [nnz; int32]: the row indices of the nonzeros
            cols (array of integers): the columns
            values: [nnz; float32]: the nonzeros
            x: the vector
            refraction: the refractive index of the medium
        """

    subject = Subject(label="spmv", kind="function", obj=spmv, specs=[], module=__name__)
    assert documented_indices(subject, ["rows", "cols", "values", "x", "refraction"]) == {0, 1}


@pytest.mark.parametrize("name, wrong", [("rectify_p", False), ("rectify_doubled_p", True)])
def test_a_primitive_jvp_on_a_kink_of_its_example_is_judged_beside_it(name, wrong):
    """A primitive ReLU's JVP `where(x > 0, t, 0)` checked at values with zeros (what a recording or a documented
    call passes): central differences there give the mean slope 0.5, so the right rule was a JXG001; the doubled one
    is wrong beside the kink and still found."""
    import importlib.util

    import numpy as np

    from jaxdiag._checks._base import Options
    from jaxdiag._harness.cache import SubjectCache
    from jaxdiag._loading._inputs import ArgSpec
    from jaxdiag._run import _engine

    spec = importlib.util.spec_from_file_location("kink_example", ACC / "kink_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    subject = Subject(label=name, kind="primitive", obj=getattr(module, name),
                      specs=[ArgSpec(np.dtype(np.float32), (5,))], module="kink_example")
    cache = SubjectCache()
    cache.example, cache.observed = [np.array([1.5, 0.0, -2.0, 0.0, 0.5], np.float32)], True
    report, _ = _engine.run_subject_by_check(subject, Options(command="grad"), cache, only={"jvp-reference"})
    codes = [f.code for f in report.findings if f.severity in ("error", "warning")]
    assert codes == (["JXG001"] if wrong else []), report.findings


@pytest.mark.slow  # a whole module checked (about 3 s); the helpers below stay fast
def test_the_rules_of_a_functions_complex_branch_are_checked_where_it_calls_them_on_complex_inputs():
    """`double(x)` binds `double_complex_p` only for complex `x`, and no kernel's inputs can be inferred on its own:
    the complex primitives were NOT VERIFIED. The caller's code names a complex dtype, so it is run again on complex
    inputs, where it binds them; the wrong one is found."""
    _, data = check_json(f"{ACC / 'dtype_dispatch.py'}", ACC)
    assert not data["summary"]["not_verified"], data["summary"]
    assert [c for c, s in _findings(data, ":double_complex_p") if s != "info"] == []
    assert ("JXG001", "warning") in _findings(data, ":double_complex_wrong_p")


def test_a_caller_naming_a_complex_dtype_is_run_again_on_complex_float_operands():
    import numpy as np

    from jaxdiag._loading._inputs import ArgSpec
    from jaxdiag._run._climb import complex_variant, names_complex

    def dispatches(x):
        return x.astype("complex64") if x.dtype.kind == "c" else x

    def real_only(x):
        return x * 2

    kernels = SimpleNamespace()

    def by_kernel_name(x):  # the complex branch named only by its kernel's suffix
        return kernels.solve_c128(x) if x.dtype.kind == "c" else kernels.solve_f64(x)

    def by_lookalike_names(x):  # a letter before or a digit after the suffix: no dtype
        return kernels.abc64(x) + kernels.c640(x)

    assert names_complex(dispatches) and not names_complex(real_only)
    assert names_complex(by_kernel_name) and not names_complex(by_lookalike_names)
    index, value = ArgSpec(np.dtype(np.int32), (3,), "0..2"), ArgSpec(np.dtype(np.float64), (3,))
    assert complex_variant([index, value]) == [index, ArgSpec(np.dtype(np.complex128), (3,))]
    assert complex_variant([index]) is None


# --- a package's documented entry points state the contract of the undocumented rules they forward to ------------
# (tests/data/wrapper_docs: the rules in `_kernels`, their documentation in `api`, which the package exports)

@pytest.mark.slow  # the whole package checked (about 10 s); the helpers below stay fast
def test_rules_are_checked_inside_the_contract_their_documented_wrapper_states():
    """Before: `A` drawn as any square matrix (the symmetric-only cotangent of a correct solve was a false alarm),
    and the constraint count equal to or above the variable count (a singular KKT system, so a false alarm). A
    ridge's None where the ridge moves the solution by parts in 10^4 is no dropped gradient; where it moves it
    materially, it is. The wrong twins are still reported."""
    _, data = check_json(f"{DATA / 'wrapper_docs'}", DATA)
    assert not data["summary"]["not_verified"], data["summary"]
    for clean in (":spd_solve", ":constrained_minimum", ":ridge_solve"):
        assert [c for c, s in _findings(data, clean) if s != "info"] == [], clean
    assert ("JXG024", "warning") in _findings(data, ":spd_solve_wrong")
    assert ("JXG018", "warning") in _findings(data, ":ridge_solve_material")
    for name in (":constrained_minimum", ":penalised_minimum"):  # the second NaN where its penalty is negative
        (target,) = [t for t in data["targets"] if t["target"].endswith(name)]
        assert [c for c, s in _findings(data, name) if s != "info"] == [], name
        (note,) = [f for f in target["findings"] if f["code"] == "JXN001"]
        Q, _, A, _ = note["inputs"]["specs"][:4]
        assert Q.endswith("@spd") and _dims(A)[0] < _dims(A)[1], note["message"]  # fewer constraints than variables


def _dims(spec: str) -> list[int]:
    return [int(d) for d in spec.partition("[")[2].partition("]")[0].split(",")]


def _wrapper_docs_subject(name: str) -> Subject:
    import importlib
    import sys

    sys.path.insert(0, str(DATA))
    try:
        kernels = importlib.import_module("wrapper_docs._kernels")
    finally:
        sys.path.remove(str(DATA))
    return Subject(label=f"wrapper_docs._kernels:{name}", kind="custom_vjp", obj=getattr(kernels, name), specs=[],
                   module="wrapper_docs._kernels")


def test_a_wrapper_of_the_package_documents_the_shapes_and_domains_of_the_rule_it_calls():
    from jaxdiag._run._operand_kinds import documented_domains
    from jaxdiag._run._stated_shapes import stated_axes

    subject = _wrapper_docs_subject("constrained_minimum")
    assert stated_axes(subject, ["Q", "q", "A", "b"])[0] == {0: ("n", "n"), 1: ("n",), 2: ("m", "n"), 3: ("m",)}
    assert documented_domains(subject) == {0: "spd"}
    assert documented_domains(_wrapper_docs_subject("spd_solve")) == {0: "spd"}


def test_stated_sizes_are_tried_in_both_orders_and_a_type_in_brackets_is_no_shape():
    import numpy as np

    from jaxdiag._run._stated_shapes import _doc_axes, stated_rungs

    rungs = list(stated_rungs([0, 1], [{0: ("m", "n"), 1: ("n",)}], np.dtype(np.float32)))
    shapes = [[s.shape for s in rung] for rung in rungs]
    assert [(2, 3), (3,)] in shapes and [(3, 2), (2,)] in shapes
    doc = """Args:
        A: ``(m, n)`` matrix.
        w: (n,) weights.
        x (float, optional): a scale.
        y: (float, optional) a scale.
    """
    assert _doc_axes(doc, ["A", "w", "x", "y"]) == {"A": ("m", "n"), "w": ("n",)}


@pytest.mark.slow  # two solvers checked through finite differences (about 3 s)
def test_a_weight_that_barely_moves_a_solution_is_no_dropped_gradient_where_it_moves_it_is():
    """`relaxed_root`'s bwd is relaxed by design (JXG014 warning), so each argument is compared alone; its None for a
    weight that moves the root by parts in 10^4 was a JXG018. Where the weight moves the root materially, it is."""
    import importlib
    import sys

    import jaxdiag

    sys.path.insert(0, str(ACC))
    try:
        solvers = importlib.import_module("relaxed_solver")
    finally:
        sys.path.remove(str(ACC))
    relaxed = [f.code for f in jaxdiag.check_grad(solvers.relaxed_root, "f32[3]", "f32[3]").findings]
    weighted = [f.code for f in jaxdiag.check_grad(solvers.weighted_root, "f32[3]", "f32[3]").findings]
    assert "JXG014" in relaxed and "JXG018" not in relaxed, relaxed
    assert "JXG018" in weighted, weighted


@pytest.mark.slow  # the module checked, its public function traced once per backend (about 5 s)
def test_every_backend_of_a_dispatch_table_is_reached_and_a_wrong_one_reported():
    """`normalise(x, backend)` calls `_BACKENDS[backend](x)`: before, no function was known to reach the backends'
    callback sites, and the second backend, reached only with `backend=Backend.WHOLE`, was never checked."""
    _, data = check_json(f"{ACC / 'dispatch_table.py'}", ACC)
    assert not data["summary"]["not_verified"], data["summary"]
    (whole,) = [t for t in data["targets"] if t["target"].endswith("backend=Backend.WHOLE")]
    assert [f["code"] for f in whole["findings"] if f["severity"] != "info"] == ["JXB021"]
    assert [f["location"]["line"] for f in whole["findings"] if f["code"] == "JXB021"] == [_line_of(
        ACC / "dispatch_table.py", "return jax.pure_callback(_whole")]


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_function_reading_a_table_of_functions_calls_its_members_and_each_key_selects_one():
    import importlib
    import sys

    from jaxdiag._jobs._reach_plan import _calls_by_function, table_selectors

    sys.path.insert(0, str(ACC))
    try:
        module = importlib.import_module("dispatch_table")
    finally:
        sys.path.remove(str(ACC))
    assert {"_rows", "_flat"} <= _calls_by_function(module)["normalise"]
    assert table_selectors(module, "normalise") == [
        ("backend", [(module.Backend.ROWS, "_rows"), (module.Backend.WHOLE, "_flat")])]
    assert table_selectors(module, "_rows") == []


@pytest.mark.slow  # three factories called and their rules checked (about 4 s)
def test_a_factory_closing_over_a_documented_matrix_is_called_with_one_and_its_rule_checked():
    """Before, no value could be given to `A : scipy.sparse.csr_matrix` or `W: np.ndarray`: the rules were never
    checked (JXN012). Now each factory gets a host matrix of the stated kind (reported as assumed), and the backward
    pass that multiplies by A instead of its transpose is found."""
    _, data = check_json(f"{ACC / 'matrix_factory.py'}", ACC)
    assert not data["summary"]["not_verified"], data["summary"]
    made = {t["target"].partition("made by ")[2].partition("(")[0]: t for t in data["targets"]}
    assert set(made) == {"matrix_factory:make_matvec", "matrix_factory:make_wrong_matvec",
                         "matrix_factory:make_dense_matvec"}
    assert "(A=csr_matrix f32[3,3] (assumed))" in made["matrix_factory:make_matvec"]["target"]
    for right in ("matrix_factory:make_matvec", "matrix_factory:make_dense_matvec"):
        assert [f["code"] for f in made[right]["findings"] if f["severity"] != "info"] == [], right
    assert ("JXG024", "warning") in [(f["code"], f["severity"]) for f in
                                     made["matrix_factory:make_wrong_matvec"]["findings"]]


def test_a_factory_parameter_typed_as_a_matrix_gets_a_nonsymmetric_host_matrix_of_that_kind():
    import inspect

    import numpy as np
    import scipy.sparse

    from jaxdiag._jobs._rule_factories import _assumed_value

    plain = inspect.Parameter("A", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    sparse = _assumed_value(plain, "scipy.sparse.csr_matrix Constant sparse matrix.")
    dense = _assumed_value(inspect.Parameter("W", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=np.ndarray))
    assert scipy.sparse.issparse(sparse) and isinstance(dense, np.ndarray) and dense.shape == (3, 3)
    assert not np.allclose(dense, dense.T) and abs(np.linalg.det(dense)) > 1  # a transpose mix-up shows
    assert repr(_assumed_value(plain, "the weights, a float")) == repr(_assumed_value(plain))  # no type word


def test_the_well_posed_test_takes_keys_and_complex_results_and_flags_a_singular_solve():
    """A stated rung may hold a PRNG key and return complex values: the sensitivity reads floats only (it raised on a
    key before, an internal error). A KKT system with more constraints than variables, solved in float32, moves by
    far more than its inputs; with fewer, it does not."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdiag._loading._inputs import ArgSpec, key_spec
    from jaxdiag._run._well_posed import ILL_POSED, _relative_sensitivity

    def noisy(x, key):  # returns a typed key, which NumPy cannot convert
        return x + 1j * jax.random.normal(key, x.shape), jax.random.key(0)

    f32 = np.dtype(np.float32)
    subject = Subject(label="t:noisy", kind="function", obj=noisy, specs=[ArgSpec(f32, (3,)), key_spec(())])
    assert _relative_sensitivity(subject, "normal") < ILL_POSED

    def kkt(Q, A):
        m = A.shape[0]
        system = jnp.block([[Q @ Q.T + jnp.eye(Q.shape[0]), A.T], [A, jnp.zeros((m, m))]])
        return jnp.linalg.solve(system, jnp.ones(system.shape[0]))

    sensitivities = [_relative_sensitivity(Subject(label="t:kkt", kind="function", obj=kkt, module=__name__,
                                                   specs=[ArgSpec(f32, (n, n)), ArgSpec(f32, (m, n))]), "normal")
                     for n, m in ((3, 2), (2, 3))]
    assert sensitivities[0] < ILL_POSED and (sensitivities[1] is None or sensitivities[1] > ILL_POSED), sensitivities


@pytest.mark.slow  # a module of two primitives checked abstractly (about 3 s)
def test_a_jvp_rule_refusing_on_purpose_is_graded_as_a_refusal_by_the_abstract_checks_too():
    """A kernel-call primitive that cannot run here (CUDA lowering only) is checked by tracing alone; its JVP rule
    raises NotImplementedError by design. Before, the abstract JVP and VJP checks called that a crashed rule
    (JXG017) while the concrete checks call it a refusal (JXG025); a rule failing by accident is still JXG017."""
    _, data = check_json(f"{ACC / 'gpu_kernel_call.py'}", ACC)
    codes = {t["target"].rpartition(":")[2]: [f["code"] for f in t["findings"]] for t in data["targets"]}
    assert codes["kernel_call_p"].count("JXG025") == 2 and "JXG017" not in codes["kernel_call_p"]
    assert "JXG017" in codes["kernel_call_broken_p"] and "JXG025" not in codes["kernel_call_broken_p"]
    assert "JXN013" in codes["kernel_call_p"]  # checked by tracing only
    # a JAX name removed from this release, met by the abstract checks: the removed API, named
    assert "JXR008" in codes["kernel_call_stale_p"] and "JXG017" not in codes["kernel_call_stale_p"]


def test_a_rule_calling_collectives_over_a_literal_axis_is_checked_on_two_devices_of_it(tmp_path):
    """A tensor-parallel rule (`lax.psum(x, 'model')` inside) cannot run on any input outside a shard_map: before,
    no inputs were inferred; now it runs on two devices of 'model' (JXN021), and a bwd that forgets to hand every
    device its cotangent is caught there."""
    import jaxdiag

    (tmp_path / "tp_rule.py").write_text(
        "import jax\n\nRING = [(0, 1), (1, 0)]\n\n\n@jax.custom_vjp\ndef shift(x):\n"
        "    return jax.lax.ppermute(x, 'model', RING)\n\n\n"
        "shift.defvjp(lambda x: (shift(x), None), lambda _, g: (jax.lax.ppermute(g, 'model', RING[::-1]),))\n\n\n"
        "@jax.custom_vjp\ndef gathered(x):\n    return jax.lax.all_gather(x, 'model')\n\n\n"
        "gathered.defvjp(lambda x: (gathered(x), None), lambda _, g: (g[jax.lax.axis_index('model')],))\n")
    from jaxdiag._compat import _sharding
    from jaxdiag._core._errors import InferenceError

    if not _sharding.types_varying_values():  # this JAX cannot tell a psum's output from an all_gather's
        with pytest.raises(InferenceError, match="could not infer example inputs"):
            jaxdiag.check_grad(f"{tmp_path / 'tp_rule.py'}:shift")
        return
    report = jaxdiag.check_grad(f"{tmp_path / 'tp_rule.py'}:shift")
    assert [f.code for f in report.findings if f.severity != "info"] == [] and report.ok
    assert "JXN021" in [f.code for f in report.findings]
    wrong = jaxdiag.check_grad(f"{tmp_path / 'tp_rule.py'}:gathered")
    # the other devices' cotangents are dropped (shard_map: all_gather's transpose sums them, `psum_scatter`)
    assert "JXG024" in [f.code for f in wrong.findings]


def test_a_static_naming_a_mapped_axis_is_never_given_a_drawn_value():
    """`axis_name` in nondiff_argnums, documented in words the docstring reading takes for a number: before, the float
    ladder gave it 0.5 (a collective then failed on "unbound axis name: 0.5", a JXG017 outside the contract); it
    names the axis now, by its own name, and the rule runs on that axis's devices (`_named_axis`)."""
    import jax

    from jaxdiag._run._static_values import static_templates, static_without_default

    def gathered(x, axis_name: str):
        """All-gathered, halved.

        Args:
            x: local shard.
            axis_name: JAX collective axis name for inter-device communication.
        """
        return jax.lax.all_gather(x, axis_name=axis_name) * 0.5

    rule = jax.custom_vjp(gathered, nondiff_argnums=(1,))
    subject = Subject("m:gathered", "custom_vjp", rule, specs=[])
    assert static_templates(subject)[1].value == "axis_name"
    assert [(name, "mapped axis" in where) for name, where in static_without_default(subject)] == [("axis_name", True)]


def test_the_users_code_does_not_see_jaxdiags_command_line(monkeypatch, capsys):
    """A library parsing the program's command line on first use (absl's flags) met jaxdiag's options and raised
    on every call; through the console entry point it sees the program name alone, and the argument list is handed
    back afterwards."""
    from jaxdiag._parent._cli import main

    argv = ["jaxdiag", "check", str(ACC / "command_line_options.py"), "--keep-going", "-j", "1", "--timeout", "0",
            "--no-cache", "--format", "json"]
    monkeypatch.setattr("sys.argv", list(argv))
    with pytest.raises(SystemExit) as ended:
        main()
    out = capsys.readouterr().out
    assert ended.value.code == 0, out
    import sys

    assert sys.argv == argv


def test_a_rule_made_on_every_call_of_an_op_object_is_checked_for_each_subclass():
    """`Op.__call__` makes a custom_vjp from the subclass's `_fwd`/`_bwd` on every call, and the module holds
    instances of the subclasses in a registry: skipped before as made at import (instances hold nothing), and a
    site reached through one subclass did not stand for the others."""
    _, data = check_json(str(ACC / "op_objects.py"), ACC)
    by_carrier = {t["target"].rpartition("inside ")[2]: t for t in data["targets"]}
    square, cube = by_carrier["op_objects:square)"], by_carrier["op_objects:cube)"]
    assert any(c["status"] == "passed" for c in square["checks"])
    assert not [f for f in square["findings"] if f["severity"] != "info"]
    assert [f["code"] for f in cube["findings"] if f["severity"] == "warning"] == ["JXG024"], cube["findings"]


@pytest.mark.slow  # one rule checked end to end (about 3 s)
def test_a_rule_is_not_held_to_a_derivative_where_the_primal_itself_is_singular():
    """`clip(floor(x / threshold), 0, m)` at threshold = 0: finite only by the clip's saturation (or the compiler
    rewriting `0 * floor(x / 0)` as a select), NaN op by op. The rule's NaN there is no defect (JXG027 before)."""
    _, data = check_json(str(ACC / "saturated_step.py"), ACC)
    (target,) = data["targets"]
    assert not [f for f in target["findings"] if f["severity"] != "info"], target["findings"]
    assert any(c["name"] == "derivative-boundary" and c["status"] == "passed" for c in target["checks"])


def test_saturation_is_told_from_a_select_discarding_the_infinite_case():
    import jax
    import jax.numpy as jnp

    from jaxdiag import _compat

    x, zero = jnp.array([0.5, -2.0]), jnp.zeros(2)
    clipped = jax.make_jaxpr(lambda x, t: jnp.clip(x / t, -1.0, 1.0))(x, zero)
    selected = jax.make_jaxpr(lambda x, t: jnp.where(t == 0, 0.0, x / t))(x, zero)
    assert _compat.saturated_nonfinite(clipped, [x, zero])[0]
    assert not _compat.saturated_nonfinite(selected, [x, zero])[0]


@pytest.mark.slow  # four rules checked end to end (about 5 s); the sentence reading below stays fast
def test_a_zero_gradient_the_rules_docstring_states_is_what_it_means():
    """A bwd returning zeros for the teacher (JXG018), a JVP ignoring `scale` (JXG034): reported unless the rule's
    documentation says that argument gets no gradient."""
    _, data = check_json(str(ACC / "stated_zero_gradient.py"), ACC)
    assert _findings(data, ":distill") == _findings(data, ":scaled_tanh") == [("JXN001", "info")]
    assert ("JXG018", "warning") in _findings(data, ":distill_silent")
    assert ("JXG034", "warning") in _findings(data, ":scaled_tanh_silent")  # a JVP ignoring scale, unsaid


def test_an_argument_said_to_get_no_gradient(tmp_path):
    from jaxdiag._core._documented import states_no_gradient
    from jaxdiag._core._report import Location

    source = tmp_path / "rules.py"
    source.write_text("def a(res, g):\n    'Analytic backward; teacher → 0.'\n\n\n"
                      "def b(res, g):\n    'No gradient flows to `mask`.'\n\n\n"
                      "def c(res, g):\n    'Per-row weights, zero for padding rows.'\n\n\n"
                      "def d(res, g):\n    'dteacher_logits = 0 here.'\n\n\n"
                      "def e(x):\n    'sin(x) / x, accurate as x → 0.'\n")
    at = [Location(str(source), line, "") for line in (1, 5, 9, 13, 17)]
    assert states_no_gradient([at[0]], "teacher") == "teacher → 0."  # a sentence ends at ";" too
    assert states_no_gradient([at[1]], "mask") == "No gradient flows to `mask`."
    assert states_no_gradient([at[2]], "weights") is None  # a value of zero, not a gradient
    assert states_no_gradient([at[3]], "teacher") is None  # another name
    assert states_no_gradient([at[4]], "x") is None  # a limit, not a gradient set to zero


@pytest.mark.slow  # three rules checked end to end (about 4 s); the name reading below stays fast
def test_the_two_ends_of_a_bound_pair_are_drawn_in_order():
    """Drawn independently, `lo` passed `hi` at some entries: the tutorial's gradient clip got a JXG036 error (its
    bwd clips a zero cotangent into an interval without 0). Drawn as a pair, the clip and the cdf whose JVP knows
    its support are clean; a JVP that forgets the support is still caught."""
    _, data = check_json(str(ACC / "bound_pairs.py"), ACC)
    assert _findings(data, ":clip_gradient") == _findings(data, ":uniform_cdf") == [("JXN001", "info")]
    assert ("JXG024", "warning") in _findings(data, ":uniform_cdf_unclipped_jvp")


def test_a_bound_pair_is_read_from_the_parameter_names_and_drawn_inside_the_runs_domain():
    import numpy as np

    from jaxdiag._loading._inputs import ArgSpec, draw, parse_spec
    from jaxdiag._run._operand_kinds import bound_pairs

    assert bound_pairs(["x", "alpha", "low", "high"]) == {2: "lower", 3: "upper"}
    assert bound_pairs(["x_min", "x_max", "y"]) == {0: "lower", 1: "upper"}
    assert bound_pairs(["minval", "maxval"]) == bound_pairs(["LB", "UB"]) == {0: "lower", 1: "upper"}
    assert bound_pairs(["lo", "x"]) == bound_pairs(["slope", "shift"]) == {}  # no partner, no pair
    rng = np.random.default_rng(0)
    lower, upper = ArgSpec(np.dtype(np.float32), (200,), "lower"), parse_spec("f32[200]@upper")
    for run in ("normal", "positive", "negative", "unit"):
        lo, hi = draw(lower, rng, run), draw(upper, rng, run)
        assert (lo < hi).all()
        assert run != "positive" or (lo > 0).all()
        assert run != "normal" or ((lo < 0) & (hi > 0)).all()  # a clip's bounds hold 0


@pytest.mark.slow  # a package checked end to end (about 3 s); the source reading below stays fast
def test_a_primitive_its_package_interprets_itself_needs_no_mlir_lowering():
    """An exporter's primitive exists for the package's own jaxpr interpreter: no JXR004 (the skip says why). The
    same kind of primitive in a package without one is still reported (samples/jxr004_bad.py)."""
    _, data = check_json(str(ACC / "exporterpkg"), ACC)
    (target,) = data["targets"]
    assert "JXR004" not in {f["code"] for f in target["findings"]}
    (lowering,) = [c for c in target["checks"] if c["name"] == "registration-lowering"]
    assert lowering["status"] == "skipped" and "convert.py:16" in lowering["detail"]


def test_the_jaxpr_interpreter_of_a_package_is_found_in_its_source(monkeypatch, tmp_path):
    import jax

    from jaxdiag._checks._interpreted import lowered_by_own_interpreter

    monkeypatch.syspath_prepend(str(ACC))
    from exporterpkg import convert, ops  # as the walk does: the handler table lives in convert

    assert convert.HANDLERS
    assert lowered_by_own_interpreter(ops.tanh_p, ops).line == 16  # HANDLERS.get(eqn.primitive.name)
    assert lowered_by_own_interpreter(jax.lax.sin_p, ops) is None  # lowered: nothing to explain
    (tmp_path / "plainpkg").mkdir()
    (tmp_path / "plainpkg" / "__init__.py").write_text("from jax.extend.core import Primitive\nmy_p = Primitive('m')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import plainpkg

    assert lowered_by_own_interpreter(plainpkg.my_p, plainpkg) is None  # no interpreter: JXR004 stands
    from jax.extend.core import Primitive

    stray_p = Primitive("exporter.stray")  # bound by the package, named by no handler table: its JXR004 stands
    stray_p.def_abstract_eval(lambda x: x)
    monkeypatch.setattr(ops, "stray_p", stray_p, raising=False)
    assert lowered_by_own_interpreter(stray_p, ops) is None


@pytest.mark.slow  # a rule reached through its docstring example (about 2 s)
def test_a_string_in_a_docstring_example_is_a_static_argument_not_a_spec():
    """`contract('bk,kn->bn', x, w)`: the string was parsed as an array SPEC, and the package's whole run ended as a
    usage error (exit 2) before any check."""
    code, data = check_json(str(ACC / "documented_subscripts.py"), ACC)
    assert code == 0 and data["summary"]["checked"] == data["summary"]["discovered"] == 1, data["summary"]


@pytest.mark.slow  # one callback target end to end (about 2 s)
def test_a_callback_needing_a_module_that_is_not_installed_is_a_missing_dependency():
    code, data = check_json(str(ACC / "callback_backend.py"), ACC)
    assert code == 5 and [n["reason"] for n in data["summary"]["not_verified"]] == ["dependency-missing"]
    (note,) = [f for t in data["targets"] for f in t["findings"] if f["code"] == "JXN011"]
    assert "'not_installed_solver'" in note["message"]


def test_the_words_of_a_parameters_type_name_are_read_for_its_domain():
    import inspect

    from jaxdiag._run._operand_kinds import _annotated_domains

    types = ["SymmetricTensor2", "PSDMatrix", "positive_float", "NonSymmetricMatrix", "Tensor", inspect.Parameter.empty]
    params = [inspect.Parameter(f"p{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
              for i, annotation in enumerate(types)]
    assert _annotated_domains(params) == {0: "spd", 1: "spd", 2: "positive"}  # "Non Symmetric" is denied


@pytest.mark.slow  # two targets end to end (about 4 s)
def test_a_parameter_type_naming_a_domain_states_the_values_it_holds():
    """`sig: SymmetricTensor`: a symmetric tensor's eigenvalue JVP was checked on a general matrix and reported
    wrong (JXG024) though the package's type says the values are symmetric."""
    _, data = check_json(str(ACC / "annotated_domain.py"), ACC)
    found = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert [f["code"] for f in found["principal_values"]["findings"] if f["severity"] != "info"] == []
    assert "@spd" in json.dumps(found["principal_values"]["findings"])  # inferred on symmetric values
    assert "JXG024" in {f["code"] for f in found["principal_values_general"]["findings"]}


@pytest.mark.slow  # one target end to end (about 2 s)
def test_a_size_that_must_be_a_multiple_is_tried_at_aligned_sizes():
    """"the last dim must be a multiple of 16": no rung of the plain ladder (3, 2x3, 3x3, 2x3x4, 4x4) is one, and
    the rule was not checked (JXN004)."""
    code, data = check_json(str(ACC / "tiled_kernel.py"), ACC)
    (target,) = data["targets"]
    assert code == 0 and target["verified"], target["findings"]
    assert "f32[128]" in json.dumps(target["findings"])


@pytest.mark.slow  # two packages end to end (about 6 s)
def test_a_keyword_only_array_of_a_public_function_is_drawn_like_its_other_operands(tmp_path):
    """`apply(x, *, weights: Array, clip: bool)` builds its custom_vjp around `weights`: with no literal for the
    keyword-only arguments at any call site, `apply` was never run and the rule was not checkable (JXN012). The
    array is now drawn after the positional ones (the flag off), and a wrong bwd there is found."""
    _, data = check_json(str(ACC / "keyword_arrays.py"), ACC)
    (target,) = data["targets"]
    assert target["verified"] and "weights=" in json.dumps(target["findings"]), target["findings"]
    wrong = tmp_path / "keyword_arrays_wrong.py"
    wrong.write_text((ACC / "keyword_arrays.py").read_text().replace("(g * weights,)", "(2 * g * weights,)"))
    _, data = check_json(str(wrong), tmp_path)
    assert "JXG024" in {f["code"] for t in data["targets"] for f in t["findings"]}


@pytest.mark.slow  # two factories end to end (about 4 s)
def test_a_decorator_factory_is_called_with_a_stand_in_for_the_function_it_wraps():
    """`with_central_difference_jvp(func)` returns the custom_jvp it makes around `func`; no call site passes a
    function, so the rule was never made (JXN012). Called with jaxdiag's stand-in, both rules are checked; the wrong
    one's finding is a note that names the stand-in (what the rule computes depends on it)."""
    code, data = check_json(str(ACC / "decorator_factory.py"), ACC)
    found = {t["target"].partition(" (made by")[0].rpartition(":")[2]: t for t in data["targets"]}
    assert set(found) == {"with_central_difference_jvp", "with_backward_jvp"}, list(found)
    assert all(t["verified"] for t in found.values())
    (note,) = [f for f in found["with_backward_jvp"]["findings"] if f["code"] == "JXN003"]
    assert "JXG024 not judged" in note["message"] and "stand-in" in note["message"]
    assert not [f for f in found["with_central_difference_jvp"]["findings"] if "JXG024" in f["message"]]


@pytest.mark.slow  # one foreign call end to end (about 2 s)
def test_a_foreign_call_with_no_handler_on_this_platform_says_it_cannot_run_here():
    code, data = check_json(str(ACC / "ffi_accelerator_only.py"), ACC)
    assert code == 5 and [n["reason"] for n in data["summary"]["not_verified"]] == ["no-check-ran"]
    (note,) = [f for t in data["targets"] for f in t["findings"]]
    assert note["code"] == "JXN013" and "solve_mg_cuda_only" in note["message"]  # XLA's words vary by release


@pytest.mark.slow  # one primitive end to end (about 2 s)
def test_a_primitive_bound_through_cls_in_its_class_gets_the_params_of_that_call():
    """`cls._PRIM.bind(x, y, dimension=0)` in a function a classmethod builds: before, no bind site was found and
    the primitive was not checkable (`dimension` had no value)."""
    code, data = check_json(str(ACC / "class_bound.py"), ACC)
    assert code == 0 and data["summary"]["checked"] == 1, data["summary"]
    (target,) = data["targets"]
    assert {c["name"]: c["status"] for c in target["checks"]}["batching-vs-loop"] == "passed"


@pytest.mark.slow  # a check and the script it writes (about 6 s)
def test_a_repro_of_a_rule_on_a_named_axis_runs_it_on_the_axis_devices_in_plain_jax(tmp_path):
    """The script vmaps the user's own rule over the devices of its axis with the out_axes the check used: it
    fails on the rule that forgot to send the cotangent back, where calling the rule plainly would only say
    "unbound axis name"."""
    import subprocess
    import sys

    from clirun import Runner

    from jaxdiag._compat import _sharding
    from jaxdiag._parent._cli import app

    if not _sharding.types_varying_values():
        pytest.skip("this JAX types no values as varying over a mesh axis: rules on a named axis are not run")

    (tmp_path / "ring.py").write_text(
        "import jax\n\n\n@jax.custom_vjp\ndef shift(x):\n"
        "    return jax.lax.ppermute(x, 'sp', [(0, 1), (1, 0)]) * 2.0\n\n\n"
        "shift.defvjp(lambda x: (shift(x), None), lambda _, g: (g * 2.0,))\n")
    result = Runner().invoke(app, ["grad", "ring:shift", "--app-dir", str(tmp_path), "--repro", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    (script,) = (tmp_path / "r").glob("*.py")
    assert "axis_name='sp', axis_size=2" in script.read_text()
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert ran.returncode != 0 and "AssertionError" in ran.stderr, ran.stderr[-2000:]


def test_a_static_passed_as_a_collectives_axis_names_a_mapped_axis_whatever_it_is_called():
    """`vocab_axis` (no `axis_name` in its name) is what `lax.psum(x, vocab_axis)` reduces over: before, a caller's
    None was taken for it and every call failed on "unbound axis name: None"."""
    import jax

    from jaxdiag._run._static_use import collective_axes
    from jaxdiag._run._static_values import static_templates

    def vocab_parallel_lse(logits_local, vocab_axis):
        local = jax.numpy.max(logits_local, axis=-1)
        return jax.lax.pmax(local, vocab_axis) + jax.lax.axis_index(axis_name=vocab_axis)

    rule = jax.custom_jvp(vocab_parallel_lse, nondiff_argnums=(1,))
    subject = Subject("m:vocab_parallel_lse", "custom_jvp", rule, specs=[])
    assert collective_axes(subject, ["logits_local", "vocab_axis"]) == {"vocab_axis"}
    assert static_templates(subject)[1].value == "vocab_axis"


def test_a_call_through_numpys_or_jaxs_namespace_is_not_a_bind_site_of_a_holder_of_the_same_name(tmp_path,
                                                                                                 monkeypatch):
    """An exporter keeps an object named `concatenate` holding its primitive; its modules also call
    `jnp.concatenate(..., axis=1)`. Those calls were read as binds of the primitive, whose `axis=1` then met the
    abstract eval's own `dimension` (a JXR003 about params the package never binds with)."""
    import importlib

    from jaxdiag._loading._passthrough import bind_site_params

    (tmp_path / "holder_mod.py").write_text(
        "import jax.numpy as jnp\n\n\ndef stacked(a, b):\n    return jnp.concatenate([a, b], axis=1)\n\n\n"
        "def joined(a, b):\n    return concatenate(a, b, dimension=0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("holder_mod")
    assert bind_site_params({"concatenate"}, [module], None) == {"dimension": 0}


@pytest.mark.slow  # one callback target end to end (about 3 s)
def test_a_callback_keeping_state_between_calls_is_not_judged_against_a_loop():
    """A host schedule whose `pure_callback` updates a history on every call: vmap and the per-example loop differ
    because each call changes the next value, not because of batching. It was JXB005 ("the defect is elsewhere in
    __call__"); the per-example loop, run twice on the same examples, now shows the state and the check says so."""
    _, data = check_json(str(ACC / "stateful_callback.py"), ACC)
    (target,) = [t for t in data["targets"] if "__call__" in t["target"]]
    assert not [f for f in target["findings"] if f["severity"] != "info"], target["findings"]
    (note,) = [f for f in target["findings"] if f["code"] == "JXN003" and "called again" in f["message"]]
    assert note["location"]["line"] > 0 and "stateful_callback.py" in note["location"]["path"]


@pytest.mark.slow  # one factory product end to end (about 3 s)
def test_a_function_returning_a_function_is_not_differentiated_and_is_no_internal_error():
    """`host_effect(order)` gives `eff`, and `eff(host, *outs)` gives the effect body: `eff` returns a function.
    The grad checks converted its output to arrays and failed inside jaxdiag (exit 3, three internal errors), and the
    checks that did run made it "verified". No check applies to a function returning a function: the factory is
    not checkable (exit 5), and the report says what its product returns."""
    code, data = check_json(str(ACC / "returns_a_function.py"), ACC)
    assert code == 5 and data["summary"]["internal_errors"] == 0 and data["summary"]["checked"] == 0, data["summary"]
    (target,) = data["targets"]
    (note,) = target["findings"]
    assert note["code"] == "JXN012" and "it returns function" in note["message"], note


def test_a_product_returning_a_function_skips_every_check_saying_what_it_returns():
    import jaxdiag

    from tests.data.acc.returns_a_function import host_effect

    report = jaxdiag.check_batching(host_effect(lambda tok: tok), lambda x: (x,), "f32[3]")
    (target,) = report.targets
    assert not report.ok and not [c for c in target.checks if c.status == "passed"], target.checks
    impl = next(c for c in target.checks if c.name == "registration-impl")
    assert impl.status == "skipped" and "it returns function" in impl.detail


@pytest.mark.slow  # three matrix functions end to end (about 4 s)
def test_a_one_operand_function_named_or_summarised_as_spd_takes_spd_matrices():
    """`spd_sqrtm` ("Principal SPD square root") and `_psd_log_differentiable` state their input only in their name or
    summary line; their Daleckii-Krein JVPs were JXG024 on general matrices, where no caller passes them. Drawn SPD
    now, they are clean; the same root named and summarised as a plain matrix function is still reported."""
    _, data = check_json(str(ACC / "spd_matrix_functions.py"), ACC)
    found = {t["target"].rpartition(":")[2]: t for t in data["targets"]}
    assert found["spd_sqrtm"]["inputs"] == found["_psd_log_differentiable"]["inputs"] == ["f32[3,3]@spd"]
    assert not [f for name in ("spd_sqrtm", "_psd_log_differentiable") for f in found[name]["findings"]
                if f["severity"] != "info"]
    assert "JXG024" in {f["code"] for f in found["matrix_root"]["findings"]}


def test_only_spd_words_in_a_name_or_summary_state_the_sole_operands_domain():
    from jaxdiag._checks._base import Subject
    from jaxdiag._run._operand_kinds import documented_domains

    def psd_project(A):
        return A

    def symmetric_part(A):
        """The symmetric part of any square matrix."""
        return A

    def inverse_root(A):
        """Inverse square root of a positive-definite matrix."""
        return A

    def non_spd_fallback(A):
        return A

    def spd_distance(A, B):
        return A

    domains = {f.__name__: documented_domains(Subject(f"m:{f.__name__}", "function", f, specs=[]))
               for f in (psd_project, symmetric_part, inverse_root, non_spd_fallback, spd_distance)}
    assert domains == {"psd_project": {0: "spd"}, "symmetric_part": {}, "inverse_root": {0: "spd"},
                       "non_spd_fallback": {}, "spd_distance": {}}, domains


@pytest.mark.slow  # one filter end to end (about 4 s); the comment reading below stays fast
def test_shapes_commented_after_each_parameter_and_a_none_default_state_are_the_contract():
    """`x: jnp.ndarray,  # (B, time)` states the shape in a comment, and the optional `state=None` is a path the
    filter cannot take: no rung of two arguments ran (JXN004). The commented shapes, with the state passed, run."""
    _, data = check_json(str(ACC / "commented_shapes.py"), ACC)
    (target,) = data["targets"]
    assert target["verified"] and target["inputs"] == ["f32[2,3]", "f32[2,3,4]", "f32[2,4]"], target["findings"]


def test_a_comment_after_a_parameter_states_its_axes():
    from jaxdiag._run._stated_shapes import comment_axes

    def kernel(
        q,  # (batch, seq, dim) queries
        mask=None,  # (batch, seq,)
        scale: float = 1.0,  # a number, no shape
        *rest,
    ):  # (not a parameter)
        return q

    assert comment_axes(kernel) == {"q": ("batch", "seq", "dim"), "mask": ("batch", "seq")}


@pytest.mark.slow  # one rule end to end (about 2 s)
def test_a_zero_derivative_out_of_a_cancellation_is_not_called_nonlinear_where_the_output_is_zero():
    """The JVP's tangent is `(cos^2 + sin^2) t - t`: rounding noise the size of `t`'s terms. The rounding floor
    scaled with the output, exactly zero here, so the noise was JXG020 (a matrix logarithm's skew part at a matrix
    with positive real eigenvalues did this); the inputs the tangent is computed from set the floor there now."""
    _, data = check_json(str(ACC / "zero_output_noise.py"), ACC)
    (target,) = data["targets"]
    assert target["verified"] and not [f for f in target["findings"] if f["severity"] != "info"], target["findings"]


@pytest.mark.slow  # one synthesis end to end (about 3 s); the error reading below stays fast
def test_an_operand_is_tried_at_the_shape_the_targets_own_error_asks_for():
    """(lmax + 1)(lmax + 2) / 2 packed coefficients: no rung has that size, and the function says which it wants
    ("coeffs shape (4,) != expected (15,) for lmax=4"). It was JXN004; the rung is tried again at that shape."""
    _, data = check_json(str(ACC / "error_stated_shape.py"), ACC)
    (target,) = data["targets"]
    size, lmax = int(target["inputs"][0].strip("f32[]")), int(target["inputs"][1])
    assert target["verified"] and size == (lmax + 1) * (lmax + 2) // 2, target["inputs"]


def test_the_shape_an_error_expects_is_read_in_either_order_for_the_one_operand_it_got():
    import numpy as np

    from jaxdiag._loading._inputs import ArgSpec
    from jaxdiag._run._error_shapes import restated_by_error

    f32 = np.dtype(np.float32)
    vector, matrix = ArgSpec(f32, (4,)), ArgSpec(f32, (4, 4))
    assert restated_by_error("ValueError: alm shape (4,) != expected (15,) for lmax=4", [vector, 4, matrix]) == {
        0: ArgSpec(f32, (15,))}
    assert restated_by_error("ValueError: expected shape (2, 6), got (4, 4)", [vector, matrix]) == {
        1: ArgSpec(f32, (2, 6))}
    assert restated_by_error("ValueError: expected (3,), got (4,)", [vector, vector]) == {}  # which one: unsaid
    assert restated_by_error("ValueError: shape (4,) != expected (100000, 100)", [vector]) == {}  # too large
    assert restated_by_error("TypeError: bad operand", [vector]) == {}
