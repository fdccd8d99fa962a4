"""Inputs only their authors' statements give (probe package tests/data/stated_shapes): the axes a kernel's code
unpacks (`batch, seq, heads, dim = q.shape`), the shapes a docstring of its module gives ("of shape ``(batch,
seq)``"), and the other values of a `Literal` static whose default cannot run here. Before, the plain ladder (rank 0
to 3, one shape for all) found none of these targets' inputs (JXN004): they were not checked."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from clirun import check_json

DATA = Path(__file__).parent / "data"


def _targets(module: str) -> dict[str, dict]:
    return {t["target"].split(":")[-1]: t for t in check_json(f"stated_shapes.{module}", DATA)[1]["targets"]}


def _codes(target: dict) -> set[str]:
    return {f["code"] for f in target["findings"] if f["severity"] != "info"}


@pytest.mark.slow
def test_an_attention_kernel_is_checked_on_its_stated_shapes_and_reference_path() -> None:
    targets = _targets("attention")
    # q's axes from the kernel's unpacking, the mask's from the public wrapper's docstring; the `kernel` static's
    # default only traces here (a CUDA-only primitive), so its Literal's other value, the reference path, is run
    arrays = ["f32[2,3,4,5]", "f32[2,3,4,5]", "f32[2,3,4,5]", "f32[2,3]"]
    assert targets["attention_wrong_bwd"]["inputs"] == [*arrays, "'reference'"]
    assert _codes(targets["attention_wrong_bwd"]) & {"JXG011", "JXG014", "JXG024"}  # the mask it forgets
    assert targets["attention"]["inputs"] == [*arrays, "'reference'"]  # where the wrapper calls it
    assert _codes(targets["attention"]) == set()
    # the fused kernel itself: its abstract eval unpacks q; checked abstractly (JXN013), never skipped
    assert targets["fused_attention_p"]["inputs"] == arrays
    assert "JXN013" in {f["code"] for f in targets["fused_attention_p"]["findings"]}
    assert all(t["verified"] for name, t in targets.items() if name != "attention_wrong_bwd")


@pytest.mark.slow
def test_a_primitive_whose_abstract_eval_unpacks_its_operand_gets_that_rank_and_a_trailing_weight() -> None:
    targets = _targets("norm_primitive")
    assert targets["norm_p"]["inputs"] == ["f32[2,3,4]", "f32[4]"]
    assert _codes(targets["norm_p"]) == set()
    assert "JXB005" in _codes(targets["norm_bad_p"])


def test_axes_are_read_from_unpacking_and_every_docstring_style() -> None:
    import jax

    from jaxdiag._checks._base import Subject
    from jaxdiag._run._stated_shapes import stated_axes, stated_rungs

    def kernel(x, w, b, m, n):
        """Kernel.

        Args:
            w: Weights, shape (D,)
            b: Bias of shape [B, 1, D].
            m: mask, of shape ``(batch, seq)``
            n: a norm (shape unknown)
        """
        batch, seq, D = x.shape
        return x

    subject = Subject("m:kernel", "custom_vjp", jax.custom_vjp(kernel), specs=[])
    names = ["x", "w", "b", "m", "n"]
    statements = stated_axes(subject, names)
    # together (the code's unpacking first), then each source alone, most positions first
    assert statements == [{0: ("batch", "seq", "D"), 1: ("D",), 2: ("B", "1", "D"), 3: ("batch", "seq")},
                          {1: ("D",), 2: ("B", "1", "D"), 3: ("batch", "seq")}, {0: ("batch", "seq", "D")}]
    f32 = np.dtype(np.float32)
    rungs = [[s.shape for s in rung] for rung in stated_rungs([0, 1, 2, 3, 4], statements[:1], f32)]
    # one size per axis name across operands, an integer axis as written, the unstated one at the first's shape
    assert rungs[0] == [(2, 3, 4), (4,), (5, 1, 4), (2, 3), (2, 3, 4)]
    # then leading parts, trailing parts, a scalar
    assert [rung[4] for rung in rungs[:6]] == [(2, 3, 4), (2, 3), (2,), (3, 4), (4,), ()]
    # then all of it with the sizes in the other order (relations between axes the statement leaves unsaid go
    # either way)
    assert rungs[6] == [(5, 4, 3), (3,), (2, 1, 3), (5, 4), (5, 4, 3)]
    assert [rung[4] for rung in rungs[6:12]] == [(5, 4, 3), (5, 4), (5,), (4, 3), (3,), ()]
    # last, every named axis at one size (an integer axis as written), the unstated one at its shape and parts
    assert rungs[12] == [(4, 4, 4), (4,), (4, 1, 4), (4, 4), (4, 4, 4)]
    assert [rung[4] for rung in rungs[12:]] == [(4, 4, 4), (4, 4), (4,), ()]
    assert list(stated_rungs([0, 1], [], f32)) == []


def test_of_several_unstated_operands_each_takes_a_part_alone_beside_the_others_at_the_stated_shape() -> None:
    from jaxdiag._run._stated_shapes import stated_rungs

    rungs = [[s.shape for s in rung] for rung in stated_rungs([0, 1, 2], [{0: ("n", "d")}], np.dtype(np.float32))]
    # all unstated at the stated shape, at its parts, as scalars; then each alone at a part, the last one first
    assert rungs[:4] == [[(2, 3), (2, 3), (2, 3)], [(2, 3), (2,), (2,)], [(2, 3), (3,), (3,)], [(2, 3), (), ()]]
    assert rungs[4:6] == [[(2, 3), (2, 3), (2,)], [(2, 3), (2,), (2, 3)]]
    assert [[(4, 4), (4, 4), (4,)]] == [r for r in rungs if r == [(4, 4), (4, 4), (4,)]]  # and at one size


def test_the_code_states_axes_by_starred_unpacking_einops_patterns_and_the_functions_it_calls() -> None:
    import ast

    from jaxdiag._run._code_axes import _named_axes, code_axes

    def named(source: str) -> dict:
        return _named_axes(ast.parse(source).body[0])

    # a starred shape among items of known length: one index, a constant slice; two starred shapes of unknown
    # length say nothing
    assert named("def f(q, v):\n    b, h, n, d, e = *q.shape, v.shape[-1]") == {"q": ("b", "h", "n", "d")}
    assert named("def f(q, v):\n    b, h, n, d, m, e = *q.shape, *v.shape[-2:]") == {"q": ("b", "h", "n", "d")}
    assert named("def f(q, v):\n    n, d, m, e = *q.shape, *v.shape") == {}
    # einops patterns, alone or mapped over operands; a grouped or elided input side says nothing
    assert named("def f(m):\n    m = rearrange(m, 'b j -> j b')") == {"m": ("b", "j")}
    assert named("def f(q, k):\n    q, k = map(lambda t: rearrange(t, 'b n d -> n b d'), (q, k))") == {
        "q": ("b", "n", "d"), "k": ("b", "n", "d")}
    assert named("def f(q):\n    q = rearrange(q, 'b n (h d) -> b h n d', h=2)") == {}
    # one array named twice at one rank: the second names are the first's axes, for every operand using them; a
    # statement after the name is bound again is about another array
    assert named("def f(q, k):\n    b, h, n, d = q.shape\n    q, k = map(lambda t: rearrange(t, 'x y z w -> z x y w'),"
                 " (q, k))\n    s, t = q.shape") == {"q": ("b", "h", "n", "d"), "k": ("b", "h", "n", "d")}
    assert code_axes(_wrapper) == {0: ("batch", "n", "dim")}  # by the wrapper's positions


def _inner(queries, keys, mask):
    batch, n, dim = queries.shape
    return queries


def _wrapper(x, mask, y):
    return _inner(x, keys=y, mask=mask)


def test_a_literal_static_offers_its_other_values_evaluated_or_postponed() -> None:
    import jax

    from jaxdiag._checks._base import Subject
    from jaxdiag._loading._inputs import Static
    from jaxdiag._run._static_choices import literal_alternatives, literal_values

    assert literal_values(Literal["pallas", "reference"]) == ["pallas", "reference"]
    assert literal_values("Literal['a', 'b']") == ["a", "b"]
    assert literal_values("typing.Literal[1, 2]") == [1, 2]
    assert literal_values("str") == [] and literal_values(int) == []

    def f(x, mode: Literal["gpu", "cpu", "tpu"] = "gpu", flag: bool = False):
        return x

    subject = Subject("m:f", "custom_vjp", jax.custom_vjp(f, nondiff_argnums=(1, 2)), specs=[])
    statics = {1: Static("gpu"), 2: Static(False)}
    assert [c[1].value for c in literal_alternatives(subject, statics)] == ["cpu", "tpu"]


@pytest.mark.slow
def test_a_float_static_without_default_takes_a_value_that_shows_a_dropped_factor() -> None:
    """`scale: float` in nondiff_argnums with no default: any float is in its contract; 0.5 (never 1.0) shows a
    backward pass that forgets the factor. Before, neither target was checked (JXN012)."""
    targets = _targets("scaled")
    assert targets["scaled_tanh"]["inputs"] == ["f32[3]", "0.5"]
    assert _codes(targets["scaled_tanh"]) == set()
    assert _codes(targets["scaled_tanh_forgets_scale"]) == {"JXG024"}
    assert targets["_ordered_sine"]["inputs"] == ["0.5", "f32[3]"]  # `_ordered_sine(float(nu), ...)` in its module
    assert _codes(targets["_ordered_sine"]) == {"JXG024"}


@pytest.mark.slow
def test_a_bool_static_without_default_takes_the_values_its_annotation_declares() -> None:
    """`normalize: bool` in nondiff_argnums with no default and callers passing a variable: True (then False) is in
    its contract. Before, neither softmax was checked (JXN012); the one whose rule forgets the denominator is wrong
    only with the flag set."""
    targets = _targets("flagged")
    assert targets["softmax"]["inputs"] == ["f32[3]", "True"]
    assert _codes(targets["softmax"]) == set()
    assert targets["softmax_forgets_denominator"]["inputs"] == ["f32[3]", "True"]
    assert _codes(targets["softmax_forgets_denominator"]) & {"JXG014", "JXG024"}
    assert {f["severity"] for f in targets["softmax_forgets_denominator"]["findings"]
            if f["code"] in ("JXG014", "JXG024")} == {"warning"}  # declared by an annotation, not by a caller


def test_declared_values_of_a_static() -> None:
    import inspect

    from jaxdiag._run._declared import declared_values

    def f(flag: bool, mode: Literal["fast", "exact"], scale: float, other):  # noqa: ANN001
        return flag

    params = inspect.signature(f).parameters  # postponed annotations here: strings, as in many libraries
    assert [declared_values(params[n]) for n in ("flag", "mode", "scale", "other")] == [
        [True, False], ["fast", "exact"], [], []]
    assert declared_values(inspect.Parameter("flag", inspect.Parameter.POSITIONAL_ONLY, annotation=bool)) == [
        True, False]

    def g(periodic: tuple[bool, bool], flags: tuple[bool, ...], mixed: tuple[int, bool]):  # noqa: ANN001
        return periodic

    # a fixed-length tuple of flags (a periodicity per axis): all set, then none; postponed or evaluated
    postponed = inspect.signature(g).parameters
    assert [declared_values(postponed[n]) for n in ("periodic", "flags", "mixed")] == [
        [(True, True), (False, False)], [], []]
    evaluated = inspect.Parameter("periodic", inspect.Parameter.POSITIONAL_ONLY, annotation=tuple[bool, bool, bool])
    assert declared_values(evaluated) == [(True, True, True), (False, False, False)]


@pytest.mark.slow
def test_a_float_annotated_scalar_that_runs_as_an_array_is_never_swapped_for_a_python_float() -> None:
    """The Python-float form is only for a scalar the target cannot take as an array: a callback whose scalars run
    as f32[] (reverse mode does not) keeps them, so `jax.vmap` batches them and its missing vmap_method shows."""
    from clirun import missing_vmap_method_code

    (target,) = _targets("callback").values()
    assert target["inputs"][:2] == ["f32[]", "f32[]"]
    assert missing_vmap_method_code() in _codes(target)


@pytest.mark.slow
def test_a_kernel_annotated_in_jaxtyping_notation_is_checked_on_its_annotated_ranks() -> None:
    """Rank-4 operands only the annotations state (`Float[Array, "batch seq q_heads dim"]`); a float operand named
    `key`; query heads that must be a multiple of the key-value heads (every named axis at one size); a
    `scale: float` its public wrapper passes as `None` before resolving it. Before, neither target was checked
    (JXN004: the ladder stops at rank 3, `key` was drawn as a PRNG key). The distinct sizes in order of first
    appearance give 4 query heads and 6 key-value heads; in the other order, 4 and 2 (a multiple), or every axis at
    4: either holds the unstated relation."""
    targets = _targets("annotated")
    for name in ("gqa_attention_core", "gqa_attention_wrong"):
        query, key, value, scale = targets[name]["inputs"]
        q, k = _dims(query), _dims(key)
        assert len(q) == 4 and key == value and q[:2] == k[:2] and q[3] == k[3] and q[2] % k[2] == 0, name
        assert scale == "0.5"
    assert _codes(targets["gqa_attention_core"]) == set()
    assert "JXG024" in _codes(targets["gqa_attention_wrong"])  # the forgotten scale on the query's gradient


def _dims(spec: str) -> list[int]:
    return [int(d) for d in spec.partition("[")[2].partition("]")[0].split(",")]


def test_jaxtyping_annotations_are_read_as_jaxtyping_reads_them() -> None:
    from jaxdiag._run._annotated_arrays import AnnotatedArray, annotated_arrays

    def kernel(q: "Float[Array, 'batch #seq *rest 3']", idx: Int[Array, "_ n"] | None,  # noqa: F722, F821
               mask: Optional[Bool[Array, ""]], k: "Key[Array, '']", w: "Float[Array, 'n+1']",  # noqa: F722, F821
               plain: "jax.Array", scale: float):  # noqa: F821
        return q

    found = annotated_arrays(kernel)
    assert found == {0: AnnotatedArray("float", ("batch", "seq", "3")), 1: AnnotatedArray("int", ("_1_0", "n")),
                     2: AnnotatedArray("bool", ()), 3: AnnotatedArray("key", ()), 4: AnnotatedArray("float", None)}


def test_a_callers_none_reaches_no_static_whose_annotation_excludes_it() -> None:
    import inspect

    from jaxdiag._run._declared import admits_none

    def f(a: float, b: float | None, c: Optional[float], d, e: Any):  # noqa: ANN001, F821
        return a

    params = inspect.signature(f).parameters
    assert [admits_none(params[n]) for n in "abcde"] == [False, True, True, True, True]


@pytest.mark.slow
def test_an_enum_static_without_default_takes_its_members() -> None:
    """`direction: Direction` in nondiff_argnums, no default, a variable at every call: each member is in its
    contract, and the first is taken (as a `bool` or a `Literal` static's first value). Before, neither target was
    checked (JXN012); the backward pass forgetting the member's rate is found."""
    targets = _targets("enumerated")
    assert targets["exponential"]["inputs"] == ["f32[3]", "<Direction.GROW>"]
    assert _codes(targets["exponential"]) == set()
    assert _codes(targets["exponential_wrong"]) == {"JXG024"}


def test_an_enum_annotation_declares_its_members() -> None:
    import enum
    import inspect

    from jaxdiag._loading._inputs import static_text
    from jaxdiag._run._declared import declared_values

    class Mode(enum.Enum):
        FAST = "fast"
        EXACT = "exact"

    param = inspect.Parameter("mode", inspect.Parameter.POSITIONAL_ONLY, annotation=Mode)
    assert declared_values(param) == [Mode.FAST, Mode.EXACT]
    assert static_text(Mode.EXACT) == "<Mode.EXACT>"


@pytest.mark.slow
def test_a_static_without_any_value_is_a_number_where_its_code_or_docstring_uses_one() -> None:
    """nondiff statics with no default, annotation or caller's literal: `exp(-nu * x)` makes `nu` a number (0.5,
    so a JVP dropping the rate shows), `range(p)` an int, "for real s > 1" bounds the number, and a wrapper's
    `functools.wraps` reference gives the signature and `v : float`; sizes and a flag handed on to a helper are
    read there. Before, none was checked (JXN012); a static compared with a string still is not."""
    targets = _targets("used_statics")
    assert targets["decay"]["inputs"] == ["0.5", "f32[3]"] and _codes(targets["decay"]) == set()
    assert _codes(targets["decay_drops_rate"]) == {"JXG024"}
    assert targets["stepped"]["inputs"][1] == "4" and _codes(targets["stepped"]) == set()
    assert targets["shifted_zeta"]["inputs"] == ["f32[3]", "1.5"] and _codes(targets["shifted_zeta"]) == set()
    assert targets["wrapped_order"]["inputs"] == ["0.5", "f32[3]"] and _codes(targets["wrapped_order"]) == set()
    assert targets["gridded"]["inputs"][1:] == ["4", "4", "True"] and _codes(targets["gridded"]) == set()
    # two flags, each refusing on one pass: the reference path, both off, is the one where forward and reverse run
    assert targets["two_paths"]["inputs"][1:] == ["False", "False"] and _codes(targets["two_paths"]) == set()
    assert not targets["moded"]["verified"]
    assert {f["code"] for f in targets["moded"]["findings"]} == {"JXN012"}


def test_how_code_uses_a_parameter_says_whether_it_is_a_number() -> None:
    import ast
    import textwrap

    from jaxdiag._run._static_use import _uses

    def kinds(source: str) -> dict[str, set[str]]:
        return _uses(ast.parse(textwrap.dedent(source)).body[0], {}, 0)

    assert kinds("def f(nu, x): return (x / 2) ** -nu") == {"nu": {"number"}, "x": {"number"}}
    assert kinds("def f(p, x):\n for k in range(p + 1): x = x * k\n return x")["p"] == {"int", "number"}
    assert kinds("def f(s, x): return jnp.where(s < 3, x, 0)")["s"] == {"number"}
    assert kinds("def f(a, x): return jnp.asarray(a).dtype")["a"] == {"number"}
    assert kinds("def f(mode, x): return x if mode == 'fast' else -x")["mode"] == {"other"}
    assert kinds("def f(name, x): return name + '_suffix'")["name"] == {"other"}
    assert kinds("def f(cfg, x): return x * cfg.scale")["cfg"] == {"other"}
    assert kinds("def f(fn, x): return fn(x) + 1")["fn"] == {"other"}
    assert "helper" not in kinds("def f(helper, x): return g(helper, x)")  # passed on: nothing said
    assert kinds("def f(flag, x): return x if flag else -x")["flag"] == {"bool"}
    assert kinds("def f(ny, x): return segment_sum(x, ids, num_segments=ny * 2)")["ny"] == {"int", "number"}
    assert kinds("def f(n, x): return jnp.zeros((n, 3)) + x")["n"] == {"int"}


def test_a_ufuncs_generic_input_names_read_its_docstring_entries_in_order() -> None:
    """A NumPy ufunc's signature says `x1, x2`; its docstring documents `v : array_like`, `z : ...`: the first
    input is `v`, a number."""
    import inspect

    from jaxdiag._checks._base import Subject
    from jaxdiag._run._static_use import _documented_types

    def ufunc_like(x1, x2):  # noqa: ANN001, ANN202
        return x1

    ufunc_like.__doc__ = ("Bessel.\n\nParameters\n----------\nv : array_like of float\n    Order.\n"
                          "z : complex\n    Arg.\n")
    names = list(inspect.signature(ufunc_like).parameters)
    assert _documented_types(Subject("m:f", "function", ufunc_like, specs=[]), names) == {
        "x1": "array_like of float"}


def test_a_documented_bound_places_the_drawn_number_inside_it() -> None:
    from jaxdiag._checks._base import Subject
    from jaxdiag._run._static_use import documented_value

    def subject(doc: str) -> Subject:
        def f(x, s):  # noqa: ANN001, ANN202
            return x

        f.__doc__ = doc
        return Subject("m:f", "function", f, specs=[])

    assert documented_value(subject("for real s > 1"), "s", 0.5) == 1.5
    assert documented_value(subject("requires 0 < s < 1"), "s", 0.5) == 0.5
    assert documented_value(subject("valid for s <= -2"), "s", 0.5) == -2.5
    assert documented_value(subject("2 <= s < 4 only"), "s", 0.5) == 3.0
    assert documented_value(subject("no bound; sigma > 3 is another name"), "s", 0.5) == 0.5


@pytest.mark.slow
def test_attention_forwarding_to_a_function_that_unpacks_a_starred_shape_is_checked_on_those_shapes() -> None:
    targets = _targets("chunked")
    for name in ("chunked_attention", "chunked_attention_unmasked"):
        (q, k, v, mask) = targets[name]["inputs"]
        assert len(_shape(q)) == 4 and q == k == v and _shape(mask) == _shape(q)[:1] + _shape(q)[2:3], targets[name]
    assert _codes(targets["chunked_attention"]) == set()
    assert _codes(targets["chunked_attention_unmasked"]) & {"JXG011", "JXG014", "JXG024"}  # the mask it forgets


def _shape(spec: str) -> tuple[int, ...]:
    return tuple(int(n) for n in spec.partition("[")[2].rstrip("]").split(",") if n)
