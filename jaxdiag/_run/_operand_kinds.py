"""What a rule's own code says an operand is, read from its source: an array index, a PRNG key, a container of
arrays, or an object made of arrays.

Inference draws float arrays by default; a float is never a valid index, and never a key, and an operand annotated
as a tuple, a list or a NamedTuple of arrays (`cache: tuple[Array, Array]`, `state: SolverState`) is never one array.
An operand its docstring says is symmetric or positive definite, exactly 0 or 1, in [0, 1], or positive (numpydoc's
`A : ... assumed symmetric`, Google's `A: symmetric matrix.`, Sphinx's `:param A: ...`, or a sentence quoting it:
"``spikes`` must be exactly binary"; or a statement naming it bare, "for x in the interval [0, 1]") is drawn on that
domain (spd, binary, unit, positive), as a declared `@spd` is: its author states the values as the contract (a
solve that reuses `A` for `A.T`, a residual packed to bits, a polynomial basis defined only on [0, 1]).
Nor is one annotated as a pytree class (`A: CSC`, jaxtyping's `Float[BCOO, "n n"]`, a registered dataclass of
arrays): an example instance is built from the rung's array (the class's `fromdense`, or its constructor with that
array for each array field), and its float leaves are drawn, its other leaves (a sparse matrix's indices) kept as
built. `_climb` draws the positions found here as int32 indices inside every operand's extent, as typed PRNG keys,
and as that container or object.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

from .. import _compat
from .._checks._base import Subject
from .._harness.source import annotation_text, dotted_name, parse_annotation, resolved, union_members
from ._made_objects import annotation_classes, factory_build

# Calls whose second argument indexes the first (`jnp.take(x, idx)`, `jnp.take_along_axis(x, idx, axis=1)`).
_INDEX_CALLS = {"take", "take_along_axis"}


def index_positions(subject: Subject) -> set[int]:
    """Positions of the parameters the target's own code indexes an array with: `x[idx]`, `x.at[idx]`,
    `jnp.take(x, idx)`, `jnp.take_along_axis(x, idx, ...)` (for a primitive, in its impl), directly, through a
    local computed from that parameter alone (`safe = jnp.clip(targets, 0, n - 1)`, `t = targets.astype(int)`), or
    in a helper function of the user's it hands the parameter to (one call deep: `return _loss(logits, targets)`).
    A float array is never a valid index, so inference draws integers there, inside every operand's extent
    (`_climb`)."""
    fn = _fn(subject)
    return _indexing(fn, depth=1) if fn is not None else set()


def _indexing(fn: Any, depth: int) -> set[int]:
    from .._core import _locate
    from .._harness.source import called_name, function_source

    found = function_source(fn)
    if found is None:
        return set()
    names = [a.arg for a in found.node.args.posonlyargs + found.node.args.args]
    used: set[str] = set()
    namespace = getattr(_locate.unwrap(fn), "__globals__", {})
    for sub in ast.walk(found.node):
        if isinstance(sub, ast.Subscript):
            index = sub.slice
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            used.update(p.id for p in parts if isinstance(p, ast.Name))
        elif isinstance(sub, ast.Call) and called_name(sub.func) in _INDEX_CALLS:
            given = sub.args[1:2] + [k.value for k in sub.keywords if k.arg == "indices"]
            used.update(name for g in given for name in _indexed_by(g))
        elif depth and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            helper = namespace.get(sub.func.id)
            if inspect.isfunction(helper) and _locate.is_user_code(helper):
                for i in _indexing(helper, depth - 1):
                    arg = sub.args[i] if i < len(sub.args) else None
                    if isinstance(arg, ast.Name):
                        used.add(arg.id)
    aliases = _derived_from_one(found.node, names)
    used |= {aliases[name] for name in used if name in aliases}
    return {i for i, name in enumerate(names) if name in used}


# Calls whose first argument's values, kept or reshaped, are their result's (`jnp.clip(idx, 0, n - 1)`)
_VALUE_KEEPING = {"clip", "asarray", "array", "reshape", "ravel", "expand_dims", "squeeze", "broadcast_to"}


def _indexed_by(node: ast.expr) -> list[str]:
    """The name an index argument is made of: `idx`, `idx[..., None]`, `idx.astype(jnp.int32)`,
    `jnp.clip(idx, 0, n - 1)`."""
    from .._harness.source import called_name

    while True:
        if isinstance(node, ast.Name):
            return [node.id]
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            node = node.func.value
        elif isinstance(node, ast.Call) and node.args and called_name(node.func) in _VALUE_KEEPING:
            node = node.args[0]
        else:
            return []


_SHAPE_READS = {"shape", "ndim", "size", "dtype"}


def _derived_from_one(node: ast.AST, params: list[str]) -> dict[str, str]:
    """{local: parameter} for the locals assigned (in order) from an expression whose values come from one
    parameter only: `safe = jnp.clip(targets, 0, vocab - 1)` with `vocab` not a parameter. A read of a shape
    (`vocab = logits.shape[-1]`) makes no alias: it is a size, not the parameter's values."""
    aliases: dict[str, str] = {}
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name)):
            continue
        inside = list(ast.walk(sub.value))
        if any(isinstance(n, ast.Attribute) and n.attr in _SHAPE_READS for n in inside):
            continue
        sources = {aliases.get(n.id, n.id) for n in inside if isinstance(n, ast.Name)} & set(params)
        if len(sources) == 1 and sub.targets[0].id not in params:
            aliases[sub.targets[0].id] = sources.pop()
    return aliases


