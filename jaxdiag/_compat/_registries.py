"""Rule registries: the batching, JVP, transpose, impl, abstract-eval and lowering rules registered for a
primitive, and whether a primitive is JAX's own (the snapshot/restore of JAX's state is in `_state.py`).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from jax._src import core as _core
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import mlir as _mlir
from .._core._locate import is_user_code
from ._base import is_primitive


# ---------------------------------------------------------------------------------------------------------------
# Rule registries
# ---------------------------------------------------------------------------------------------------------------


def _batching_table() -> dict:
    """The dict vmap actually consults (a write-only proxy fronts it on newer JAX)."""
    fancy = getattr(_batching, "fancy_primitive_batchers", None)
    return fancy if isinstance(fancy, dict) else {}


def _legacy_batching_table() -> dict:
    table = getattr(_batching, "primitive_batchers", None)
    return table if isinstance(table, dict) else {}


def _closure_vars(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # empty cell
            pass
    return out


def _axis_batching_table() -> dict:
    """`axis_primitive_batchers` where it is a plain dict (older JAX); newer ones front the fancy table with a
    proxy whose wrappers are recognised by `batching_rule_leading_args`."""
    table = getattr(_batching, "axis_primitive_batchers", None)
    return table if isinstance(table, dict) else {}


def batching_rule_leading_args(prim: Any) -> int:
    """How many arguments JAX passes to the user's batching rule before `(batched_args, batch_dims)`, by the
    registry it was registered in: 0 for `primitive_batchers` (`rule(vals, dims, **params)`), 1 for
    `fancy_primitive_batchers` (`rule(axis_data, vals, dims, **params)`), 3 for `axis_primitive_batchers`
    (`rule(axis_size, axis_name, trace_type, vals, dims, **params)`)."""
    if prim in _legacy_batching_table():
        return 0
    if prim in _axis_batching_table():
        return 3
    rule = _batching_table().get(prim)
    if rule is None:
        return 0
    if "batcher" not in _closure_vars(rule):
        return 1
    return 3 if "AxisPrimitiveBatchersProxy" in getattr(rule, "__qualname__", "") else 0


def batching_rule(prim: Any) -> Callable | None:
    """The user's batching rule for `prim`, unwrapped from the proxy JAX stores, or None."""
    legacy = _legacy_batching_table()
    if prim in legacy:
        return legacy[prim]
    if prim in _axis_batching_table():
        return _axis_batching_table()[prim]
    rule = _batching_table().get(prim)
    if rule is None:
        return None
    inner = _closure_vars(rule).get("batcher")
    return inner if callable(inner) else rule


def batching_rule_is_fancy(prim: Any) -> bool:
    """True when the registered rule takes `axis_data` first (registered directly in the fancy table)."""
    if prim in _legacy_batching_table():
        return False
    rule = _batching_table().get(prim)
    return rule is not None and "batcher" not in _closure_vars(rule)


def has_batching_rule(prim: Any) -> bool:
    return prim in _batching_table() or prim in _legacy_batching_table() or prim in _axis_batching_table()


def jvp_rule(prim: Any) -> Callable | None:
    return _ad.primitive_jvps.get(prim)


def transpose_rule(prim: Any) -> Callable | None:
    rule = _ad.primitive_transposes.get(prim)
    if rule is None:
        rule = getattr(_ad, "fancy_transposes", {}).get(prim)
    return rule


def _own_rule(prim: Any, role: str) -> Callable | None:
    """The `impl` or `abstract_eval` a bind of `prim` runs, when the user gave one: set on the instance
    (`def_impl`, `def_abstract_eval`), or a method of a `Primitive` subclass that overrides the base class's
    (which only raises), as wrapper libraries define their primitives."""
    if role in vars(prim):
        return vars(prim)[role]
    for cls in type(prim).__mro__:
        if cls is _core.Primitive or cls is object:
            return None
        if role in vars(cls):
            return getattr(prim, role)  # bound: JAX calls `prim.impl(*args, **params)`
    return None


def has_impl(prim: Any) -> bool:
    return _own_rule(prim, "impl") is not None


def has_abstract_eval(prim: Any) -> bool:
    return _own_rule(prim, "abstract_eval") is not None


def impl(prim: Any) -> Callable | None:
    return _own_rule(prim, "impl")


def user_impl(prim: Any) -> Callable | None:
    """The impl an eager bind of `prim` runs, for the user's primitives (JAX's own compute the same either way)."""
    if not is_primitive(prim) or is_builtin_primitive(prim):
        return None
    return impl(prim)


