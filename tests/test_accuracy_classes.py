"""Classes of rules that published libraries define and `jaxdiag check` could not check or misjudged, each in a
fixture written in the pattern of the class (no published library imported):

- a kernel whose bind params reach it only from a sparse-matrix-like object (`shape=self.shape`) and whose integer
  operands are a structure: checked at the call its public function's docstring example makes
  (tests/data/inputs_documented); that call comes before inferred inputs (inputs_documented/chunked.py);
- an optional backend's import failure wrapped in the library's own exception: a missing dependency (JXN011), not
  inputs that could not be inferred (tests/data/acc/optional_backend.py);
- a spike function whose docstring states its derivative is a surrogate ("piece-wise linear derivative to use as
  spike-generation surrogate"): JXG033/JXG014 read as marked intended; not without the statement, not for a
  "surrogate model", never for a wrong factor (tests/data/acc/documented_surrogate.py);
- a host callback whose routine refuses the batched derivative order `vmap_method='expand_dims'` hands it: JXG016
  quoting the callback's own error, with a fix for the callback (tests/data/acc/callback_order.py);
- a placeholder class of a missing backend whose metaclass raises ModuleNotFoundError for every attribute: never
  jaxdiag's internal error where it reads attributes of the module's objects (tests/data/acc/backend_placeholder.py);
- a function NaN outside its domain (below a domain edge, as Lambert's W below -1/e): no second-order finding from
  inputs where the primal itself is NaN (tests/data/acc/domain_edge.py);
- a `Primitive` subclass whose impl and abstract eval are methods: registered, not missing (JXR001/JXR002), and its
  batching method checked like any rule (tests/data/acc/method_rules.py, method_rules_bad.py);
- a static (nondiff) argument without a default that only the module's own code fills, through
  `functools.partial(f, max_gradient=1e3)` or a call `f(x, 3)`: checked with that literal
  (tests/data/acc/partial_static.py);
- a kernel that computes in double precision only and rejects 32-bit inputs ("requires float64"): inferred 64-bit
  inputs, under x64 for that run only (tests/data/acc/double_only.py, double_only_bad.py);
- a primitive whose rules take `*args`: the operand count from the library's own `bind` call, and its capitalised
  operand names (`U`, `V`) tried as matrices beside the vectors (tests/data/acc/bound_operands.py);
- a matrix function defined on symmetric positive-definite matrices only: the spd domain, perturbed along
  symmetric directions (tests/data/acc/spd_sqrtm.py, spd_sqrtm_bad.py);
- a custom_vjp whose bwd ignores the cotangent of an output that moves with the inputs only far below the gradient's
  tolerance (a converged residual): no dropped gradient (tests/data/acc/converged_residual.py, _bad.py);
- a straight-through estimator on a primal with a constant slope (`q * scale`): the cotangent passed on unchanged
  is a deliberate surrogate (JXG014), not a uniformly scaled gradient (tests/data/acc/straight_through_scaled.py);
- a zero derivative a rule computes by cancellation (float32 rounding, not exactly linear): no JXG020, while a real
  nonlinear term still is one (tests/data/acc/rounding_tangent.py);
- a gradient dominated by a large affine background, which float32 rounds to a grid coarser than its change over a
  finite-difference step: second derivatives compared with a float64 reference, so no JXG019, while a JVP that
  stops the curvature term's gradient still gets one (tests/data/acc/offset_background.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from clirun import check_json, only_target

import jaxdiag
from jaxdiag._core._errors import dependency_failure
from jaxdiag._jobs._doc_examples import documented_call
from tests.markers import expect_line

DATA = Path(__file__).parent / "data"


def check(target: str) -> tuple[int, dict]:
    return check_json(target, DATA)


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"acc_classes_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------------------------
# A docstring example's call as the inputs of a kernel nobody else can reach
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def documented(monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    yield importlib.import_module("inputs_documented.good")
    for name in [n for n in sys.modules if n.startswith("inputs_documented")]:
        del sys.modules[name]


def test_the_documented_call_is_taken_without_running_the_function(documented, monkeypatch):
    monkeypatch.setattr(documented, "spmv_p", None)  # a run of `spmv` would fail on it: the stand-in must run
    call = documented_call(documented, "spmv")
    assert call is not None
    assert [np.asarray(a).dtype.kind for a in call.args] == ["f", "i", "i", "f"]
    assert call.kwargs == {"shape": (2, 3)}
    np.testing.assert_array_equal(call.args[2], [0, 2, 3])  # the example's own structure, not a draw


def test_no_documented_call_without_an_example_or_when_a_line_before_it_fails(documented, monkeypatch):
    assert documented_call(documented, "row_sums") is None  # no docstring

    def spmv(data, *, shape):
        """>>> data = undefined_name
        >>> spmv(data, shape=(2, 2))
        """

    monkeypatch.setattr(documented, "spmv", spmv)
    assert documented_call(documented, "spmv") is None


def test_a_call_documented_on_python_floats_takes_them_as_arrays_and_keeps_ints_static(documented, monkeypatch):
    """A special function documented as `f(2, 0.5)`: no array argument, but the float is the value it is about (a
    weakly typed float32 scalar, as JAX takes it); the int order stays a Python int. Before, nothing was taken. A
    call passing ints only is still not a documented call of values."""

    def order_value(n, z):
        """>>> round(float(order_value(2, 0.5)), 6)
        0.25
        """

    def counts(n, m):
        """>>> counts(2, 3)
        """

    monkeypatch.setattr(documented, "order_value", order_value, raising=False)
    monkeypatch.setattr(documented, "counts", counts, raising=False)
    call = documented_call(documented, "order_value")
    assert call is not None
    n, z = call.args
    assert n == 2 and type(n) is int
    assert np.shape(z) == () and np.asarray(z).dtype == np.float32 and float(z) == 0.5
    assert documented_call(documented, "counts") is None


def test_an_example_calling_through_the_package_path_under_a_transformation_never_runs_it(documented, monkeypatch):
    """`pkg.total(x)` inside a function the example differentiates: the real function ran the whole example (a
    library's full model, past the per-target time limit). Now the stand-in holds every package attribute during
    the run (restored after), and a call on tracers stops the example without taking them."""
    ran = []

    def total(x):
        """>>> import jax, jax.numpy as jnp
        >>> import inputs_documented.good as pkg
        >>> def loss(x):
        ...     return pkg.total(x)
        >>> jax.grad(loss)(jnp.ones(3))
        """
        ran.append(x)
        return x.sum()

    monkeypatch.setattr(documented, "total", total, raising=False)
    assert documented_call(documented, "total") is None and not ran
    assert documented.total is total


@pytest.mark.slow
def test_the_documented_call_comes_before_inferred_inputs(monkeypatch):
    """`chunked_cumsum(x, chunk=4)` runs on inference's first rung (three values: one chunk, where the backward pass
    that forgets the carry between chunks is right); its docstring example calls it on twelve. Before, the example
    was only a fallback for inference and the bug went unseen; now the author's own call comes first, and a finding
    there is an error (declared values, not inferred ones)."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_documented.chunked")
    target = only_target(data)
    assert target["inputs"] == ["f32[12]", "4"], target["inputs"]
    (note,) = [f for f in target["findings"] if f["code"] == "JXN016"]
    assert "the call its docstring example makes" in note["message"], note["message"]
    assert {(f["code"], f["severity"]) for f in target["findings"] if f["severity"] != "info"} == {
        ("JXG024", "error")} and code == 1