# Factorisations defined on symmetric (Hermitian) or positive-definite matrices only (`jnp.linalg.eigh`,
# `jax.scipy.linalg.cholesky`, `cho_factor`): eigh of a general matrix reads one triangle, cholesky fails.
_SYMMETRIC_CALLS = {"eigh", "eigvalsh", "cholesky", "cho_factor"}


def factorised_positions(subject: Subject) -> set[int]:
    """Positions of the parameters the target's own code hands straight to a symmetric factorisation
    (`jnp.linalg.eigh(A)`, `cholesky(A)`), itself or through a function of its module it passes them to (`_root(m)`,
    one call deep): a symmetric positive-definite matrix is inside that contract, a random square one is not (a
    custom eigh VJP agrees with autodiff on symmetric matrices and symmetric steps only), so inference draws them on
    the spd domain, as a docstring saying "symmetric" does (`documented_domains`)."""
    fn = _fn(subject)
    return _factorised(fn, depth=1) if fn is not None else set()


def _factorised(fn: Any, depth: int) -> set[int]:
    from .._harness.source import called_name, function_source
    from ._code_axes import module_calls

    found = function_source(fn)
    if found is None:
        return set()
    used = {sub.args[0].id for sub in ast.walk(found.node) if isinstance(sub, ast.Call) and sub.args
            and isinstance(sub.args[0], ast.Name) and called_name(sub.func) in _SYMMETRIC_CALLS}
    names = [a.arg for a in found.node.args.posonlyargs + found.node.args.args]
    out = {i for i, name in enumerate(names) if name in used}
    for callee, passed in module_calls(fn, found, names) if depth > 0 else ():
        out |= {passed[j] for j in _factorised(callee, depth - 1) if j in passed}
    return out


# Parameter names that hold a PRNG key (`key`, `rng`, `prng_key`, `rng_key`, `subkey`, `dropout_rng`), and the
# annotations that type one (`PRNGKeyArray`, `jax.random.PRNGKey`, `KeyArray`).
_KEY_NAME = re.compile(r"^(key|subkey|rng|prng|prng_key|rng_key|random_key|\w+_key|\w+_rng)$")
_KEY_ANNOTATION = re.compile(r"PRNGKey|KeyArray|PRNGKeyArray")
_ATTENTION_NAMES = {"query", "value", "queries", "values"}
# ... unless the name says it is something else keyed (`sort_key`, `cache_key`, `dict_key`).
_NOT_A_KEY = re.compile(r"^(sort|cache|dict|hash|lookup|group|attr|name|table|primary|foreign)_key$")


def key_positions(subject: Subject) -> set[int]:
    """Positions of the parameters named or annotated as a PRNG key (a function's or a custom rule's; a primitive's
    operands have no such names)."""
    from .._run._signature import positional, signature_of

    if subject.kind == "primitive":
        return set()
    params = positional(signature_of(subject))
    # attention's `key` sits beside its `query` and `value`: an array of keys, not a PRNG key
    attention = bool({p.name for p in params} & _ATTENTION_NAMES)
    out = set()
    for i, param in enumerate(params):
        text = annotation_text(param.annotation)
        named = _KEY_NAME.match(param.name) and not _NOT_A_KEY.match(param.name)
        if _KEY_ANNOTATION.search(text) or (named and not (attention and param.name == "key")):
            out.add(i)
    return out