def abstract_eval_rule(prim: Any) -> Callable | None:
    """The user's abstract-eval function (JAX stores a partial around it)."""
    rule = _own_rule(prim, "abstract_eval")
    if isinstance(rule, functools.partial):
        for arg in rule.args:
            if callable(arg):
                return arg
    inner = _closure_vars(rule).get("abstract_eval")  # def_abstract_eval's effect-free closure
    return inner if callable(inner) else rule


def transpose_only(prim: Any) -> bool:
    """A user primitive JAX can only transpose: a transpose rule, but neither an impl nor a lowering. A JVP rule
    returns one as its tangent when the derivative exists in reverse mode only (an FFI library's reverse kernel is
    what its transpose binds): `jax.grad` linearizes it away, `jax.jvp` must evaluate it and fails."""
    return is_primitive(prim) and transpose_rule(prim) is not None and not has_impl(prim) and not has_lowering(prim)


def has_lowering(prim: Any, platform: str = "cpu") -> bool:
    if prim in getattr(_mlir, "_lowerings", {}):
        return True
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    return prim in per_platform.get(platform, {})


def has_any_lowering(prim: Any) -> bool:
    """A lowering for some platform, or for all."""
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    return prim in getattr(_mlir, "_lowerings", {}) or any(prim in rules for rules in per_platform.values())


def lowering_rule(prim: Any, platform: str = "cpu") -> Callable | None:
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    rule = per_platform.get(platform, {}).get(prim) or getattr(_mlir, "_lowerings", {}).get(prim)
    if rule is None:
        return None
    if not callable(rule) and callable(getattr(rule, "rule", None)):  # jax >= 0.7 stores LoweringRuleEntry
        rule = rule.rule
    return _closure_vars(rule).get("fun") or rule


def registered_rules(prim: Any) -> dict[str, Callable | None]:
    """Every rule jaxdiag knows how to read for `prim`, by role."""
    return {
        "impl": impl(prim),
        "abstract_eval": abstract_eval_rule(prim),
        "batching": batching_rule(prim),
        "jvp": jvp_rule(prim),
        "transpose": transpose_rule(prim),
        "lowering": lowering_rule(prim),
    }


def rule_bound_primitives(prim: Any, roles: tuple[str, ...] = ("jvp", "transpose")) -> list[tuple[str, Any]]:
    """(role, primitive) for each other user primitive a rule of `prim` holds and may bind: an argument of the
    `functools.partial` registered as the rule (`partial(_jvp, prim, jvp_prim)`), or a closure variable of the
    rule (a factory's inner function), a few wrappers deep. The primitive a factory makes for a rule alone (a JVP
    primitive, a reverse primitive bound by that one's transpose) is held nowhere else."""
    rules = registered_rules(prim)
    out: list[tuple[str, Any]] = []
    seen = {id(prim)}
    for role in roles:
        for held in _held_objects(rules.get(role), depth=3):
            if is_primitive(held) and id(held) not in seen and not is_builtin_primitive(held):
                seen.add(id(held))
                out.append((role, held))
    return out


def rule_reachable_primitives(prim: Any, hops: int = 3) -> list[Any]:
    """The user primitives `prim`'s rules bind, theirs, ... up to `hops` rules away (a forward primitive's JVP
    primitive, the reverse primitive that one's transpose binds), nearest first, each once by identity."""
    out: list[Any] = []
    seen, frontier = {id(prim)}, [prim]
    for _ in range(hops):
        frontier = [held for p in frontier for _, held in rule_bound_primitives(p) if id(held) not in seen]
        frontier = list({id(p): p for p in frontier}.values())
        seen.update(id(p) for p in frontier)
        out.extend(frontier)
    return out


def transposed_tangents(prim: Any) -> list[Any]:
    """The primitives JAX can only transpose (`transpose_only`) that `prim`'s JVP rule may return as its tangent:
    held by the rule (`rule_bound_primitives`) or named in its code as a global of its module."""
    rule = jvp_rule(prim)
    found = [held for _, held in rule_bound_primitives(prim, ("jvp",))]
    for fn in [rule, *(x for x in _reached(rule, depth=3) if getattr(x, "__code__", None) is not None)]:
        found += [v for v in _named_globals(fn) if is_primitive(v)]
    return list({id(p): p for p in found if p is not prim and transpose_only(p)}.values())