def test_a_docstring_example_runs_once_per_run_and_per_precision(monkeypatch):
    """Every target asks for its callers' documented calls before inferring their inputs: the example's lines run
    once per run (and once more under x64, where its arrays are float64)."""
    import types

    from jaxdiag import _compat
    from jaxdiag._jobs import _call_sites
    from jaxdiag._jobs._record_carrier import CarrierRuns

    ran: list[str] = []
    monkeypatch.setattr(_call_sites, "_documented_once", lambda lint, runs, module, name: ran.append(name) or "none")
    runs, module = CarrierRuns(), types.ModuleType("pkg.mod")
    for _ in range(3):
        assert _call_sites._documented(None, runs, module, "spmv") == "none"
    with _compat.x64_scope(True):
        assert _call_sites._documented(None, runs, module, "spmv") == "none"
    assert ran == ["spmv", "spmv"]


@pytest.mark.slow
def test_a_kernel_with_params_from_a_matrix_object_is_checked_at_the_documented_call(monkeypatch):
    """Before: no literal holds `shape` (the package passes `self.shape`), so the kernel was not checkable. Now it is
    checked where `spmv`'s docstring example calls it, on the example's own CSR structure."""
    monkeypatch.chdir(DATA)
    code, data = check("inputs_documented.good")
    assert data["summary"]["checked"] == data["summary"]["discovered"] == 1, data["summary"]
    target = only_target(data)
    (note,) = [f for f in target["findings"] if f["code"] == "JXN016"]
    assert "docstring example" in note["message"] and "shape=(2, 3)" in note["message"], note["message"]
    assert " i32[3] " in note["message"]
    assert not [f for f in target["findings"] if f["severity"] != "info"] and code == 0