# "[0, 1]", "(0, 1]", "the closed interval [0.0, 1.0]", "the unit interval (0, 1)": an interval from 0 to 1
_UNIT_INTERVAL = (r"((closed|open|half-open)\s+)?(unit\s+)?(interval|range)?\s*[\[(]\s*0(\.0*)?\s*,\s*1(\.0*)?\s*"
                  r"[\])]")
# What a parameter's description says of the values it must hold, by domain, most specific first ("positive definite"
# is spd, never positive); the words before a match that deny it ("non-symmetric", "need not be binary").
# "asymmetric" never matches (`\b`).
_DOCUMENTED = (
    # a matrix kind positive (semi-)definite by definition says so too (a density matrix, a covariance matrix); a
    # skew- or anti-symmetric (-hermitian) one is the opposite of symmetric
    ("spd", re.compile(r"(?<!skew-)(?<!skew )(?<!anti-)(?<!anti )\b(symmetric|hermitian|self-adjoint|"
                       r"positive[- ]?(semi[- ]?)?definite|s\.?p\.?d|p\.?s\.?d|"
                       r"(density|covariance|gram|correlation|precision)\s+matri(x|ces))\b", re.IGNORECASE)),
    ("binary", re.compile(r"\b(exactly\s+)?binary\b(?!\s+(cross|search|file|tree|op|operation|classifi))|"
                          r"\{\s*0\s*,\s*1\s*\}|\b0\s*/\s*1\b|\b0\s+or\s+1\b|\bzeros\s+(and|or)\s+ones\b",
                          re.IGNORECASE)),
    # the unit interval, as stated ("in the interval [0, 1]", "within (0, 1)", "between 0 and 1"); a bare "(0, 1)"
    # is a shape or a pair of axes as often, so only after words that make it an interval
    ("unit", re.compile(r"\b(in|within|on|inside)\s+(the\s+)?" + _UNIT_INTERVAL + r"|\bunit\s+interval\b|"
                        r"\bbetween\s+0(\.0*)?\s+and\s+1(\.0*)?\b", re.IGNORECASE)),
    ("positive", re.compile(r"\b(strictly\s+)?positive\b|\bnon-?negative\b|\bgreater\s+than\s+(zero|0)\b",
                            re.IGNORECASE)),
)
_DENIED = re.compile(r"(\bnon-?|\bnot\s+(necessarily\s+)?|\bneed\s+not\s+be\s+|\bun)$", re.IGNORECASE)


_LOWER_BOUND_ZERO = re.compile(r"(?<![\w.])0(\.0*)?\s*(<=?|≤|\\leq?)")  # "0 <= x <= 1" names no domain word


def documented_domains(subject: Subject, operands: Sequence[Sequence[str]] = ()) -> dict[int, str]:
    """{position: domain} of the parameters the target's docstring says hold symmetric positive-definite matrices
    ("spd"), only 0s and 1s ("binary"), values in [0, 1] ("unit") or positive values ("positive"): in the
    parameter's own entry, in a sentence of prose that quotes that parameter alone (``spikes`` must be exactly
    binary), or, for the unit interval, in a statement naming it bare ("defined for x in the interval [0, 1]").
    `operands`: the operand names of a primitive's bind calls (`_signature.bind_site_operands`), its names where its
    impl's positional parameters do not name them (`*ins`, a kernel object's `self`: the wrapper that binds it
    documents `spikes : The binary vector`)."""
    from .._run._signature import positional, signature_of
    from ._stated_shapes import docstrings

    params = positional(signature_of(subject))
    names = [p.name for p in params]
    bound = next((list(o) for o in operands if o and all(o)), [])  # a binding call naming every operand
    if subject.kind == "primitive" and bound and len(bound) != len(names):  # `*ins`, or a kernel's `__call__(self)`
        names = bound
    out: dict[int, str] = {}
    for doc in docstrings(subject, names):  # its own first, then a wrapper's that documents what it passes on
        if any(pattern.search(doc) for _, pattern in _DOCUMENTED) or _LOWER_BOUND_ZERO.search(doc):
            out = {**_domains_in(doc, names), **out}
    sole = {0: "spd"} if len(params) == 1 and _sole_operand_spd(subject) else {}
    return {**sole, **_annotated_domains(params), **out}


