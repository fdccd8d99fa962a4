"""The values inference gives a target's static positions (nondiff_argnums, static_argnums): a default, an option
its module forwards, the literal its module's own calls pass, a float or the declared values for an annotated
one, or, where nothing gives one, what the code's use of it says (`_static_use`: a number, an int). An int static
climbs the int ladder (`int_positions`); one with none of these cannot be guessed and is asked of the user.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any

from .._core import _locate
from .._checks._base import Subject
from .._loading._inputs import Static
from ._int_params import COLLECTIVE_AXIS
from ._signature import positional, signature_of, static_positions
from ._static_use import collective_axes, documented_value, numeric_statics


def static_templates(subject: Subject) -> dict[int, Any] | None:
    """For inference: the static positions with their default values, the positions the target's own module
    always fills from an option-valued default (`_passthrough`), and those its own module's calls fill with a
    literal (`f(x, 3)`, `functools.partial(f, max_gradient=1e3)`: the value its callers use); None when a static
    position has none of these."""
    from ._declared import admits_none

    statics, params, forwarded, literals, floats, ints, flags = _static_facts(subject)
    axes = collective_axes(subject, [p.name for p in params]) if statics else set()
    out: dict[int, Any] = {}
    for i in statics:
        if i >= len(params) or i in ints:
            continue  # an int or a shape static without a value climbs the int ladder (`int_positions`)
        known = params[i].default if params[i].default is not params[i].empty else literals.get(i, forwarded.get(i))
        if params[i].name in axes and not isinstance(known, str):  # its collectives need an axis, never None
            out[i] = Static(params[i].name)
        # a caller's None where the annotation admits no None (`scale: float`): the caller resolves it first
        elif params[i].default is not params[i].empty:
            out[i] = Static(params[i].default)
        elif i in forwarded and (forwarded[i] is not None or admits_none(params[i])):
            out[i] = Static(forwarded[i])
        elif i in literals and (literals[i] is not None or admits_none(params[i])):
            out[i] = Static(literals[i])
        elif COLLECTIVE_AXIS.match(params[i].name):  # a mapped axis's name: its own name names the axis the
            out[i] = Static(params[i].name)  # checks run the rule on (`_named_axis`), never a drawn value
        elif annotated_float(params[i]) or i in floats:  # `scale: float`: any float is in its contract
            out[i] = Static(documented_value(subject, params[i].name, FLOAT_STATIC))  # "for real s > 1"
        elif declared := _declared_values(params[i]):  # `normalize: bool`, a `Literal[...]`: each is in its contract
            out[i] = Static(declared[0])
        elif i in flags:  # `if use_erf:`: True, then False (`_static_choices`)
            out[i] = Static(True)
        else:
            return None
    for i, value in forwarded.items():
        out.setdefault(i, Static(value))
    return out


# The value a static annotated `float` with no default takes: not 1.0 or 0.0, so that a rule that drops or
# mis-applies the factor (a backward pass forgetting `scale`) shows.
FLOAT_STATIC = 0.5


def _module_literals(subject: Subject, params: list[inspect.Parameter], floats: set[int] | None = None
                     ) -> dict[int, Any]:
    """{position: value} of the literals the target's own module passes at each of its positions; `floats` gets
    the positions some call of its module passes as `float(...)`."""
    if subject.kind == "primitive":
        return {}
    seen: set[Any] = set()
    literals = _by_position(_literal_call_arguments(subject, seen), params)
    if floats is not None:
        floats.update(i for i, param in enumerate(params) if i in seen or param.name in seen)
    return literals


def _by_position(seen: dict[Any, Any], params: list[inspect.Parameter]) -> dict[int, Any]:
    """{position: value} from literals seen by position or by keyword name."""
    out = {}
    for i, param in enumerate(params):
        for key in (i, param.name):
            if key in seen:
                out[i] = seen[key]
                break
    return out


def forwarded_options(subject: Subject) -> dict[int, Any]:
    """Positions without a default of their own that the target's module fills from a caller's option default. A
    callable object taking `*args` (equinox's `filter_custom_vjp`) is read through the function it holds."""
    if subject.kind == "primitive" or subject.parent is not None:
        return {}
    sig = signature_of(subject)
    if sig is None:
        return {}
    obj = subject.original if subject.original is not None else subject.obj
    held = _locate.held_function(obj)
    params = positional(sig)
    if held is not None and any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        try:
            params = positional(inspect.signature(held))
        except (TypeError, ValueError):
            return {}
    fn = held if held is not None else getattr(obj, "fun", obj)
    from .._loading._passthrough import passthrough_defaults

    found = passthrough_defaults(fn, subject.label.rpartition(":")[2], [p.name for p in params])
    return {i: v for i, v in found.items() if params[i].default is params[i].empty}


def float_annotated(subject: Subject) -> set[int]:
    """Positions the signature annotates as a Python `float` (`gamma: float`, also as the string a module with
    postponed annotations gives): the callers pass a scalar there, never an array to draw at the ladder's shapes."""
    if subject.kind == "primitive":
        return set()
    return {i for i, p in enumerate(positional(signature_of(subject))) if annotated_float(p)}


def annotated_float(param: inspect.Parameter) -> bool:
    """`x: float`, also as the string a module with postponed annotations gives."""
    return param.annotation in (float, "float")


def int_positions(subject: Subject, statics: dict[int, Any], arity: int) -> list[dict[int, str]]:
    """The int positions of a function's first `arity` parameters ({position: "int" or "shape"}), as tried in
    turn: all of them, then (when some were guessed from a name only) only the annotated ones, the rest drawn as
    arrays. [{}] for none. For a custom_jvp/custom_vjp only its nondiff_argnums count (`expn(n, x)` with `n`
    static: a Python int; its other arguments are differentiated, so arrays)."""
    if subject.kind not in ("function", "custom_jvp", "custom_vjp"):
        return [{}]
    from ._int_params import int_kind

    fixed = static_positions(subject)  # a static is never drawn as an array: its kind is sure, even from a name
    found = {i: int_kind(p, i in fixed) for i, p in enumerate(positional(signature_of(subject))[:arity])
             if i not in statics and (subject.kind == "function" or i in fixed)}
    kinds = {i: k for i, k in found.items() if k is not None}
    if any(i in fixed and k is None for i, k in found.items()):  # `range(p)` in its code: an int
        kinds.update({i: ("int", False) for i in _static_facts(subject)[5] if i in found and found[i] is None})
    sure = {i: kind for i, (kind, guessed) in kinds.items() if not guessed or i in fixed}
    return [{i: kind for i, (kind, _) in kinds.items()}] + ([sure] if len(sure) < len(kinds) else [])


def static_without_default(subject: Subject) -> list[tuple[str, str]]:
    statics, params, forwarded, literals, floats, ints, flags = _static_facts(subject)
    return [(params[i].name, where + (", a mapped axis's name" if COLLECTIVE_AXIS.match(params[i].name) else ""))
            for i, where in sorted(statics.items())
            if i < len(params) and params[i].default is params[i].empty and i not in forwarded
            and i not in literals and i not in ints and (COLLECTIVE_AXIS.match(params[i].name) or (
                not annotated_float(params[i]) and i not in floats and i not in flags
                and not _declared_values(params[i])))]


def _declared_values(param: inspect.Parameter) -> list[Any]:
    from ._declared import declared_values  # only inference asks (the import budget of `check_grad`)

    return declared_values(param)


def _static_facts(subject: Subject) -> tuple[dict[int, str], list[inspect.Parameter], dict[int, Any],
                                              dict[int, Any], set[int], set[int], set[int]]:
    """(static positions, the parameters users pass, forwarded options, the module's literals, the positions that
    take a float, those that take an int, those that take a flag). A float: some call passes `float(order)`,
    whatever its name says, or the code uses it as a number (`_static_use`); an int: its parameter says so, or the
    code uses it as one; a flag: the code only uses it as a truth value."""
    statics = static_positions(subject)
    params = positional(signature_of(subject))
    forwarded = forwarded_options(subject)
    floats: set[int] = set()
    literals = _module_literals(subject, params, floats)
    ints = static_ints(subject, statics, params, forwarded, literals) - floats
    unknown = [i for i in statics if i < len(params) and params[i].default is params[i].empty
               and i not in forwarded and i not in literals and i not in ints and i not in floats]
    flags: set[int] = set()
    for i, kind in numeric_statics(subject, unknown, params).items():
        (ints if kind == "int" else flags if kind == "bool" else floats).add(i)
    return statics, params, forwarded, literals, floats, ints, flags


def static_ints(subject: Subject, statics: dict[int, str], params: list[inspect.Parameter],
                forwarded: dict[int, Any], literals: dict[int, Any]) -> set[int]:
    """Static positions with no default, forwarded option or module literal whose parameter takes an int or a tuple
    of ints (`L: int`, `output_shape`, `_int_params.int_kind`): given the int ladder's values (`int_positions`), as
    a static cannot be drawn as an array."""
    from ._int_params import int_kind  # only inference asks: `check_grad` with given inputs never imports it

    return {i for i in statics if i < len(params) and params[i].default is params[i].empty and i not in forwarded
            and i not in literals and int_kind(params[i], static=True) is not None}


def static_suggestions(subject: Subject) -> dict[int, str]:
    """For a suggested configuration: each static position without a default, with a Python literal to put there
    (the literal the module's own calls pass at that position, else `0.1`): a static argument is never a SPEC."""
    params = positional(signature_of(subject))
    literals = _by_position(_literal_call_arguments(subject), params)
    return {i: repr(literals[i]) if i in literals else "0.1"
            for i in static_positions(subject) if i < len(params) and params[i].default is params[i].empty}


_PARTIAL_NAMES = {"partial"}  # `functools.partial(f, ...)`, `partial(f, ...)`


def _literal_call_arguments(subject: Subject, floats: set[Any] | None = None) -> dict[Any, Any]:
    """{position or keyword name: a literal value} from the target's own module: its calls (`f(x, 3)`) and its
    partial applications (`functools.partial(f, max_gradient=1e3)`, whose positions follow the function).
    `floats` gets the positions and names some call passes as `float(...)`: a float is in their contract."""
    from .._harness.source import called_name
    from .._harness.source import module_tree

    attr = subject.label.rpartition(":")[2].split(".")[-1]
    tree = module_tree(sys.modules.get(subject.module or "")) if attr else None
    if tree is None:
        return {}
    out: dict[Any, Any] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        args = node.args
        if called_name(node.func) in _PARTIAL_NAMES and args and called_name(args[0]) == attr:
            args = args[1:]
        elif called_name(node.func) != attr:
            continue
        for i, arg in enumerate(args):
            if isinstance(arg, ast.Starred):
                break  # positions after a *args are unknown
            if isinstance(arg, ast.Constant):
                out.setdefault(i, arg.value)
            elif floats is not None and isinstance(arg, ast.Call) and called_name(arg.func) == "float":
                floats.add(i)
        for kw in node.keywords:
            if kw.arg and isinstance(kw.value, ast.Constant):
                out.setdefault(kw.arg, kw.value.value)
            elif kw.arg and floats is not None and isinstance(kw.value, ast.Call) and called_name(
                    kw.value.func) == "float":
                floats.add(kw.arg)
    return out