def _named_globals(fn: Any) -> list[Any]:
    """The values of the module globals `fn`'s code (and the code nested in it) names."""
    code, space = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is None or not isinstance(space, dict):
        return []
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if hasattr(c, "co_names"))
    return [space[n] for n in sorted(names) if n in space]


def _held_objects(value: Any, depth: int) -> list[Any]:
    """The primitives a rule object holds (`_reached`)."""
    return [x for x in _reached(value, depth) if is_primitive(x)]


def _reached(value: Any, depth: int) -> list[Any]:
    """What a rule object holds: a partial's function, arguments and keywords, a function's closure variables,
    the items of a tuple or list among them; `depth` levels down. A primitive is reached, not walked into."""
    if value is None or depth < 0:
        return []
    if is_primitive(value):
        return [value]
    if isinstance(value, functools.partial):
        inner = [value.func, *value.args, *(value.keywords or {}).values()]
    elif isinstance(value, (tuple, list)):
        inner = list(value)[:32]
    elif callable(value) and getattr(value, "__code__", None) is not None:
        inner = list(_closure_vars(value).values())
    else:
        return []
    below = [held for item in inner for held in _reached(item, depth - 1)]
    return [*(x for x in inner if not is_primitive(x)), *below]


def is_builtin_primitive(prim: Any) -> bool:
    """JAX's own primitives are trusted unless asked: none of their rules is the user's code.

    Asked for every equation of a traced program (100,000 in a quadrature's loops), so the answer is kept per
    primitive with the registry entries it was read from, and read again only when one of them changed."""
    entries = _registry_entries(prim)
    try:
        kept = _BUILTIN_ANSWERS.get(prim)
    except TypeError:
        kept = None
    if kept is not None and len(kept[0]) == len(entries) and all(a is b for a, b in zip(kept[0], entries)):
        return kept[1]
    answer = not any(is_user_code(r) for r in registered_rules(prim).values() if r is not None)
    try:
        _BUILTIN_ANSWERS[prim] = (entries, answer)
    except TypeError:  # a primitive-like object without hash or weak reference: answered, not kept
        pass
    return answer


# primitive -> (the raw registry entries its answer was read from, whether it is JAX's own); weak, so a user's
# primitive (and its module's rules) is not kept alive by having been asked about
_BUILTIN_ANSWERS: weakref.WeakKeyDictionary[Any, tuple[tuple, bool]] = weakref.WeakKeyDictionary()


def _registry_entries(prim: Any) -> tuple:
    """Everything `registered_rules` reads for `prim`, as stored (no unwrapping): the same objects, the same
    answer. The impl and abstract eval live on the instance or its class; the rules in JAX's registries
    (`_all_tables`, and the two read besides them)."""
    own = vars(prim) if hasattr(prim, "__dict__") else {}
    return (type(prim), own.get("impl"), own.get("abstract_eval"), _axis_batching_table().get(prim),
            getattr(_ad, "fancy_transposes", {}).get(prim), *(table.get(prim) for table in _all_tables().values()))


def _all_tables() -> dict[str, dict]:
    tables = {"batching": _batching_table(), "legacy_batching": _legacy_batching_table(),
              "jvp": _ad.primitive_jvps, "transpose": _ad.primitive_transposes,
              "lowerings": getattr(_mlir, "_lowerings", {})}
    for platform, table in getattr(_mlir, "_platform_specific_lowerings", {}).items():
        tables[f"lowerings:{platform}"] = table
    return tables


def rule_registries() -> dict[str, dict]:
    """Every rule registry JAX keeps, by name, as the live tables: batching (`primitive_batchers` and the legacy
    and axis tables), JVPs, transposes (with `fancy_transposes`), and the lowerings (generic and per platform).
    For tests that prove a run leaves them as it found them."""
    tables = {**_all_tables(), "axis_batching": _axis_batching_table()}
    fancy = getattr(_ad, "fancy_transposes", None)
    if isinstance(fancy, dict):
        tables["fancy_transpose"] = fancy
    return tables


def registration_keys() -> dict[str, set]:
    """The keys of every rule registry, to drop later what a module jaxdiag loaded itself registered."""
    return {name: set(table) for name, table in _all_tables().items()}


def drop_registrations_since(keys: dict[str, set]) -> None:
    """Remove the entries added since `registration_keys()` returned `keys` (the rules of an edited copy of the
    user's module that jaxdiag loaded to verify a fix: its primitives must not stay registered)."""
    for name, table in _all_tables().items():
        for key in set(table) - keys.get(name, set()):
            del table[key]
