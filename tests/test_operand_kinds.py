"""Operands a rule's own code says are not float arrays (probe package tests/data/operand_kinds): a parameter it
indexes an array with is drawn as int32 indices inside every operand's extent, and one named or annotated as a PRNG
key as a typed key, and one annotated as a tuple, a list or a NamedTuple of arrays as that container. Before,
inference drew float arrays there and the target was not checked (JXN004)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import check_json, errors_and_warnings

DATA = Path(__file__).parent / "data"


def test_parameters_used_as_indices_are_drawn_as_integers_inside_every_extent() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdiag._loading._inputs import ArgSpec
    from jaxdiag._run._climb import _as_indices
    from jaxdiag._run._operand_kinds import index_positions
    from jaxdiag._checks._base import Subject

    def gather(table, ids, rows):
        return table[ids] + jnp.take(table, rows, axis=0).sum() + table.at[ids].add(1.0)[0]

    subject = Subject("m:gather", "custom_vjp", jax.custom_vjp(gather), specs=[])
    assert index_positions(subject) == {1, 2}
    f32 = np.dtype(np.float32)
    drawn = _as_indices([ArgSpec(f32, (2, 3)), ArgSpec(f32, (2, 3)), ArgSpec(f32, (2, 3), "0..1")], {1, 2})
    assert drawn[1] == ArgSpec(np.dtype(np.int32), (2, 3), "0..1")  # the smallest extent is 2
    assert drawn[2].dtype == f32  # a declared domain is the user's: never redrawn


def test_indices_reached_through_a_clipped_local_or_a_helper_are_indices() -> None:
    import jax
    import jax.numpy as jnp

    from jaxdiag._checks._base import Subject
    from jaxdiag._run._operand_kinds import index_positions

    def direct(logits, targets, rows):
        vocab = logits.shape[-1]  # a size read from `logits`: never makes `logits` an index
        safe = jnp.clip(targets, 0, vocab - 1)
        wide = rows.astype(jnp.int32)
        return jnp.take_along_axis(logits, safe[..., None], axis=-1) + logits[wide] + logits[vocab - 1]

    def through_helper(logits, targets, weights):
        return _picked(logits, targets) * weights

    for fn, expected in ((direct, {1, 2}), (through_helper, {1})):
        assert index_positions(Subject("m:f", "custom_vjp", jax.custom_vjp(fn), specs=[])) == expected, fn


def _picked(values, labels):  # a helper of the module's: found through its globals
    import jax.numpy as jnp

    return jnp.take_along_axis(values, jnp.clip(labels, 0, 3)[..., None], axis=-1)


def test_parameters_named_or_annotated_as_keys_are_keys() -> None:
    import jax
    import jax.extend.core  # used as `jax.extend.core.Primitive`: jaxdiag itself no longer imports it

    from jaxdiag._checks._base import Subject
    from jaxdiag._run._operand_kinds import key_positions

    def sample(rng, x, sort_key, dropout_key, k: jax.Array, seed: jax.random.KeyArray):
        ...

    assert key_positions(Subject("m:sample", "function", sample, specs=[])) == {0, 3, 5}
    assert key_positions(Subject("m:p", "primitive", jax.extend.core.Primitive("p"), specs=[])) == set()

    def attend(query, key, value, dropout_rng):  # attention's keys, beside its queries and values
        ...

    assert key_positions(Subject("m:attend", "function", attend, specs=[])) == {3}


def test_parameters_annotated_as_containers_of_arrays_are_those_containers() -> None:
    from typing import NamedTuple, Tuple

    import jax
    import jax.numpy as jnp

    from jaxdiag._checks._base import Subject
    from jaxdiag._run._operand_kinds import container_positions

    class State(NamedTuple):
        mean: jax.Array
        count: "Float[Array, 'n']"  # noqa: F821 - jaxtyping's form, read as text

    class Config(NamedTuple):
        mean: jax.Array
        name: str

    Array = jax.Array  # noqa: F841 - the name the string annotations below use (read as text, never evaluated)

    def f(a: "tuple[Array, Array]", b: Tuple[jnp.ndarray, ...], c: "list[jax.Array]", d: State, e: Config,
          g: "tuple[int, str]", h: jax.Array, i: "Array"):
        ...

    f.__globals__["State"], f.__globals__["Config"] = State, Config
    try:
        builds = container_positions(Subject("m:f", "function", f, specs=[]))
    finally:
        del f.__globals__["State"], f.__globals__["Config"]
    assert set(builds) == {0, 1, 2, 3}, builds
    assert builds[0]("x") == ("x", "x") and builds[1]("x") == ("x", "x") and builds[2]("x") == ["x", "x"]
    assert builds[3]("x") == State("x", "x") and type(builds[3]("x")) is State


def test_an_array_annotation_is_an_array_a_union_with_scalars_or_none_and_never_a_container() -> None:
    """One reading for positional operands, containers' fields and keyword-only arguments (`_call_sites`):
    `jax.typing.ArrayLike` as `annotation_text` formats it is a union of arrays with NumPy and Python scalars."""
    from jax.typing import ArrayLike

    from jaxdiag._harness.source import annotation_text
    from jaxdiag._run._operand_kinds import is_array_annotation

    arrays = [annotation_text(ArrayLike), "jax.Array | None", "Optional[Array]", "ArrayLike | float",
              'Float[Array, "n"]', "np.ndarray", "'Array'"]
    others = ["Sequence[Array]", "tuple[Array, ...]", "float | None", "int", "Union[Array, Plan]", "str", "None"]
    assert [t for t in arrays if not is_array_annotation(t)] == []
    assert [t for t in others if is_array_annotation(t)] == []


def test_parameters_annotated_as_pytree_classes_are_built_around_drawn_arrays() -> None:
    """A sparse format (its `fromdense`, also behind jaxtyping's `Float[CSR, "n n"]`) and a registered dataclass of
    arrays: an instance built from the rung's array whose float leaves are drawn and whose indices are kept; a rung
    the class cannot be built from (a 1-D CSR) stays the plain spec. Before, one array was drawn there."""
    from dataclasses import dataclass

    import jax
    import numpy as np
    from jax.experimental.sparse import CSR

    from jaxdiag._checks._base import Subject
    from jaxdiag._loading._inputs import ArgSpec, Static, template_text
    from jaxdiag._run._operand_kinds import container_positions

    @jax.tree_util.register_dataclass
    @dataclass
    class Params:
        weight: jax.Array
        bias: "Array"  # noqa: F821 - read as text

    @dataclass
    class Options:
        weight: jax.Array
        name: str

    @jax.tree_util.register_pytree_node_class
    class Gaussian:
        def __init__(self, mean: jax.Array, scale: jax.Array, name: str = "g") -> None:
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self) -> tuple:
            return (self.mean, self.scale), self.name

        @classmethod
        def tree_unflatten(cls, name: str, children: tuple) -> "Gaussian":
            return cls(*children, name=name)

    def f(a: CSR, b: 'Float[CSR, "n n"]', c: Params, d: Options, e: jax.Array, g: Gaussian):  # noqa: F722, F821
        ...

    shared = dict(CSR=CSR, Params=Params, Options=Options, Gaussian=Gaussian)
    f.__globals__.update(shared)
    try:
        builds = container_positions(Subject("m:f", "function", f, specs=[]))
    finally:
        for name in shared:
            del f.__globals__[name]
    assert set(builds) == {0, 1, 2, 5}, builds
    assert template_text(builds[5](ArgSpec(np.dtype(np.float32), (2,)))) == "<Gaussian(f32[2], f32[2])>"
    f32 = np.dtype(np.float32)
    matrix = builds[1](ArgSpec(f32, (3, 3)))
    data, indices, indptr = jax.tree_util.tree_leaves(matrix, is_leaf=lambda x: isinstance(x, (ArgSpec, Static)))
    assert type(matrix) is CSR and data == ArgSpec(f32, (9,)) and isinstance(indices, Static), matrix
    assert list(indptr.value) == [0, 3, 6, 9] and template_text(matrix) == "<CSR(f32[9])>"
    diagonal = builds[0](ArgSpec(f32, (3, 3), "spd"))  # documented symmetric: the diagonal, positive values
    assert jax.tree_util.tree_leaves(diagonal, is_leaf=lambda x: isinstance(x, (ArgSpec, Static)))[0] == \
        ArgSpec(f32, (3,), "positive")
    assert builds[0](ArgSpec(f32, (3,))) == ArgSpec(f32, (3,))
    assert template_text(builds[2](ArgSpec(f32, (2,)))) == "<Params(f32[2], f32[2])>"


def test_parameters_documented_as_symmetric_are_read_in_every_docstring_style() -> None:
    import jax

    from jaxdiag._checks._base import Subject
    from jaxdiag._harness.source import parameter_descriptions
    from jaxdiag._run._operand_kinds import documented_domains

    numpydoc = """Solve.

    Parameters
    ----------
    A : array
        The system matrix, assumed symmetric.
    b :
        The right-hand side; need not be symmetric.
    c : ndarray, non-symmetric
    """
    described = parameter_descriptions(numpydoc, ["A", "b", "c"])
    assert described["b"].strip() == "The right-hand side; need not be symmetric.", described

    def numpy_style(A, b, c): ...

    def google_style(cov, x):
        """Args:
            cov (Array): a positive-definite
                covariance.
            x: the points, not symmetric.
        """

    def sphinx_style(K, y):
        """:param K: SPD kernel matrix
        :param y: targets"""

    def prose(spikes, weight, scale, x):
        """``spikes @ weight``. Valid only when ``spikes`` is exactly binary (values in ``{0, 1}``); ``scale``
        must be strictly positive. A binary search over `x` and `weight` is positive."""

    def kinds(state0, state1, noise, k):
        """Args:
            state0 (tensor_like): ``(2**N, 2**N)`` density matrix.
            state1: a density matrix too.
            noise: the noise covariance matrix.
            k: a covariance function (a callable, no matrix).
        """

    def opposites(a, b, c):
        """Args:
            a: a batch of skew-symmetric matrices.
            b: anti-hermitian.
            c: an anti symmetric generator.
        """

    numpy_style.__doc__ = numpydoc
    found = [documented_domains(Subject("m:f", "custom_vjp", jax.custom_vjp(fn), specs=[]))
             for fn in (numpy_style, google_style, sphinx_style, prose, kinds, opposites)]
    assert found == [{0: "spd"}, {0: "spd"}, {0: "spd"}, {0: "binary", 2: "positive"},
                     {0: "spd", 1: "spd", 2: "spd"}, {}], found


@pytest.fixture(scope="module")
def package() -> dict:
    """One `jaxdiag check operand_kinds` for every CLI test here (a run per module cost a process each)."""
    import os

    here = os.getcwd()
    os.chdir(DATA)
    try:
        return check_json("operand_kinds", DATA)[1]
    finally:
        os.chdir(here)


def _targets(package: dict, module: str) -> dict[str, dict]:
    prefixes = (f"operand_kinds.{module}:", f"operand_kinds/{module}.py:")  # a package run names targets by path
    return {t["target"].rpartition(":")[2]: t for t in package["targets"] if t["target"].startswith(prefixes)}


def test_operand_facts_asserted_by_the_wrapper_that_binds_a_primitive_are_read() -> None:
    """`assert keep.shape == ()`, `assert keep.dtype == jnp.bool_` before `prim.bind(keep, ...)`, and the same
    stated as an `if ...: raise` guard: operand 0 is a boolean scalar (the impl never reads it)."""
    import ast
    import sys

    from jaxdiag._checks._base import Subject
    from jaxdiag._run import _asserted

    sys.path.insert(0, str(DATA))
    try:
        from operand_kinds import asserted
    finally:
        sys.path.remove(str(DATA))
    subject = Subject("operand_kinds.asserted:masked_pick_p", "primitive", asserted.masked_pick_p, specs=[],
                      module="operand_kinds.asserted")
    assert _asserted.asserted_positions(subject) == {"bool": {0}, "int": set(), "scalar": {0}}
    guard = ast.parse("def f(i, x):\n    if i.ndim != 0 or not jnp.issubdtype(i.dtype, jnp.integer):\n"
                      "        raise TypeError\n    assert x.dtype == 'bool' and x.shape == ()\n").body[0]
    assert _asserted._facts(guard) == {"i": {"scalar", "int"}, "x": {"bool", "scalar"}}
    loose = ast.parse("def f(x):\n    assert x.shape == (3,)\n    if x.dtype == jnp.float32:\n        raise E\n"
                      ).body[0]
    assert _asserted._facts(loose) == {}  # a non-scalar shape, and a guard that raises on a float, state nothing


@pytest.mark.slow
def test_a_primitive_whose_wrapper_asserts_a_boolean_scalar_is_checked_inside_that_contract(package: dict) -> None:
    """Before, `keep` was drawn bool[3] (a predicate of the impl's `where`) and the JVP rule's own call of the
    wrapper failed its assertion: a JXG017 warning on inputs the library never passes."""
    (pick,) = _targets(package, "asserted").values()
    assert pick["inputs"] == ["bool[]", "f32[3]", "f32[3]"] and not errors_and_warnings(pick), pick
    statuses = {c["name"]: c["status"] for c in pick["checks"]}
    checks = ("jvp-reference", "batching-rule", "primitive-transpose")
    assert all(statuses[name] == "passed" for name in checks), statuses


@pytest.mark.slow
def test_a_keyed_custom_vjp_and_an_index_taking_jvp_are_checked(package: dict) -> None:
    targets = _targets(package, "keyed")
    relu, rows = targets["noisy_relu"], targets["gather_rows"]
    assert relu["inputs"][1] == "key[]" and rows["inputs"][1].startswith("i32["), (relu, rows)
    (wrong,) = errors_and_warnings(relu)
    assert wrong["code"] == "JXG024", wrong
    assert not errors_and_warnings(rows), rows


@pytest.mark.slow
def test_a_cross_entropy_with_clipped_targets_and_an_ignored_label_is_checked(package: dict) -> None:
    """Its targets reach `take_along_axis` through a helper and a clipped local; its static `ignore_index` has no
    annotation, no default and no literal at its callers. Before, neither target was checked (JXN012)."""
    targets = _targets(package, "cross_entropy")
    for name in ("cross_entropy", "cross_entropy_wrong"):
        assert targets[name]["inputs"] == ["f32[4,4]", "i32[4]@0..3", "f32[4]", "4"], targets[name]
    assert not errors_and_warnings(targets["cross_entropy"]), targets["cross_entropy"]
    assert {f["code"] for f in errors_and_warnings(targets["cross_entropy_wrong"])} & {"JXG014", "JXG024"}


@pytest.mark.slow
def test_the_fixed_keyed_rule_is_clean_and_checked_on_its_own_inputs(package: dict) -> None:
    """Its fwd calls the primal: that is the rule itself, never a caller to check it at (JXN016)."""
    (relu,) = _targets(package, "keyed_good").values()
    assert relu["inputs"] == ["f32[3]", "key[]"] and not errors_and_warnings(relu), relu
    assert not [f for f in relu["findings"] if f["code"] == "JXN016"], relu


def test_a_difference_from_an_expected_zero_is_not_given_a_relative_size() -> None:
    """A rule giving 1.4 where the reference is exactly 0 was described as "max rel 2.57e+307"."""
    import numpy as np

    from jaxdiag._loading._numerics import compare

    text = compare(np.array([1.0, 1.4]), np.array([1.0, 0.0])).describe()
    assert "max abs difference 1.4" in text and "max rel" not in text, text
    assert "max rel 0.5" in compare(np.array([3.0]), np.array([2.0])).describe()


@pytest.mark.slow
def test_an_unbiased_estimator_is_judged_over_keys_and_clean(package: dict) -> None:
    """Score-function estimators (a custom_jvp of a sampled maximum, a custom_vjp of a smoothed ReLU) disagree with
    autodiff at the example's key by construction; before, each was a JXG014 "may be an estimator" warning (and
    JXG024 before that). Averaged over keys they are the derivative of the expected value: checked and clean."""
    targets = _targets(package, "estimator")
    assert set(targets) == {"perturbed_max", "smoothed_relu"}, targets
    for target in targets.values():
        assert target["verified"] and not errors_and_warnings(target), target


@pytest.mark.slow
def test_a_biased_estimator_is_wrong_on_average_over_keys(package: dict) -> None:
    """The same estimators with their scale wrong are as noisy at one key, but many standard errors off on average:
    JXG024 with the averages, where the single-key comparison alone could only say "may be an estimator"."""
    targets = _targets(package, "estimator_biased")
    for name in ("perturbed_max", "smoothed_relu"):
        (finding,) = errors_and_warnings(targets[name])
        assert finding["code"] == "JXG024" and "standard errors apart" in finding["message"], finding


@pytest.mark.slow
def test_an_estimator_of_a_function_with_jumps_keeps_the_estimator_reading(package: dict) -> None:
    """Autodiff of a primal with a jump misses part of the derivative of its expectation (the central difference of
    the key-averaged primal shows it), so it is no reference: neither cleared nor called biased."""
    (gated,) = _targets(package, "estimator_jumps").values()
    first = [f for f in errors_and_warnings(gated) if f["code"] != rules_code("SECOND_ORDER_MISMATCH")]
    (finding,) = first
    assert finding["code"] == rules_code("CUSTOM_DERIVATIVE_MISMATCH"), finding
    assert "Monte-Carlo estimator" in finding["message"], finding


def rules_code(name: str) -> str:
    from jaxdiag import _rules

    return getattr(_rules, name).code


def test_the_expectation_verdict_is_a_z_test_on_paired_differences() -> None:
    """The mean of the per-key differences against its standard error: a deterministic difference (the same at every
    key) is never noise, a noisy one within Z_MAX standard errors is."""
    import numpy as np

    from jaxdiag._checks._gradref import _expectation as ex

    rng = np.random.default_rng(0)
    noise = rng.standard_normal((ex.KEYS, 3))
    assert ex.verdict(ref=noise, got=noise + 0.1 * rng.standard_normal((ex.KEYS, 3)), tol=1e-3).unbiased
    assert not ex.verdict(ref=noise, got=noise + 0.5, tol=1e-3).unbiased
    biased = ex.verdict(ref=noise, got=2.0 * noise + 1.0, tol=1e-3)
    assert not biased.unbiased and biased.z > ex.Z_MAX


@pytest.mark.slow
def test_a_rung_the_rule_refuses_is_outside_the_contract_when_a_later_one_runs_both(package: dict) -> None:
    """`a @ b` runs on vectors, its JVP (written with matrix einsums) does not: before, the first rung the primal ran
    on was taken and the rule's failure there reported (JXG017). Now a rung where the rule runs too wins; a rule that
    fails on every rung is still reported, on the first one."""
    targets = _targets(package, "matrix_rule")
    good, broken = targets["bilinear"], targets["bilinear_broken"]
    assert good["inputs"] == ["f32[3,3]", "f32[3,3]"] and not errors_and_warnings(good), good
    assert broken["inputs"] == ["f32[3]", "f32[3]"], broken
    (failed,) = errors_and_warnings(broken)
    assert failed["code"] == rules_code("DERIVATIVE_RULE_RAISED"), failed


@pytest.mark.slow
def test_a_rule_treating_an_argument_as_a_cache_of_another_gets_no_verdict_on_independent_draws(package: dict) -> None:
    """`solve_cached(matrix, inverse, rhs)` never reads `matrix`; its JVP differentiates through it and ignores the
    cached `inverse`. Before: JXG024 (and a JXG019 following from it) on independently drawn matrix and inverse. Now
    a note naming the reading, and no second-order check on the same inputs."""
    (target,) = _targets(package, "cached").values()
    assert not errors_and_warnings(target), target
    (note,) = [f for f in target["findings"] if f["code"] == rules_code("CHECK_SKIPPED")]
    assert "treats inverse as computed from matrix" in note["message"], note
    second = {c["name"]: c for c in target["checks"]}["grad-second-order"]
    assert second["status"] == "skipped" and "cannot be judged" in second["detail"], second


def test_every_disagreeing_derivative_of_a_sampled_function_is_judged_over_keys() -> None:
    """A subject is cleared only when each derivative that disagreed at the example's key is unbiased: before, only
    the first one was judged, so a biased second argument was cleared with the first."""
    import numpy as np

    from jaxdiag._checks._gradref import _expectation as ex

    same = np.zeros((ex.KEYS, 2))
    unbiased, biased = ex.verdict(same, same, 1e-3), ex.verdict(same + 1.0, same, 1e-3)
    assert ex.first_biased([("x", unbiased), ("w", biased)]) == ("w", biased)
    assert ex.all_unbiased([("x", unbiased), ("w", unbiased)]) and not ex.first_biased([("x", unbiased)])
    assert not ex.all_unbiased([("x", unbiased), ("w", None)]) and not ex.all_unbiased([])


@pytest.mark.slow
def test_container_operands_are_checked_as_their_containers(package: dict) -> None:
    """A tuple-annotated bound pair and a NamedTuple state: inputs of their annotated kind, the correct rules clean,
    the wrong one's lower-bound tangent found (a warning: the inputs are inferred)."""
    targets = _targets(package, "containers")
    clip, standardize, wrong = targets["soft_clip"], targets["standardize"], targets["soft_clip_wrong"]
    assert clip["inputs"][1].startswith("(f32[") and standardize["inputs"][1].startswith("<Moments(f32["), targets
    assert clip["verified"] and standardize["verified"], (clip, standardize)
    assert not errors_and_warnings(clip) and not errors_and_warnings(standardize), (clip, standardize)
    found = errors_and_warnings(wrong)
    assert found and found[0]["code"] == "JXG024", wrong


@pytest.mark.slow
def test_object_operands_are_built_and_documented_symmetry_is_the_contract(package: dict) -> None:
    """A sparse matrix and a dataclass of parameters are built around drawn arrays: every target is checked, the
    wrong JVP found. A solve whose bwd uses A for A.T is judged on the symmetric matrices its docstring promises
    (clean), its undocumented twin on any matrix (wrong)."""
    targets = _targets(package, "objects")
    assert all(t["verified"] for t in targets.values()), targets
    assert targets["sparse_solve"]["inputs"][0].startswith("<CSR("), targets["sparse_solve"]
    assert targets["dense_solve"]["inputs"][0].endswith("@spd"), targets["dense_solve"]
    for name in ("sparse_solve", "affine", "dense_solve"):
        assert not errors_and_warnings(targets[name]), targets[name]
    for name in ("affine_wrong", "dense_solve_undocumented"):
        (wrong,) = errors_and_warnings(targets[name])
        assert wrong["code"] == rules_code("CUSTOM_DERIVATIVE_WRONG"), wrong


@pytest.mark.slow
def test_values_a_docstring_states_are_the_contract(package: dict) -> None:
    """A residual packed to bits is exact for the 0/1 spikes its docstring requires, and a JVP that drops a sign is
    right on the positive values its docstring requires: both clean on those draws. Their undocumented twins are
    judged on normal draws, where both are wrong."""
    targets = _targets(package, "documented")
    spikes, power = targets["spike_dense"], targets["abs_power"]
    assert spikes["inputs"][0].endswith("@binary") and power["inputs"][0].endswith("@positive"), (spikes, power)
    for name in ("spike_dense", "abs_power"):
        assert targets[name]["verified"] and not errors_and_warnings(targets[name]), targets[name]
    for name in ("spike_dense_undocumented", "abs_power_undocumented"):
        assert errors_and_warnings(targets[name]), targets[name]
    second = {name: next(c for c in targets[name]["checks"] if c["name"] == "grad-second-order")
              for name in ("spike_dense", "spike_dense_undocumented")}
    assert second["spike_dense"]["status"] == "skipped" and "docstring" in second["spike_dense"]["detail"], second
    assert "docstring" not in (second["spike_dense_undocumented"].get("detail") or ""), second


def test_a_docstring_that_rules_out_second_derivatives_is_read_sentence_by_sentence() -> None:
    from jaxdiag._checks._grad_second_order import documented_first_order_only

    def first_order(x):
        """Fast path. Only the first-order VJP is correct; second-order derivatives (grad-of-grad) are not."""

    def hessian_free(x):
        """Not a solver. Its Hessian is exact."""

    def unsupported(x):
        """Higher-order derivatives are not supported."""

    assert documented_first_order_only(first_order).startswith("second-order derivatives")
    assert documented_first_order_only(hessian_free) == "" and documented_first_order_only(None) == ""
    assert documented_first_order_only(unsupported) == "Higher-order derivatives are not supported."


def test_parameters_handed_to_a_symmetric_factorisation_are_found() -> None:
    import jax

    from jaxdiag._checks._base import Subject
    from jaxdiag._run._operand_kinds import factorised_positions

    def solve(K, y, B, C):
        L = jax.scipy.linalg.cholesky(K, lower=True)  # K: symmetric positive definite
        w, v = jax.numpy.linalg.eigh(C)  # C: symmetric
        return jax.numpy.linalg.eig(B), L @ y, jax.numpy.linalg.eigh(B @ B.T), w, v  # B itself: no contract

    assert factorised_positions(Subject("m:solve", "function", solve, specs=[])) == {0, 3}


@pytest.mark.slow
def test_a_primitive_is_checked_on_the_complex_data_its_abstract_eval_describes() -> None:
    """A transform of complex coefficients at real points: on the real coefficients its wrapper was inferred with,
    its abstract eval (the coefficients' dtype) disagrees with its impl (complex): outside its contract. The bind
    params that wrapper passes are kept, and its own inference prefers the rung its abstract eval describes. An
    abstract eval wrong on every input is still reported (JXR003), on the first rung that ran."""
    targets = {t["target"].split(":")[-1]: t for t in check_json("operand_kinds.complex_data", DATA)[1]["targets"]}
    good = targets["phase_sum_p"]
    assert good["inputs"] == ["f32[3]", "c64[3]"] and good["verified"]
    assert {f["code"] for f in good["findings"] if f["severity"] != "info"} == set()
    assert "JXR003" in {f["code"] for f in targets["fixed_dtype_sum_p"]["findings"]}


@pytest.mark.slow
def test_an_operand_its_bwd_returns_a_scalar_cotangent_for_is_drawn_as_a_scalar() -> None:
    """The primal broadcasts a scalar rate drawn as f32[3]; its bwd's scalar cotangent for it (which JAX rejects
    there) says it is a scalar: drawn f32[], the rule is clean. Before, JXG010 on inputs outside its contract."""
    target = check_json("operand_kinds.scalar_cotangent", DATA)[1]["targets"][0]
    assert target["inputs"] == ["f32[3]", "f32[3]", "f32[]"] and target["verified"]
    assert {f["code"] for f in target["findings"] if f["severity"] != "info"} == set()


def test_jax_rejecting_a_bwd_output_shape_is_read_as_the_argument_and_both_shapes() -> None:
    import jax
    import jax.numpy as jnp

    from jaxdiag import _compat

    @jax.custom_vjp
    def f(x, s):
        return x * jnp.sum(s)

    f.defvjp(lambda x, s: (f(x, s), (x, s)), lambda res, g: (g * jnp.sum(res[1]), jnp.sum(g * res[0])))
    with pytest.raises(Exception) as caught:
        jax.grad(lambda x, s: f(x, s).sum(), argnums=(0, 1))(jnp.ones(3), jnp.ones(3))
    assert _compat.bwd_cotangent_mismatch(caught.value) == (1, (), (3,))
    assert _compat.bwd_cotangent_mismatch(ValueError("another error")) is None


@pytest.mark.slow
def test_csr_operands_named_as_such_get_a_valid_structure() -> None:
    """Row offsets and column indices beside CSR values: random integers are never a row-pointer array, so the
    host solve refused every rung. A diagonal structure (offsets 0..n, columns 0..n-1) runs: checked, clean."""
    target = check_json("operand_kinds.csr_solve", DATA)[1]["targets"][0]
    assert target["inputs"] == ["f32[3]", "f32[3]", "i32[4]@diagonal", "i32[3]@diagonal"] and target["verified"]
    assert {f["code"] for f in target["findings"] if f["severity"] != "info"} == set()


def test_csr_rungs_need_both_offsets_and_columns() -> None:
    import numpy as np

    from jaxdiag._run._sparse_operands import csr_rungs

    f32 = np.dtype(np.float32)
    assert [str(s) for s in csr_rungs(["data", "indices", "indptr", "b"], [0, 1, 2, 3], f32)[0]] == [
        "f32[3]", "i32[3]@diagonal", "i32[4]@diagonal", "f32[3]"]
    assert csr_rungs(["data", "indices", "b"], [0, 1, 2], f32) == []  # no offsets: not a CSR matrix