@pytest.mark.slow
def test_a_wrong_jvp_is_caught_at_the_documented_call(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check("inputs_documented.bad")
    target = only_target(data)
    # the JVP never reads the data's tangent: JXG034, which names both readings (a constant on purpose, or a bug);
    # the batching rule's own derivative disagreeing with it is the JXB017 error
    wrong = [f for f in target["findings"] if f["code"] == "JXG034"]
    assert wrong and code == 1, target["findings"]
    assert wrong[0]["location"]["line"] == expect_line(DATA / "inputs_documented" / "_kernel.py", "JXG034")
    assert "JXB017" in {f["code"] for f in target["findings"] if f["severity"] == "error"}


# ---------------------------------------------------------------------------------------------------------------
# An optional backend's import failure wrapped in the library's own exception
# ---------------------------------------------------------------------------------------------------------------


class KernelError(RuntimeError):
    pass


def test_an_import_failure_is_found_through_the_chain_and_in_a_wrappers_message():
    try:
        try:
            import jaxdiag_absent_backend  # noqa: F401
        except ImportError as exc:
            raise KernelError("backend failed") from exc
    except KernelError as wrapped:
        chained = wrapped
    assert dependency_failure(chained) == (
        "ModuleNotFoundError: No module named 'jaxdiag_absent_backend' (raised as KernelError)")
    in_text = KernelError("backend 'fast' failed: ModuleNotFoundError: No module named 'fastlib'. Try another")
    assert dependency_failure(in_text) == "ModuleNotFoundError: No module named 'fastlib' (raised as KernelError)"
    try:  # the package's own ImportError around the import: the missing module is its cause's
        try:
            import jaxdiag_absent_backend  # noqa: F401
        except ImportError as exc:
            raise ImportError("this extra requires the absent backend; pip install pkg[extra]") from exc
    except ImportError as wrapped:
        assert dependency_failure(wrapped) == (
            "ModuleNotFoundError: No module named 'jaxdiag_absent_backend' (raised as ImportError)")
    assert dependency_failure(ImportError("cannot import name 'x' from 'y'")) == (
        "ImportError: cannot import name 'x' from 'y'")
    assert dependency_failure(KernelError("shapes (3,) and (4,) do not match")) is None
    assert dependency_failure(ValueError("unrelated")) is None


@pytest.mark.slow
def test_a_wrapped_missing_backend_is_a_missing_dependency_not_missing_inputs(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check("acc/optional_backend.py")
    assert data["summary"]["discovered"] == 2 and code == 5, data["summary"]
    for target in data["targets"]:
        codes = [f["code"] for f in target["findings"]]
        assert codes == ["JXN011"], (target["target"], target["findings"])
        assert "jaxdiag_absent_backend" in target["findings"][0]["message"]


def _reported_codes(path: str) -> dict[str, set[str]]:
    """target name -> the codes of its errors and warnings, for `jaxdiag check path`."""
    _, data = check(path)
    return {t["target"].rpartition(":")[2]: {f["code"] for f in t["findings"] if f["severity"] != "info"}
            for t in data["targets"]}


@pytest.mark.slow
def test_a_surrogate_the_docstring_states_is_the_deliberate_reading(monkeypatch):
    monkeypatch.chdir(DATA)
    codes = _reported_codes("acc/documented_surrogate.py")
    assert codes == {"spike": set(), "spike_plain": {"JXG033"}, "threshold_model": {"JXG033"}, "squash": {"JXG024"},
                     "factory_spike": set()}


def test_a_stated_surrogate_names_a_derivative_and_the_deliberate_kind(tmp_path):
    from jaxdiag._core._documented import stated_deliberate
    from jaxdiag._core._report import Location

    source = tmp_path / "rules.py"
    source.write_text(
        "import functools\n\n\n"
        "@functools.cache\n"
        "def a(x):\n    'Step with a straight-through gradient.'\n\n\n"
        "def b(x):\n    'The surrogate model. Its gradient is exact.'\n\n\n"
        "def c(x):\n    '''Spike.\n\n    The backward pass uses a pseudo-derivative.'''\n\n\n"
        "def d(a, lam):\n    'Identity in lam, carrying the eigenvalue derivative with respect to a.'\n\n\n"
        "def e(x):\n    'The loop carrying the state. Its gradient is exact.'\n")
    at = {name: Location(str(source), line, name) for name, line in (("a", 4), ("a_def", 5), ("b", 9), ("c", 13))}
    assert stated_deliberate([at["a"]]) == stated_deliberate([at["a_def"]]) == "Step with a straight-through gradient."
    assert stated_deliberate([at["b"]]) is None  # "surrogate" and "gradient" in different sentences
    assert stated_deliberate([None, at["b"], at["c"]]) == "The backward pass uses a pseudo-derivative."
    attached = "Identity in lam, carrying the eigenvalue derivative with respect to a."
    assert stated_deliberate([Location(str(source), 19, "d")]) == attached
    assert stated_deliberate([Location(str(source), 23, "e")]) is None  # carrying a state, not a derivative


def test_a_factorys_documentation_states_the_reading_of_the_rules_it_builds(tmp_path):
    from jaxdiag._core._documented import stated_deliberate
    from jaxdiag._core._report import Location

    source = tmp_path / "rules.py"
    source.write_text(
        "def fast_sigmoid(slope):\n    'Heaviside step with a surrogate derivative.'\n\n"
        "    def fs_jvp(primals, tangents):\n        return primals[0], tangents[0]\n\n"
        "    return fs_jvp\n\n\n"
        "class Layer:\n    'A layer with a surrogate gradient.'\n\n    def jvp(self, p, t):\n        return p, t\n")
    assert stated_deliberate([Location(str(source), 4, "fs_jvp")]) == "Heaviside step with a surrogate derivative."
    assert stated_deliberate([Location(str(source), 13, "jvp")]) is None  # a class's docstring is not its methods'


@pytest.mark.slow  # two primitives checked end to end (about 4 s); the name reading below stays fast
def test_a_surrogate_the_primitives_name_states_is_the_deliberate_reading(monkeypatch):
    """`Primitive("spike_surrogate_gradient")` (made by a factory, named at the assignment) says what its JVP is;
    the same rules under the name `step` are still reported."""
    monkeypatch.chdir(DATA)
    assert _reported_codes("acc/named_surrogate.py") == {"spike_p": set(), "step_p": {"JXG033"}}


def test_names_are_read_as_sentences_of_words(tmp_path):
    from jaxdiag._core._documented import stated_deliberate
    from jaxdiag._core._report import Location

    source = tmp_path / "rules.py"
    source.write_text("def StraightThroughGrad(x):\n    return x\n\n\n"
                      "def surrogate_model(x):\n    return x\n\n\n"
                      "heaviside_p = Primitive('heaviside_surrogate_gradient')\n\n\n"
                      "def clip_gradient(lo, hi, x):\n    return x\n\n\n"
                      "def clip_jvp(primals, tangents):\n    'JVP of the clip function.'\n\n\n"
                      "def bwd(res, g):\n    'Clips the cotangent to [-1, 1].'\n")
    at = [Location(str(source), line, "") for line in (1, 5, 9, 12, 16, 20)]
    assert stated_deliberate([at[0]]) == "named 'StraightThroughGrad'"
    assert stated_deliberate([at[1]]) is None  # a surrogate, no derivative
    assert stated_deliberate([at[2]]) == "named 'heaviside_surrogate_gradient'"
    assert stated_deliberate([at[3]]) == "named 'clip_gradient'"  # gradient clipping
    assert stated_deliberate([at[4]]) is None  # the derivative of a clip: the exact one is meant
    assert stated_deliberate([at[5]]) == "Clips the cotangent to [-1, 1]."


@pytest.mark.slow
def test_a_batch_statistic_the_leading_comment_states_is_the_deliberate_reading(monkeypatch):
    monkeypatch.chdir(DATA)
    codes = _reported_codes("acc/stated_batch_max.py")
    assert codes == {"shared_norm": set(), "pooled_norm": {"JXG035"}, "scaled_norm": {"JXG035"}}


@pytest.mark.slow
def test_an_unvmap_its_public_wrapper_documents_is_the_deliberate_reading(monkeypatch):
    """"As `jnp.any`, but ignores batch dimensions" on the function that binds the primitive: its batching rule's
    batch-wide value (JXB024) is the design. The same rule behind an undocumented wrapper is still reported."""
    monkeypatch.chdir(DATA)
    codes = _reported_codes("acc/stated_unvmap.py")
    assert codes == {"any_example_p": set(), "any_flag_p": {"JXB024"}}


@pytest.mark.slow
def test_an_unvmap_nested_in_a_function_keeps_its_wrappers_stated_reading(monkeypatch):
    """The same primitives bound by a function: each nested report carries the primitive's own definition, so the
    wrapper's docstring still says what the batching rule is (reported before, JXB024, under the function)."""
    monkeypatch.chdir(DATA)
    codes = _reported_codes("acc/stated_unvmap_user.py")
    assert codes == {"clip_if_any": set(), "clip_if_any > any_example": set(), "clip_if_flag": {"JXG016"},
                     "clip_if_flag > any_flag": {"JXB024"}}, codes


def test_leading_comments_are_read_as_documentation_with_the_kind_of_reading(tmp_path):
    from jaxdiag._core._documented import stated_deliberate
    from jaxdiag._core._report import Location

    source = tmp_path / "rules.py"
    source.write_text(
        "# Surrogate gradient of the spike:\n# a fast sigmoid.\n@staticmethod\ndef a(x):\n    return x\n\n\n"
        "def b(x):\n    'Doc.'\n    # Under vmap: the mean over the batch,\n    #\n    # not per example.\n"
        "    return x\n\n\n"
        "def c(x):\n    # Under vmap the same for all of the batch.\n    return x\n")
    at = {name: Location(str(source), line, name) for name, line in (("a", 3), ("b", 8), ("c", 16))}
    assert stated_deliberate([at["a"]]) == "Surrogate gradient of the spike: a fast sigmoid."
    assert stated_deliberate([at["a"]], "batch") is None
    assert stated_deliberate([at["b"]], "batch") == "Under vmap: the mean over the batch,"
    assert stated_deliberate([at["b"]]) is None
    assert stated_deliberate([at["c"]], "batch") == "Under vmap the same for all of the batch."


@pytest.mark.slow
def test_a_callback_refusing_a_batched_operand_is_named_with_a_fix_for_the_callback(monkeypatch):
    monkeypatch.chdir(DATA)
    _, data = check("acc/callback_order.py")
    found = {t["target"].rpartition(":")[2]: t["findings"] for t in data["targets"]}
    composed = [f for f in found["host_sinh"] if f["code"] == "JXG016"]
    assert composed, found["host_sinh"]
    assert "TypeError: n must be a non-negative integer" in composed[0]["message"]  # not the traceback's header
    assert "vmap_method='sequential'" in composed[0]["fix"] and "functools.partial" in composed[0]["fix"]
    assert not [f for f in found["host_sinh_static"] if f["severity"] != "info"]  # the order closed over


@pytest.mark.slow
def test_an_operand_every_caller_of_a_wrapper_configures_is_neither_batched_nor_differentiated(monkeypatch):
    """`resample(data, grid)` binds both unchanged; every call of it builds the grid from int/str settings, so the
    rules refusing a batched grid and ignoring its tangent are right for every use. Before: JXB014, JXG006 and
    JXG034 on resample_p. `warp` has the same rules, and a caller shifting the grid by an array: its grid is still
    batched (the refusal is noted, JXN020) and its ignored tangent still reported."""
    monkeypatch.chdir(DATA)
    _, data = check("acc/configured_grid.py")
    found = {t["target"].rpartition(":")[2]: t["findings"] for t in data["targets"]}
    assert not [f["code"] for f in found["resample_p"] if f["severity"] != "info"], found["resample_p"]
    assert any("static configuration" in f["message"] for f in found["resample_p"] if f["code"] == "JXN003")
    assert {"JXN020", "JXG034"} <= {f["code"] for f in found["warp_p"]}


def test_configured_arguments_are_read_from_settings_only(tmp_path, monkeypatch):
    """A parameter annotated int/str/bool, a module-level name, or a local assigned from those is configuration; an
    unannotated parameter, an attribute of `self`, a loop variable or an argument left to `*args` is not."""
    import ast

    from jaxdiag._run._configured_operands import _argument, _configured, _enclosing

    source = (
        "import typing\n"
        "def a(x, n: int, kind: typing.Optional[str] = None):\n    g = grid(n, kind)\n    return wrap(x, g)\n"
        "def b(x, n):\n    return wrap(x, grid(n))\n"
        "class C:\n    def c(self, x):\n        return wrap(x, self.grid)\n"
        "def d(x, n: int):\n    for g in range(n):\n        x = wrap(x, g)\n    return x\n"
        "def e(x, *rest):\n    return wrap(x, *rest)\n"
        "def f(x, n: 'int | None'):\n    return wrap(x, STEP * n)\n"
    )
    tree = ast.parse(source)
    enclosing = _enclosing(tree)
    verdicts = {}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "wrap"):
        chain = enclosing[id(call)]
        verdicts[chain[0].name] = _configured(_argument(call, "grid", ["data", "grid"]), chain)
    assert verdicts == {"a": True, "b": False, "c": False, "d": False, "e": False, "f": True}


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["f32[3,3]", "c64[3,3]"])
@pytest.mark.parametrize("rule", ["eig", "eig_jvp"])
def test_eigenvectors_are_compared_whatever_their_gauge_and_a_wrong_coupling_is_not(rule, spec):
    """The textbook derivative of a general eig keeps `diag(V^-1 dV) = 0`; eig normalises and picks a phase. They
    differ along each eigenvector only (plain JAX: the difference is `V diag(c)` to 1e-10), which no loss with a
    meaning sees. Before: JXG014 on the custom_vjp, JXG024 (an error) on the custom_jvp. The coupling term's sign
    flipped is still reported, also on real float32 inputs, whose float64 finite differences take LAPACK's float64
    signs (before: unseen there, the float64 evaluation read as another function and the float32 one inconclusive)."""
    path = DATA / "acc" / "eig_gauge.py"
    right = jaxdiag.check_grad(f"{path}:{rule}", spec)
    assert not right.internal_errors and not [f.code for f in right.findings if f.severity != "info"]
    flipped = jaxdiag.check_grad(f"{path}:{rule}_flipped", spec)
    assert {"JXG014", "JXG024"} & {f.code for f in flipped.findings}


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["c64[3,3]", "f32[3,3]"])
def test_singular_vectors_are_compared_whatever_their_phases_and_a_wrong_singular_value_term_is_not(spec):
    """A complex SVD's VJP through a phase-fixed decomposition agrees with JAX's for every phase-invariant loss (plain
    JAX: 1e-7) and differs only along each pair's shared phase. Before: JXG024, an error, on complex inputs. The
    doubled singular-value term is still an error."""
    path = DATA / "acc" / "svd_gauge.py"
    right = jaxdiag.check_grad(f"{path}:svd", spec)
    assert not right.internal_errors and not [f.code for f in right.findings if f.severity != "info"]
    assert "JXG024" in {f.code for f in jaxdiag.check_grad(f"{path}:svd_doubled", spec).findings}


