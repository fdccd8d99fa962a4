"""The shapes a target's author states for its arguments: the axes its code unpacks, the shapes its docstring gives.

Inference climbs a ladder of plain shapes (`_climb`), rank 0 to 3, one shape for every operand. An attention
kernel takes rank-4 or rank-5 arrays whose axes are shared between operands (queries, keys and values with the
batch and head axes in common, a mask over the batch and sequence axes): no rung is one of those, though the author
wrote them down, in one of three places:
- the annotations, in jaxtyping's notation: `q: Float[Array, "batch seq heads dim"]` (`_annotated_arrays`);
- the code: `batch, seq, heads, dim = q.shape` (a parameter's shape unpacked into one name per axis, starred
  among other items or not) and einops patterns (`rearrange(mask, 'b j -> j b')`), in the function's own body (a
  primitive's impl or abstract eval) or a function it passes its parameters to (`_code_axes`);
- a docstring entry: `q: Query tensor of shape [B, N, H, S, D].`, `w : array, shape (D,)`, "of shape
  ``(batch_size, seq_len)``": the target's own, or that of another function of its module documenting a parameter
  of the same name (a public wrapper documents the arguments it passes on to its kernel).

Axes of one name are one size, across operands; an integer axis is that size. `stated_rungs` turns each statement
(all sources together, then each alone: a docstring and the code may name one axis differently) into candidates
the ladder tries first; an operand no statement covers is tried at the shape of the first stated one, then at each
of its leading parts (a mask over the leading axes), then at each of its trailing parts (a weight over the last
axis), then as a scalar, and then, of several such operands, each alone at those parts with the others at the first
shape (keys and values like the queries beside a mask); last, all of it with every named axis at one size
(relations between axes the statement does not give: query heads a multiple of key-value heads). For a primitive, a
stated rung counts only where its abstract eval agrees with its impl.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import _compat
from .._checks._base import Subject
from .._core import _locate
from .._loading._inputs import ArgSpec
from ._annotated_arrays import annotated_arrays
from ._code_axes import code_axes

Axes = tuple[str, ...]
# "shape (B, N)", "of shape [B, N, H]", "shape ``(batch, seq)``", "shape: (n,)": the bracketed axes after "shape"
_DOC_SHAPE = re.compile(r"\bshape\s*(?:of\s*)?:?\s*`{0,2}\s*[(\[]([^()\[\]]*)[)\]]"
                        # "a linear operator of size (n, n)": a size is a shape where its brackets hold a comma
                        # ("step size (float)" states none)
                        r"|\bof\s+size\s*`{0,2}\s*[(\[]([^()\[\]]*,[^()\[\]]*)[)\]]", re.IGNORECASE)
# an entry that opens with its shape: "Q: ``(n, n)`` PSD cost matrix", "w: (n,) weights" (unquoted: a comma inside,
# and no type word, which "(float, optional)" is)
_TYPE_WORD = r"\b(?:float|int|bool|str|optional|default|array|ndarray|complex|tuple|list|or)\b"
_LEADING_SHAPE = re.compile(r"\s*(?:`{1,2}\s*[(\[]([^()\[\]]*)[)\]]\s*`{1,2}"
                            rf"|[(\[]((?![^()\[\]]*{_TYPE_WORD})[^()\[\],]*,[^()\[\]]*)[)\]])")
_AXIS = re.compile(r"^[A-Za-z_]\w*$|^\d+$")
# sizes given to named axes, in order of first appearance: distinct, so a transposed axis shows
_SIZES = (2, 3, 4, 5, 6, 7, 8, 9)
UNIFORM_SIZE = 4
MAX_STATEMENTS = 3  # statements tried, each with up to 2 x rank + 3 rungs
# unstated operands given a part each alone, at most: beyond, the rungs grow as their product with the parts and
# inference of a kernel that runs on no rung (one for another platform) spent seconds on them
MAX_ALONE = 3


def stated_axes(subject: Subject, names: list[str]) -> list[dict[int, Axes]]:
    """Statements of {position: axis names} for the parameters (`names`, positional order): all sources together
    (the annotations first, then the code's unpacking, then the docstrings, each position from the first that states
    it), then each source alone, most positions first. A source names axes its own way (one
    docstring writes `B`, the code `batch_len`): where together they give inconsistent sizes, one alone may not."""
    annotated: dict[int, Axes] = {}
    unpacked: dict[int, Axes] = {}
    for fn in own_functions(subject):
        for i, array in annotated_arrays(fn).items():
            if array.axes is not None:
                annotated.setdefault(i, array.axes)
        for i, axes in code_axes(fn).items():
            unpacked.setdefault(i, axes)
    commented = {names.index(name): axes for fn in own_functions(subject)
                 for name, axes in comment_axes(fn).items() if name in names}
    sources = [annotated, commented, unpacked] + [
        {names.index(name): axes for name, axes in _doc_axes(doc, names).items()} for doc in docstrings(subject, names)]
    merged: dict[int, Axes] = {}
    for source in sources:
        for i, axes in source.items():
            merged.setdefault(i, axes)
    alone = sorted((source for source in sources if source), key=len, reverse=True)
    out: list[dict[int, Axes]] = []
    for statement in [merged, *alone]:
        if statement and statement not in out:
            out.append(statement)
    return out[:MAX_STATEMENTS]


def stated_rungs(arrays: list[int], statements: list[dict[int, Axes]], dtype: np.dtype, names: Sequence[str] = (),
                 ints: dict[int, str] | None = None) -> Iterator[list[ArgSpec]]:
    """Candidates for the array positions `arrays` (parameter positions, in order), per statement: the stated ones
    at their shapes, the others at the first stated shape, then at each of its leading parts (a mask over the batch
    axes), then at each of its trailing parts (a weight over the feature axis), then as scalars. An axis named as
    one of the int positions (`fw: shape (nf2, nf1)` beside `nf1: int, nf2: int`) has that int's first value: the
    sizes are one statement, not two guesses."""
    from ._int_params import int_rungs

    named = {names[i]: s.value for i, s in int_rungs(ints or {})[0].items() if i < len(names) and type(s.value) is int}
    seen: list[list[ArgSpec]] = []
    for stated in statements:
        for rung in _rungs(arrays, stated, dtype, named):
            if rung not in seen:
                seen.append(rung)
                yield rung


def _rungs(arrays: list[int], stated: dict[int, Axes], dtype: np.dtype, named: dict[str, int]
           ) -> Iterator[list[ArgSpec]]:
    known = [i for i in arrays if i in stated]
    if not known:
        return
    sizes: dict[str, int] = {}
    for i in known:
        for axis in stated[i]:
            if not axis.isdigit() and axis not in sizes:
                sizes[axis] = _SIZES[min(len(sizes), len(_SIZES) - 1)]
    sizes.update({axis: named[axis] for axis in sizes if axis in named})  # an int position's own value, always
    free = [axis for axis in sizes if axis not in named]
    # the sizes in order of first appearance, then in the other order: relations between axes the statement leaves
    # unsaid go either way (a QP's `m` equality constraints on `n` variables, named in that order, need m < n; a tall
    # matrix's rows the opposite)
    swapped = {**sizes, **dict(zip(free, reversed([sizes[axis] for axis in free])))}
    # then every named axis one size: relations the statement leaves unsaid (query heads a multiple of key-value
    # heads, a head dim shared under two names) hold there, where distinct sizes broke them
    uniform = {axis: named.get(axis, UNIFORM_SIZE) for axis in sizes}
    for order in [sizes] + ([swapped] if len(free) > 1 else []) + [uniform]:
        yield from _assigned(arrays, {i: tuple(int(a) if a.isdigit() else order[a] for a in stated[i]) for i in known},
                             dtype)


def _assigned(arrays: list[int], shapes: dict[int, tuple[int, ...]], dtype: np.dtype) -> Iterator[list[ArgSpec]]:
    """The stated operands at `shapes`, the others (if any) all at each of `_others`; then, of several others (up to
    MAX_ALONE), each alone at a part of the first shape and the rest at that shape (keys and values shaped like the
    queries beside a mask over their leading axes)."""
    first = shapes[next(i for i in arrays if i in shapes)]
    uncovered = [i for i in arrays if i not in shapes]
    others = _others(first, bool(uncovered))
    for other in others:
        yield [ArgSpec(dtype, shapes.get(i, other)) for i in arrays]
    for other in others[1:] if 1 < len(uncovered) <= MAX_ALONE else ():
        for alone in reversed(uncovered):
            yield [ArgSpec(dtype, shapes.get(i, other if i == alone else first)) for i in arrays]


def _others(first: tuple[int, ...], uncovered: bool) -> list[tuple[int, ...]]:
    """Shapes for the operands no statement covers: the first stated shape, each of its leading parts (a mask over
    the batch axes), each of its trailing parts (a weight over the feature axis), a scalar."""
    if not uncovered:
        return [first]
    parts = range(len(first) - 1, 0, -1)
    return list(dict.fromkeys([first, *(first[:n] for n in parts), *(first[-n:] for n in parts), ()]))


def annotated_families(subject: Subject) -> dict[int, str]:
    """{position: the family of values its jaxtyping annotation admits} ("float", "int", "bool", "key", ...)."""
    out: dict[int, str] = {}
    for fn in own_functions(subject):
        for i, array in annotated_arrays(fn).items():
            out.setdefault(i, array.family)
    return out


def own_functions(subject: Subject) -> list[Any]:
    obj = subject.original if subject.original is not None else subject.obj
    if subject.kind == "primitive":
        fns = [_compat.impl(obj), _compat.abstract_eval_rule(obj)]
    else:
        fns = [getattr(obj, "fun", None) or obj]
    return [fn for fn in fns if fn is not None and _locate.is_user_code(fn)]


def _doc_axes(doc: str, names: list[str]) -> dict[str, Axes]:
    """{parameter: axis names} from the shape in its entry of the docstring `doc`."""
    from .._harness.source import parameter_descriptions

    out: dict[str, Axes] = {}
    for name, text in parameter_descriptions(doc, names).items():
        match = _DOC_SHAPE.search(text) or _LEADING_SHAPE.match(text)
        axes = _axes(match.group(1) or match.group(2)) if match else None
        if axes is not None:
            out[name] = axes
    return out


def comment_axes(fn: Any) -> dict[str, Axes]:
    """{parameter: axis names} from the comment after each parameter of `fn`'s signature, one per line (nbdev's
    documented arguments: `x: jnp.ndarray,  # (B, time)`, `zi: jnp.ndarray = None,  # (B, n_coeffs) initial state`)."""
    try:
        lines, _ = inspect.getsourcelines(_locate.unwrap(fn))
    except (OSError, TypeError):
        return {}
    out: dict[str, Axes] = {}
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))), None)
    for line in lines[start + 1:] if start is not None else []:
        code, _, comment = line.partition("#")
        param = _PARAM_LINE.match(code)
        match = _LEADING_SHAPE.match(comment) or _DOC_SHAPE.search(comment) if param and comment else None
        axes = _axes(match.group(1) or match.group(2)) if match else None
        if param and axes is not None:
            out[param.group(1)] = axes
        if re.search(r"\)\s*(->[^:]*)?:\s*$", code):  # the signature ends
            break
    return out


# a parameter on its own line of a signature: `x: jnp.ndarray,`, `zi=None,`, `a,`
_PARAM_LINE = re.compile(r"^\s*\*{0,2}([A-Za-z_]\w*)\s*(?::[^=]*)?(?:=.*)?,?\s*$")


def _axes(text: str) -> Axes | None:
    parts = [p.strip().strip("`") for p in text.split(",")]
    if parts and parts[-1] == "":  # "(D,)"
        parts = parts[:-1]
    if len(parts) > 1 and (parts[0] in ("...", "\u2026") or parts[0].startswith("*")):
        parts = parts[1:]  # "(..., 3)", "(*batch, n, 3)": any leading batch axes, none the least
    return tuple(parts) if parts and all(_AXIS.match(p) for p in parts) else None


def docstrings(subject: Subject, names: list[str]) -> Iterator[str]:
    """The target's own docstrings, then those of its module's other functions (and of the module its function is
    written in) taking at least two of its parameters' names, in the order the modules define them, then those of
    the public functions of its enclosing packages that call it by name and take two of those names (a package's
    documented entry point forwarding `Q, q, A, b` to an undocumented kernel in a submodule), nearest package
    first."""
    own = own_functions(subject)
    for fn in own:
        doc = getattr(_locate.unwrap(fn), "__doc__", None)
        if isinstance(doc, str):
            yield doc
    for fn in own:  # the documented function an undocumented impl hands its operands to
        yield from (d.__doc__ for d in _delegates(fn, names) if d not in own and isinstance(d.__doc__, str))
    modules = dict.fromkeys([subject.module, *(getattr(_locate.unwrap(fn), "__module__", "") for fn in own)])
    for name in modules:  # the target's module, and the module its function is written in
        module = sys.modules.get(name or "")
        functions = [v for v in vars(module).values() if inspect.isfunction(v)] if module is not None else []
        for fn in sorted(functions, key=_definition_order):
            if fn not in own and isinstance(fn.__doc__, str) and _locate.is_user_code(fn) and _takes_two(fn, names):
                yield fn.__doc__
    called = _names_of(subject, own)
    for fn in _package_functions(subject.module):
        code = getattr(fn, "__code__", None)
        if (fn not in own and code is not None and called & set(code.co_names) and isinstance(fn.__doc__, str)
                and _locate.is_user_code(fn) and _takes_two(fn, names)):
            yield fn.__doc__


def _delegates(fn: Any, names: list[str]) -> list[Any]:
    """The user's functions `fn` calls with two or more of the parameters `names` as arguments, by name
    (`return _f2.nufft2d2(x, y, f, eps, isign)` in a primitive's impl), in call order."""
    from .._harness.source import function_source, resolved

    tree = function_source(fn)
    namespace = getattr(_locate.unwrap(fn), "__globals__", {})
    out: list[Any] = []
    for node in ast.walk(tree.node) if tree is not None else ():
        if not isinstance(node, ast.Call):
            continue
        passed = {a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
        callee = resolved(node.func, namespace) if len(passed & set(names)) >= 2 else None
        if inspect.isfunction(callee) and callee is not fn and callee not in out and _locate.is_user_code(callee):
            out.append(callee)
    return out


def _names_of(subject: Subject, own: list[Any]) -> set[str]:
    """The names a caller may call the target by: the last part of its label, its function's name."""
    label = subject.label.partition(" ")[0]
    return {label.rpartition(":")[2].rpartition(".")[2],
            *(getattr(_locate.unwrap(fn), "__name__", "") for fn in own)} - {"", "<lambda>"}


def _package_functions(module_name: str) -> list[Any]:
    """The functions in the namespaces of the packages enclosing `module_name` (its public API: what the package's
    `__init__` imports or defines), nearest package first, each package's in definition order. The namespaces, not
    every loaded module: which other modules happen to be imported depends on what ran before."""
    parts = module_name.split(".")
    out: list[Any] = []
    for depth in range(len(parts) - 1, 0, -1):
        package = sys.modules.get(".".join(parts[:depth]))
        functions = [v for v in vars(package).values() if inspect.isfunction(v)] if package is not None else []
        out += [fn for fn in sorted(functions, key=_definition_order) if fn not in out]
    return out


def _takes_two(fn: Any, names: list[str]) -> bool:
    try:
        return len(set(inspect.signature(fn).parameters) & set(names)) >= 2
    except (TypeError, ValueError):
        return False


def _definition_order(value: Any) -> tuple[str, int]:
    """Functions in the order their module defines them, so the first documentation found does not depend on the
    order of the module's namespace."""
    code = getattr(value, "__code__", None)
    return (getattr(code, "co_filename", ""), getattr(code, "co_firstlineno", 0))