# What the name or the summary line of a one-operand function says of that operand: a function of SPD (PSD,
# positive-definite) matrices (`_spd_sqrtm`, "Principal SPD square root") takes such matrices. Only these words:
# "symmetric" in a name says as often what the function makes of any matrix (`symmetric_part`).
_SPD_STATED = re.compile(r"\b(s\.?p\.?d|p\.?s\.?d|positive[- ]?(semi[- ]?)?definite)\b", re.IGNORECASE)


def _sole_operand_spd(subject: Subject) -> bool:
    from .._core import _locate
    from ._stated_shapes import own_functions

    for fn in own_functions(subject):
        fn = _locate.unwrap(fn)
        doc = getattr(fn, "__doc__", None)
        summary = doc.strip().split("\n\n")[0] if isinstance(doc, str) else ""
        for text in (_TYPE_WORDS.sub(" ", str(getattr(fn, "__name__", ""))), summary):
            if any(not _DENIED.search(text[:m.start()].rstrip()) for m in _SPD_STATED.finditer(text)):
                return True
    return False


# the words of a type's name: `SymmetricTensor2` -> "Symmetric Tensor2", `PSDMatrix` -> "PSD Matrix",
# `positive_float` -> "positive float"
_TYPE_WORDS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_")


def _annotated_domains(params: list[Any]) -> dict[int, str]:
    """{position: domain} of the parameters whose annotation's type name states one (`sig: SymmetricTensor2`, a
    tensor type the package defines for symmetric values): the author's own contract, as a docstring's is."""
    out = {}
    for i, param in enumerate(params):
        words = _TYPE_WORDS.sub(" ", annotation_text(param.annotation))
        for domain, pattern in _DOCUMENTED:
            if any(not _DENIED.search(words[:m.start()].rstrip()) for m in pattern.finditer(words)):  # `NonSymmetric`
                out[i] = domain
                break
    return out


def _domains_in(doc: str, names: list[str]) -> dict[int, str]:
    from .._harness.source import docstring_sentences, parameter_descriptions

    texts = {name: [text] for name, text in parameter_descriptions(doc, names).items()}
    for sentence in docstring_sentences(doc):  # a sentence quoting one parameter (``x`` or `x`) is about it
        quoted = [n for n in names if re.search(rf"`{re.escape(n)}`", sentence)]
        if len(quoted) == 1:
            texts.setdefault(quoted[0], []).append(sentence)
    out = {}
    for i, name in enumerate(names):
        for domain, pattern in _DOCUMENTED:
            said = [m for text in texts.get(name, []) for m in pattern.finditer(text)
                    if not _DENIED.search(text[:m.start()])]
            if said:
                out[i] = domain
                break
        else:  # prose naming it bare in the statement itself: "defined for x in the interval [0, 1]", "0 <= x <= 1"
            if _bare_unit(name).search(doc):
                out[i] = "unit"
    return out


def _bare_unit(name: str) -> re.Pattern[str]:
    """`name` stated to lie in [0, 1] with the name itself in the statement (no quotes needed: the statement is the
    claim), as `x in [0, 1]`, `x ∈ (0, 1)`, `0 <= x <= 1`, `0 ≤ x < 1`."""
    bound = r"\s*(<=?|≤|\\leq?)\s*"
    return re.compile(rf"(?<![\w.]){re.escape(name)}\s+(in|∈|within|lies\s+in|must\s+(be|lie)\s+in)\s+(the\s+)?"
                      rf"{_UNIT_INTERVAL}|(?<![\w.])0(\.0*)?{bound}{re.escape(name)}{bound}1(\.0*)?(?![\w.])")


def _fn(subject: Subject) -> Any:
    obj = subject.original if subject.original is not None else subject.obj
    return _compat.impl(obj) if subject.kind == "primitive" else getattr(obj, "fun", None) or obj


# One array, as an annotation says it (`jax.Array`, `jnp.ndarray`, `ArrayLike`, jaxtyping's `Float[Array, "n"]`).
_ARRAY_NAME = re.compile(r"^(\w+\.)*(Array|ndarray|ArrayLike)$")
_JAXTYPING = {"Float", "Real", "Inexact", "Complex", "Shaped", "Num", "Float32", "Float64"}
_SEQUENCES = {"tuple": tuple, "Tuple": tuple, "list": list, "List": list, "Sequence": tuple}
Build = Callable[[Any], Any]  # the rung's array spec -> the container holding it at each place