def test_eigenvector_outputs_are_read_from_values_and_their_gauge_removed_under_the_bilinear_pairing():
    from jaxdiag._checks._gradref._gauge import gauges

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 4))  # batched
    w, v = np.linalg.eig(a)
    found = gauges([a], [w.astype(np.complex64), v.astype(np.complex64), v[..., :1, :]])
    assert list(found.vectors) == [1] and len(found.directions) == 2 * 2 * 4  # norm and phase of each vector
    assert not gauges([a], [w, rng.standard_normal((2, 4, 4)) + 0j]).directions  # not A's eigenvectors
    ct = rng.standard_normal(v.shape) + 1j * rng.standard_normal(v.shape)
    (blind,) = gauges([a], [v, w]).blind([ct, None])[:1]
    c = rng.standard_normal((2, 1, 4)) + 1j * rng.standard_normal((2, 1, 4))
    assert abs(np.real(np.sum(blind * (v * c)))) < 1e-12  # a gauge change pairs to zero
    assert np.allclose(gauges([a], [v, w]).blind([blind, None])[0], blind)  # and what is left keeps the rest


def test_singular_vectors_share_one_phase_per_pair_and_only_that_is_removed():
    from jaxdiag._checks._gradref._gauge import gauges

    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    u, s, vh = np.linalg.svd(a)
    found = gauges([a], [u, s, vh])
    assert sorted(found.vectors) == [0, 2] and len(found.directions) == 3  # one shared phase per pair
    assert not gauges([a.real], [u.real, s, vh.real]).directions  # real: a sign, no continuous gauge
    wu, wvh = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) for _ in range(2))
    bu, _, bvh = found.blind([wu, None, wvh])
    phi = rng.standard_normal(3)
    du, dvh = u * (1j * phi)[None, :], -(1j * phi)[:, None] * vh  # the tangent of a phase change
    assert abs(np.real(np.sum(bu * du) + np.sum(bvh * dvh))) < 1e-12
    # each output on its own too: the checks probe U alone, and then a pair's phase moves U alone
    assert abs(np.real(np.sum(bu * du))) < 1e-12 and abs(np.real(np.sum(bvh * dvh))) < 1e-12


