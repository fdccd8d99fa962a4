"""What the code asserts about an operand before it reaches the target: `assert pred.dtype == jnp.bool_`,
`assert pred.shape == ()`, `if not jnp.issubdtype(idx.dtype, jnp.integer): raise TypeError(...)`.

An author who checks an operand's dtype or rank states its contract, and inference should draw inside it: a float
predicate drawn where the code asserts a boolean scalar only makes the assertion fail, in a rule that calls the
asserting helper (an `AssertionError` reported as the rule's failure). The statements are read from the target's
own code (a function's body; a primitive's impl and abstract eval) and, for a primitive, from every function of its
package that binds it (`prim.bind(pred, x, y)`): the wrapper that asserts on `pred` before binding it states what
operand 0 is. Read facts: a boolean, an integer, a scalar (shape `()` or `ndim == 0`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .._checks._base import Subject
from .._harness.source import called_name, function_source
from ._signature import bind_sources
from ._stated_shapes import own_functions

# What a dtype expression names: `jnp.bool_`, `np.bool_`, `bool`, `"bool"`; `jnp.integer`, `np.int32`, `int`, ...
_BOOL_NAMES = {"bool", "bool_"}
_INT_NAMES = {"int", "integer", "signedinteger", "unsignedinteger", "int8", "int16", "int32", "int64", "uint8",
              "uint16", "uint32", "uint64"}


def asserted_positions(subject: Subject) -> dict[str, set[int]]:
    """{"bool" / "int" / "scalar": the positional operands the code asserts it of}."""
    out: dict[str, set[int]] = {"bool": set(), "int": set(), "scalar": set()}
    for names, body in _sources(subject):
        facts = _facts(body)
        for position, name in enumerate(names):
            for fact in facts.get(name, ()) if name else ():
                out[fact].add(position)
    return out


def _sources(subject: Subject) -> Iterator[tuple[list[str], ast.AST]]:
    """(the name each operand position has there, a function body that may assert on it)."""
    for fn in own_functions(subject):
        found = function_source(fn)
        if found is not None and isinstance(found.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield [a.arg for a in found.node.args.posonlyargs + found.node.args.args], found.node
    if subject.kind != "primitive" or subject.parent is not None:
        return
    from .._loading._passthrough import bind_calls  # read only for a primitive

    for _, caller, call in bind_calls(*bind_sources(subject)):
        if caller is None or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        yield [a.id if isinstance(a, ast.Name) else "" for a in call.args], caller


def _facts(body: ast.AST) -> dict[str, set[str]]:
    """{name: facts} from the `assert` statements of a function, and from its `if <not it>: raise ...` guards."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Assert):
            tests = [node.test]
        elif isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise):
            tests = list(_negated(node.test))
        else:
            continue
        for test in tests:
            for name, fact in _claims(test):
                out.setdefault(name, set()).add(fact)
    return out


def _negated(test: ast.expr) -> Iterator[ast.expr]:
    """What `if test: raise` asserts: `not x` -> x, `a != b` -> a == b, `a or b` -> not a and not b."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield test.operand
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq):
        yield ast.Compare(left=test.left, ops=[ast.Eq()], comparators=test.comparators)
    elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        for value in test.values:
            yield from _negated(value)


def _claims(test: ast.expr) -> Iterator[tuple[str, str]]:
    """(name, fact) pairs a true `test` establishes."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            yield from _claims(value)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
        for attribute, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            claim = _attribute_claim(attribute, other)
            if claim is not None:
                yield claim
    elif isinstance(test, ast.Call) and called_name(test.func) == "issubdtype" and len(test.args) == 2:
        subject, family = test.args
        name = _attribute_of(subject, "dtype")
        kind = _dtype_kind(family)
        if name is not None and kind is not None:
            yield name, kind


def _attribute_claim(attribute: ast.expr, other: ast.expr) -> tuple[str, str] | None:
    """`x.shape == ()`, `x.ndim == 0` -> scalar; `x.dtype == jnp.bool_` -> bool; `x.dtype == jnp.int32` -> int."""
    if (name := _attribute_of(attribute, "shape")) is not None:
        return (name, "scalar") if isinstance(other, ast.Tuple) and not other.elts else None
    if (name := _attribute_of(attribute, "ndim")) is not None:
        return (name, "scalar") if isinstance(other, ast.Constant) and other.value == 0 else None
    if (name := _attribute_of(attribute, "dtype")) is not None:
        kind = _dtype_kind(other)
        return (name, kind) if kind is not None else None
    return None


def _attribute_of(node: ast.expr, attr: str) -> str | None:
    """`x` for the expression `x.attr` (also `jnp.shape(x)`/`np.ndim(x)` for shape and ndim)."""
    if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name):
        return node.value.id
    if isinstance(node, ast.Call) and called_name(node.func) == attr and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Name):
        return node.args[0].id
    return None


def _dtype_kind(node: ast.expr) -> str | None:
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else called_name(node)
    if text in _BOOL_NAMES:
        return "bool"
    if text in _INT_NAMES:
        return "int"
    return None