def container_positions(subject: Subject) -> dict[int, Build]:
    """Positions annotated as a fixed tuple, a list or a NamedTuple of arrays, with how each is built from one array
    spec. String annotations (`from __future__ import annotations`) are parsed; a NamedTuple is looked up in the
    rule's module."""
    from .._run._signature import positional, signature_of

    if subject.kind == "primitive":
        return {}
    namespace = getattr(_fn(subject), "__globals__", {})
    out = {}
    for i, param in enumerate(positional(signature_of(subject))):
        annotation = param.annotation
        if annotation is param.empty:
            continue
        text = _annotation_text(annotation)
        build = _container_build(text, namespace) or _object_build(_annotated_class(annotation, text, namespace)) \
            or factory_build(annotation_classes(text, namespace), namespace)
        if build is not None:
            out[i] = build
    return out


def _annotation_text(annotation: Any) -> str:
    """An annotation as source text, a class by its own name (a NamedTuple is looked up by it) and a NamedTuple
    field's forward reference by its text."""
    forward = getattr(annotation, "__forward_arg__", None)
    if isinstance(forward, str):
        return forward
    if isinstance(annotation, type):
        return annotation.__qualname__
    return annotation_text(annotation)


def _container_build(text: str, namespace: dict[str, Any]) -> Build | None:
    node = parse_annotation(text)
    if node is None:
        return None
    if isinstance(node, ast.Subscript) and dotted_name(node.value).rpartition(".")[2] in _SEQUENCES:
        kind = _SEQUENCES[dotted_name(node.value).rpartition(".")[2]]
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if items and isinstance(items[-1], ast.Constant) and items[-1].value is Ellipsis:
            items = items[:-1] * 2  # `tuple[Array, ...]`: two of them
        if kind is list and len(items) == 1:
            items = items * 2
        items = [parse_annotation(ast.unparse(item)) or item for item in items]  # `tuple["Array", "Array"]`
        if not items or not all(_is_array(item) for item in items):
            return None
        count = len(items)
        return lambda spec: kind([spec] * count)
    cls = namespace.get(dotted_name(node)) if isinstance(node, ast.Name) else None
    fields = getattr(cls, "__annotations__", None) if isinstance(cls, type) and hasattr(cls, "_fields") else None
    if not fields or set(fields) != set(cls._fields):  # type: ignore[union-attr]
        return None
    texts = [_annotation_text(f) for f in fields.values()]
    if not all(_is_array_text(t) for t in texts):
        return None
    return lambda spec: cls(*[spec] * len(texts))  # type: ignore[misc]


def _annotated_class(annotation: Any, text: str, namespace: dict[str, Any]) -> type | None:
    """The class an annotation names, other than an array's: the annotation itself, the name it is written as
    (looked up in the rule's module), or the array type of jaxtyping's `Float[CSC, "n n"]` (an alias of one too)."""
    found: Any = annotation if isinstance(annotation, type) else None
    node = parse_annotation(text)
    if found is None and node is not None:
        if isinstance(node, ast.Subscript) and dotted_name(node.value).rpartition(".")[2] in _JAXTYPING:
            first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            found = resolved(first, namespace)
        else:
            found = resolved(node, namespace)
    inner = getattr(found, "array_type", None)  # jaxtyping's annotation class wraps the array type it constrains
    found = inner if isinstance(inner, type) else found
    if not isinstance(found, type) or found.__module__ in ("builtins", "typing") or _ARRAY_NAME.match(found.__name__):
        return None
    return found


def _object_build(cls: type | None) -> Build | None:
    """How an operand annotated as `cls` is built from the rung's array spec: an instance made from an example array
    (`cls.fromdense`, as JAX's sparse formats take a dense matrix; else a dataclass's constructor with the array for
    each of its fields, every one annotated as an array), as a template whose float leaves are drawn at their shapes
    and whose other leaves are kept. The spec itself where no instance is made at it (a 1-D rung for a CSR matrix)."""
    if cls is None:
        return None
    fromdense = getattr(cls, "fromdense", None)  # JAX's sparse formats' constructor from a dense matrix
    if callable(fromdense):
        return lambda spec: _instance_template(fromdense, 1, spec, sparse=True)
    if dataclasses.is_dataclass(cls):
        types = [f.type for f in dataclasses.fields(cls) if f.init]
    else:  # a pytree class of its own (`register_pytree_node_class`): its constructor's required parameters
        try:
            params = list(inspect.signature(cls).parameters.values())
        except (TypeError, ValueError):
            return None
        types = [p.annotation for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                                     p.POSITIONAL_OR_KEYWORD)]
    if not types or not all(_is_array_text(_annotation_text(t)) for t in types):
        return None
    return lambda spec: _instance_template(cls, len(types), spec, sparse=False)