@pytest.mark.slow
def test_a_placeholder_raising_for_every_attribute_is_no_internal_error(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check("acc/backend_placeholder.py")
    assert data["summary"]["internal_errors"] == 0 and code == 0, data["summary"]  # was: exit 3 on soft_step
    assert data["summary"]["checked"] == 1


def test_declared_attributes_are_read_without_asking_a_getattr():
    from jaxdiag._compat import is_jit_wrapped
    from jaxdiag._core._locate import declared_attribute, unwrap

    spec = importlib.util.spec_from_file_location("backend_placeholder", DATA / "acc" / "backend_placeholder.py")
    placeholder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(placeholder)
    with pytest.raises(ModuleNotFoundError):
        hasattr(placeholder.DeviceModel, "__wrapped__")
    assert declared_attribute(placeholder.DeviceModel, "__wrapped__", "none") == "none"
    assert unwrap(placeholder.DeviceModel) is placeholder.DeviceModel and not is_jit_wrapped(placeholder.DeviceModel)
    jitted = jax.jit(placeholder.layer)
    assert is_jit_wrapped(jitted) and unwrap(jitted) is placeholder.layer  # what a __wrapped__ declares still counts


# ---------------------------------------------------------------------------------------------------------------
# Inputs outside the function's domain
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_no_second_order_finding_where_the_primal_itself_is_nan():
    """Below the domain edge the function and all its derivatives are NaN in plain JAX too; the rule is right
    wherever the function is defined."""
    edge = load(DATA / "acc" / "domain_edge.py")
    x = np.array([-1.2, 0.4, 1.3], np.float32)
    assert np.isnan(np.asarray(edge.root_from_edge(jnp.asarray(x)))[0])  # outside the domain, as plain JAX says
    report = jaxdiag.check_grad(edge.root_from_edge, x, order=2)
    assert not [f for f in report.findings if f.severity in ("error", "warning")], report.findings
    second = [c for t in report.targets for c in t.checks if c.name == "grad-second-order"]
    assert second and second[0].status == "skipped" and "domain" in second[0].detail


@pytest.mark.slow
def test_a_wrong_second_derivative_inside_the_domain_is_still_reported():
    edge = load(DATA / "acc" / "domain_edge.py")
    report = jaxdiag.check_grad(edge.root_from_edge_flat, np.array([0.2, 0.4, 1.3], np.float32), order=2)
    lines = [f.location.line for f in report.findings if f.code == "JXG019"]
    assert lines == [expect_line(DATA / "acc" / "domain_edge.py", "JXG019")], report.findings


@pytest.mark.slow
def test_second_derivatives_are_compared_with_a_float64_reference_where_float32_rounds_the_gradient_flat():
    field = load(DATA / "acc" / "offset_background.py")
    x = np.array([0.3, -1.1, 2.0], np.float32)
    gradient = jax.vmap(jax.grad(field.background_p.bind))
    step = np.float32(1e-3)
    flat = (np.asarray(gradient(x + step)) - np.asarray(gradient(x - step))) / (2 * step)
    assert np.all(np.abs(flat + np.sin(x)) > 0.2)  # plain JAX: float32 differences miss the curvature -sin(x)
    curvature = jax.vmap(jax.grad(jax.grad(field.background_p.bind)))(x)
    np.testing.assert_allclose(curvature, -np.sin(x), rtol=1e-5)  # while the rule's second derivative is right

    report = jaxdiag.check_grad(field.background_p, x, order=2)
    assert not [f for f in report.findings if f.severity in ("error", "warning")], report.findings
    held = jaxdiag.check_grad(field.background_held_p, x, order=2)
    lines = [f.location.line for f in held.findings if f.code == "JXG019"]
    assert lines == [expect_line(DATA / "acc" / "offset_background.py", "JXG019")], held.findings


# ---------------------------------------------------------------------------------------------------------------
# A primitive whose impl and abstract eval are methods of a Primitive subclass
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_impl_and_abstract_eval_defined_as_methods_of_a_primitive_subclass_are_registered(monkeypatch):
    """JAX runs `prim.impl` and `prim.abstract_eval` whether `def_impl` set them on the instance or a subclass
    overrides the methods: the latter is no missing impl (JXR001) or abstract eval (JXR002), and the primitive is
    checked like any other."""
    monkeypatch.chdir(DATA)
    code, data = check("acc/method_rules.py")
    target = only_target(data)
    assert code == 0 and target["verified"] and data["summary"]["checked"] == 1, target
    assert not [f for f in target["findings"] if f["severity"] in ("error", "warning")], target["findings"]


@pytest.mark.slow
def test_a_wrong_batching_method_of_a_primitive_subclass_is_found_at_the_method(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check("acc/method_rules_bad.py")
    findings = only_target(data)["findings"]
    assert code == 1
    assert {f["code"] for f in findings} & {"JXR001", "JXR002"} == set(), findings
    hit = [f for f in findings if f["code"] == "JXB004"]
    assert hit and hit[0]["location"]["line"] == expect_line(DATA / "acc" / "method_rules_bad.py", "JXB004"), findings


# ---------------------------------------------------------------------------------------------------------------
# Static arguments whose values only the module's own calls give
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_static_argument_takes_the_literal_its_module_binds_or_passes(monkeypatch):
    """A nondiff argument without a default is checked with the literal its module gives it, through
    `functools.partial(f, name=literal)` or a call `f(x, literal)`; a function argument, which no literal stands
    for, is not checked, and the reason says to check the function that passes it, not to pass a number."""
    monkeypatch.chdir(DATA)
    code, data = check("acc/partial_static.py")
    by_name = {t["target"].rpartition(":")[2]: t for t in data["targets"] if t["kind"] != "module"}
    assert "1000.0" in " ".join(by_name["_sqrt_bounded"]["inputs"]), by_name["_sqrt_bounded"]
    assert "3" in by_name["_power"]["inputs"], by_name["_power"]
    assert by_name["_sqrt_bounded"]["verified"] and by_name["_power"]["verified"], data["summary"]
    assert not by_name["_apply"]["verified"] and code == 5, data["summary"]
    reason = " ".join(f["message"] for f in by_name["_apply"]["findings"])
    assert "`fn` is static" in reason and "for a function or an object" in reason, reason


# ---------------------------------------------------------------------------------------------------------------
# A kernel that runs on 64-bit inputs only
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["good", "bad"])
def test_a_kernel_that_asks_for_float64_is_checked_on_64_bit_inputs_under_x64_for_the_run_only(which, monkeypatch):
    """Every 32-bit input fails with "requires float64": inference tries 64-bit inputs under x64, scoped to the
    run (x64 is off again after it), and the rule is judged there."""
    import jax

    monkeypatch.chdir(DATA)
    name = "acc/double_only.py" if which == "good" else "acc/double_only_bad.py"
    code, data = check(name)
    target = only_target(data)
    assert target["inputs"] == ["f64[3]"] and target["verified"], target
    assert not jax.config.jax_enable_x64
    problems = [(f["code"], f["location"]["line"]) for f in target["findings"] if f["severity"] in ("error", "warning")]
    if which == "good":
        assert code == 0 and not problems, target["findings"]
    else:
        assert ("JXG024", expect_line(DATA / name, "JXG024")) in problems, target["findings"]


# ---------------------------------------------------------------------------------------------------------------
# A primitive whose rules take *args: the operand count and the matrices from the library's bind call
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_library_bind_call_gives_the_operand_count_and_its_capitalised_names_the_matrices(monkeypatch):
    """Rules taking `*args` say nothing of the arity; `weigh_p.bind(t, c, a, U, V)` says 5, and `U`, `V` are
    tried as matrices beside vector `t`, `c`, `a`: the primitive is checked, and its batching defect found at the
    `defvectorized` line of the factory that made it (`weigh_p = _build(SPEC)`), not at the assignment."""
    monkeypatch.chdir(DATA)
    code, data = check("acc/bound_operands.py")
    target = only_target(data)
    assert target["verified"] and target["inputs"] == ["f32[3]"] * 3 + ["f32[3,3]"] * 2, target
    hit = [f for f in target["findings"] if f["code"] == "JXB006"]
    assert hit and hit[0]["location"]["line"] == expect_line(DATA / "acc" / "bound_operands.py", "JXB006"), hit


# ---------------------------------------------------------------------------------------------------------------
# A matrix function defined on symmetric positive-definite matrices only
# ---------------------------------------------------------------------------------------------------------------


def _checked_on_spd_matrices(stem: str, which: str) -> None:
    """acc/STEM.py (good: clean) or acc/STEM_bad.py (JXG024 at its marked line), checked on f32[3,3]@spd."""
    name = f"acc/{stem}.py" if which == "good" else f"acc/{stem}_bad.py"
    code, data = check(name)
    target = only_target(data)
    assert target["inputs"] == ["f32[3,3]@spd"] and target["verified"], target
    problems = [(f["code"], f["location"]["line"]) for f in target["findings"] if f["severity"] in ("error", "warning")]
    if which == "good":
        assert code == 0 and not problems, target["findings"]
    else:
        assert ("JXG024", expect_line(DATA / name, "JXG024")) in problems, target["findings"]


@pytest.mark.parametrize("which", [pytest.param("good", marks=pytest.mark.slow), "bad"])
def test_a_matrix_function_of_spd_matrices_is_checked_there_along_symmetric_directions(which, monkeypatch):
    """The square root runs on the spd domain only (NaN on every elementwise one; its code hands `a` to eigh), and
    is perturbed along symmetric directions only: a random direction leaves the domain, and the eigh-based primal
    is differentiable along symmetric ones only, so the correct Sylvester JVP would read as wrong (JXG024)."""
    monkeypatch.chdir(DATA)
    _checked_on_spd_matrices("spd_sqrtm", which)


@pytest.mark.parametrize("which", [pytest.param("good", marks=pytest.mark.slow), "bad"])
def test_a_matrix_the_code_hands_to_eigh_is_drawn_symmetric_positive_definite(which, monkeypatch):
    """No docstring says A is symmetric, but `jnp.linalg.eigh(A)` does: A is drawn spd and perturbed along
    symmetric directions, where the unsymmetrised textbook bwd agrees with autodiff (on a random square matrix and
    direction it did not: a JXG024 outside the contract). The flipped eigenvector term is still JXG024."""
    monkeypatch.chdir(DATA)
    _checked_on_spd_matrices("eigh_vjp", which)


def test_the_spd_domain_draws_hermitian_positive_definite_matrices_and_is_a_spec_domain():
    from jaxdiag._loading._inputs import draw, parse_arg

    for text in ("f32[4,4]@spd", "c64[2,3,3]@spd"):
        spec = parse_arg(text)
        a = draw(spec, np.random.default_rng(0)).astype(np.complex128)
        assert np.allclose(a, np.conj(np.swapaxes(a, -1, -2)), atol=1e-5)
        assert np.linalg.eigvalsh(a).min() >= 1 - 1e-4
    vector = draw(parse_arg("f32[3]@spd"), np.random.default_rng(0))  # not square: standard normal
    assert vector.shape == (3,) and (vector < 0).any()


# ---------------------------------------------------------------------------------------------------------------
# An output whose dependence on the inputs is far below the gradient's tolerance
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["good", "bad"])
def test_a_bwd_ignoring_an_output_that_barely_moves_drops_no_gradient(which, monkeypatch):
    """A converged residual moves with the input at 1e-6: the zeros bwd returns for its cotangent are within the
    gradient's own tolerance (no JXG011/JXG018); the same bwd ignoring an output that moves at 1e-2 is JXG011."""
    monkeypatch.chdir(DATA)
    name = "acc/converged_residual.py" if which == "good" else "acc/converged_residual_bad.py"
    code, data = check(name)
    target = only_target(data)
    problems = [(f["code"], f["location"]["line"]) for f in target["findings"] if f["severity"] in ("error", "warning")]
    if which == "good":
        assert code == 0 and not problems, target["findings"]
    else:
        assert problems == [("JXG011", expect_line(DATA / name, "JXG011"))], target["findings"]


# ---------------------------------------------------------------------------------------------------------------
# A straight-through estimator whose ratio to autodiff is constant
# ---------------------------------------------------------------------------------------------------------------


def test_a_straight_through_gradient_of_a_scaled_primal_is_deliberate_not_a_scaled_gradient():
    """bwd returns the cotangent itself; autodiff gives `0.75 * g`, so the ratio is 1/0.75 along every cotangent.
    The identity with the cotangent received explains it: a warning that says it may be intended, not JXG024."""
    report = jaxdiag.check_grad(f"{DATA / 'acc' / 'straight_through_scaled.py'}:dequantize", "f32[3]", "0.75")
    found = {f.code: f.severity for t in report.targets for f in t.findings}
    assert found.get("JXG014") == "warning" and "JXG024" not in found, found


# ---------------------------------------------------------------------------------------------------------------
# A zero derivative computed by cancellation: float32 rounding, not a nonlinear rule
# ---------------------------------------------------------------------------------------------------------------


def test_a_tangent_at_rounding_level_is_no_nonlinear_rule_and_a_real_nonlinear_term_still_is():
    """`settled`'s rule returns `t cos^2 + t sin^2 - t`: linear, and zero but for float32 rounding (about 1e-8),
    which is not exactly additive or homogeneous. Before, JXG020 twice (the linearity probes and forward against
    reverse mode compared numbers of rounding size relative to each other). `drifting` adds `1e-3 |t|`: found."""
    import jax
    import jax.numpy as jnp

    path = DATA / "acc" / "rounding_tangent.py"
    module = load(path)
    x, t = jnp.array([0.3, -1.2, 2.0]), jnp.array([1.0, -0.5, 2.0])
    assert float(jnp.max(jnp.abs(jax.jvp(module.settled, (x,), (t,))[1]))) < 1e-6  # plain JAX: zero to precision
    settled = jaxdiag.check_grad(f"{path}:settled", "f32[3]")
    assert not settled.internal_errors and not [f for f in settled.findings if f.severity != "info"]
    drifting = jaxdiag.check_grad(f"{path}:drifting", "f32[3]")
    assert "JXG020" in {f.code for f in drifting.findings if f.severity == "error"}
    assert expect_line(path, "JXG020") in {f.location.line for f in drifting.findings if f.code == "JXG020"}