def _instance_template(make: Callable[..., Any], count: int, spec: Any, sparse: bool) -> Any:
    """The instance `make` builds from `count` example arrays of the spec's shape, as a template. A sparse matrix
    takes every entry (its pattern: the whole matrix), or the diagonal alone on the spd domain: the one pattern whose
    independently drawn (positive) values keep it symmetric positive definite."""
    import jax
    import numpy as np

    from .._harness import call_user
    from .._loading._inputs import ArgSpec, Static, is_square

    diagonal = sparse and spec.domain == "spd" and is_square(spec.shape)
    example = np.broadcast_to(np.eye(spec.shape[-1]), spec.shape) if diagonal else np.ones(spec.shape)
    domain = "positive" if diagonal else spec.domain
    made = call_user(make, *[jax.numpy.asarray(example.astype(spec.dtype))] * count, quiet=True)
    if made.error is not None:
        return spec
    leaves, treedef = jax.tree_util.tree_flatten(made.value)
    if jax.tree_util.treedef_is_leaf(treedef) or not leaves:  # not a pytree: it could only be passed whole, never drawn
        return spec

    def template(leaf: Any) -> Any:
        value = np.asarray(leaf)
        return ArgSpec(value.dtype, value.shape, domain) if np.issubdtype(value.dtype, np.inexact) else Static(value)

    rebuilt = call_user(jax.tree_util.tree_unflatten, treedef, [template(leaf) for leaf in leaves], quiet=True)
    return spec if rebuilt.error is not None else rebuilt.value


def is_array_annotation(text: str) -> bool:
    """Whether an annotation's text names an array: `Array`, `np.ndarray`, jaxtyping's `Float[Array, "n"]`, or a
    union of an array with scalars or None (`ArrayLike` as formatted: `Union[jax.Array, numpy.ndarray, ..., float]`);
    never a container of arrays (`Sequence[Array]`)."""
    node = parse_annotation(text)
    return node is not None and _is_array(node)


_is_array_text = is_array_annotation
# what a union may hold beside an array and still be one operand (`ArrayLike`'s NumPy scalars and Python numbers)
_SCALAR_NAME = re.compile(r"^(\w+\.)*(bool|int|float|complex|number|bool_|generic|None)$")


def _is_array(node: ast.expr) -> bool:
    members = union_members(node)
    if members is not None:
        return any(_is_array(m) for m in members) and all(
            _is_array(m) or (isinstance(m, ast.Constant) and m.value is None) or _SCALAR_NAME.match(dotted_name(m))
            for m in members)
    if isinstance(node, ast.Subscript):  # jaxtyping: `Float[Array, "n"]`
        return dotted_name(node.value).rpartition(".")[2] in _JAXTYPING
    return bool(_ARRAY_NAME.match(dotted_name(node)))


# The words of a bound pair's two ends, as parameter names spell them (`low`/`high`, `x_min`/`x_max`, `lb`/`ub`,
# `lower_bound`/`upper_bound`, `minval`/`maxval`): the same name with one word for the other.
_BOUND_WORDS = (("lower", "upper"), ("low", "high"), ("lo", "hi"), ("min", "max"), ("lb", "ub"))


def bound_pairs(names: list[str]) -> dict[int, str]:
    """{position: "lower" or "upper"} of the parameters that are the two ends of a bound pair: a name and the same
    name with the lower word replaced by the upper one (`low, high`; `x_min, x_max`). Drawn independently, the lower
    passes the upper at some entries (an empty interval, `clip(x, lo, hi)` with `lo > hi`), which no caller means."""
    out: dict[int, str] = {}
    where = {name: i for i, name in enumerate(names)}
    for i, name in enumerate(names):
        for lower, upper in _BOUND_WORDS:
            for match in re.finditer(lower, name, re.IGNORECASE):
                word = upper.upper() if match.group().isupper() else upper
                partner = where.get(name[:match.start()] + word + name[match.end():])
                if partner is not None and partner != i and i not in out and partner not in out:
                    out[i], out[partner] = "lower", "upper"
    return out