@pytest.mark.slow
def test_an_output_the_function_never_reads_gets_no_derivative_check():
    """A kernel's scratch buffer that its function drops (`d, _ = p.bind(...)`): the JVP's zero tangent for it is
    right for every derivative the function takes. Before: JXG037 on the dropping function's kernel. Where the
    function returns the buffer, the zero tangent is still reported."""
    specs = ("f32[3]", "f32[3,2]")
    dropped = jaxdiag.check_grad(f"{DATA / 'acc/scratch_output.py'}:lowrank_diag", *specs)
    returned = jaxdiag.check_grad(f"{DATA / 'acc/scratch_output.py'}:lowrank_diag_and_scratch", *specs)
    assert all(t.checks for t in dropped.targets) and not dropped.codes() - {"JXN001"}, dropped.codes()
    assert "JXG037" in returned.codes()


@pytest.mark.slow
def test_a_caller_still_running_after_the_search_budget_is_left_and_the_rule_checked_alone(monkeypatch):
    """`generate` works for an hour before it calls `taper` (a waveform generator run eagerly under vmap and grad).
    Before, the call-site search ran it until the target's time limit: JXU004, the rule unchecked. Now the search
    stops at its budget, the rule is checked on its own, and an alarm set before is handed back as it was."""
    import signal
    import time

    from jaxdiag._jobs import _call_sites
    from jaxdiag._jobs._lint import check_paths

    monkeypatch.setattr(_call_sites, "SEARCH_SECONDS", 1.0)
    def runners_alarm(*_):
        pass

    handler = signal.signal(signal.SIGALRM, runners_alarm)  # a test runner's own alarm, an hour away
    signal.setitimer(signal.ITIMER_REAL, 3600.0)
    try:
        started = time.monotonic()
        report = check_paths([str(DATA / "acc" / "slow_caller.py")], jobs=1)
        assert time.monotonic() - started < 60
        assert 3500 < signal.getitimer(signal.ITIMER_REAL)[0] <= 3600  # handed back with the time it had left
        assert signal.getsignal(signal.SIGALRM) is runners_alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, handler)
    (target,) = report.targets
    assert target.checks and not target.internal_errors, target
    assert {f.code for f in target.findings} == {"JXN001"}, target.findings


@pytest.mark.slow
def test_an_operand_every_call_of_the_package_passes_complex_is_drawn_complex():
    """`unitary_dft`'s package converts every signal to complex before calling it (through a backend its default
    path never takes, so no call site is run). Before: drawn f32, its bwd's complex cotangent for the real input was
    a JXG004 on data the package never passes. The annotated twin (`Complex[Array, "n"]`) is drawn complex too; the
    twin its package also calls with real signals keeps its JXG004."""
    path = DATA / "acc" / "complex_callers.py"
    module = load(path)
    x = jnp.array([0.5, -1.0, 2.0])
    assert jax.grad(lambda v: jnp.real(module.unitary_dft(v)).sum())(x).dtype == jnp.complex64  # plain JAX
    from jaxdiag._jobs._lint import check_paths

    found = {t.target.rpartition(":")[2]: t for t in check_paths([str(path)]).targets}
    for name in ("unitary_dft", "unitary_dft_annotated"):
        assert found[name].inputs[0].startswith("c64[") and found[name].checks, found[name].inputs
        assert not [f for f in found[name].findings if f.severity != "info"], found[name].findings
    assert expect_line(path, "JXG004") in {f.location.line for f in found["unitary_dft_any"].findings
                                           if f.code == "JXG004"}


@pytest.mark.slow
def test_recorded_integers_are_a_contract_and_a_target_raising_on_drawn_values_of_a_recording_is_no_error(
        tmp_path):
    """The program binds `take_rows_p` eagerly with rows in [1, 2] (recorded), and `take_rows_jit_p` under jit
    (shapes only). Before: both JXR011 errors, the impl refusing rows jaxdiag drew (0, negative, past the end). Now
    the recorded integers are the rows' domain (`i32[4]@1..2`: nothing to refuse), and where the recording has no
    values the refusal is a warning that says the values were drawn: the program's own call ran."""
    import json

    from datacli import jaxdiag as run_cli
    from datacli import project

    work = project(tmp_path, "recidx")
    done = run_cli("record", "--", sys.executable, "-m", "recidx.example", cwd=work)
    assert done.returncode == 0, done.stderr
    checked = run_cli("check", "recidx", "--format", "json", cwd=work)
    found = {t["target"].rpartition(":")[2]: t for t in json.loads(checked.stdout)["targets"]}
    eager, traced = found["take_rows_p"], found["take_rows_jit_p"]
    assert "i32[4]@1..2" in eager["inputs"] and "JXR011" not in {f["code"] for f in eager["findings"]}, eager
    (refused,) = [f for f in traced["findings"] if f["code"] == "JXR011"]
    assert refused["severity"] == "warning" and "values drawn for the recorded shapes" in refused["message"]


@pytest.mark.slow
def test_a_rule_refusing_every_drawn_variant_is_tried_on_its_leading_operands_and_each_alone():
    """`gated_p` batches `(g, x)` together and refuses any batched weight or bias: every variant of the pairwise
    covering batches one of them or splits the two. Before: JXB014, as if vmap of it always failed. Now the leading
    operands batched (the data, conventionally first) show what it accepts: a JXN020 note, and the accepted
    combination is compared with the loop. `closed_p` refuses those too: still JXB014."""
    path = DATA / "acc" / "gated_weights.py"
    module = load(path)
    with pytest.raises(ValueError, match="no batch axis"):
        jax.vmap(module.gated_p.bind)(*[jnp.ones((2, 3))] * 5)  # plain JAX: its own message
    specs = ["f32[3]"] * 5
    gated = jaxdiag.check_batching(f"{path}:gated_p", *specs)
    assert not gated.internal_errors and {f.code for f in gated.findings} == {"JXN020"}, gated.findings
    (note,) = [f for f in gated.findings if f.code == "JXN020"]
    assert "in_axes=(0, 0, None, None, None)" in note.message
    closed = jaxdiag.check_batching(f"{path}:closed_p", *specs)
    assert "JXB014" in {f.code for f in closed.findings if f.severity == "warning"}, closed.findings


@pytest.mark.slow
def test_the_impl_refusing_a_rank_the_rule_hands_it_under_nested_vmap_is_its_contract():
    """`reverse_p`'s impl takes rank 1 or 2 and refuses any other rank with its own message; its batching rule binds
    on the batch, so one vmap works and a nested one reaches the refusal through the rule's bind. Before: JXB006, an
    error, as if the rule had failed by accident. Now a JXN020 note (the refusal is written for users, in user code,
    with JAX's frames between the rule and it; its folder is named `jax`, and is the user's all the same). An error
    JAX raises below the rule stays JXB006 (jxb006_bad)."""
    path = DATA / "acc" / "backend" / "jax" / "impl_rank.py"  # a user's folder named `jax` is the user's code
    module = load(path)
    np.testing.assert_array_equal(jax.vmap(module.reverse_p.bind)(jnp.eye(3)), jnp.eye(3)[:, ::-1])  # plain JAX
    with pytest.raises(ValueError, match="Unsupported input shape"):
        jax.vmap(jax.vmap(module.reverse_p.bind))(jnp.ones((2, 3, 4)))
    report = jaxdiag.check_batching(f"{path}:reverse_p", "f32[4]")
    assert {f.code for f in report.findings} == {"JXN020"}, report.findings
