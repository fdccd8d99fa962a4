"""What a target's signature asks for: positional parameters, static positions, required bind params.

Static positions are read from the object itself: `nondiff_argnums` of a custom_vjp/custom_jvp and
`static_argnums`/`static_argnames` of a `jax.jit` function. They are never drawn as arrays: the user gives them as
Python literals (`--arg 0.1`) or jaxdiag uses the parameter's default. `functools.partial` objects and bound methods
use their remaining signature. Too few `--arg`, or a bind parameter the primitive's rules require but `--param`
does not give, are usage errors (exit 2), never a defect of the rules.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, Sequence

import jax

from .. import _compat
from .._core import _locate
from .._checks._base import Subject
from .._harness import call_user
from .._core._errors import InferenceError, UsageError
from .._loading._inputs import ArgSpec, Static, parse_arg, template_leaves, template_text
from .._loading._layout import Layout, flat_view, template_of


class MissingParamsError(InferenceError):
    """A primitive's rules need bind parameters nobody gave: a usage error for one target, a note in `check`."""

    def __init__(self, message: str, label: str, missing: list[str]):
        super().__init__(message, label=label, tried=[], last_error=message, arity=0)
        self.missing = missing


def signature_of(subject: Subject) -> inspect.Signature | None:
    """The signature users call: the custom function's `fun`, the partial's or bound method's remaining one."""
    obj = subject.original if subject.original is not None else subject.obj
    if subject.kind == "primitive":
        # the user's own rule first: an impl `partial(dispatch.apply_primitive, p)` is JAX's (`prim, *args`)
        fns = sorted((_compat.impl(obj), _compat.abstract_eval_rule(obj)), key=lambda f: not _locate.is_user_code(f))
        for fn in fns:
            if fn is None:
                continue
            # a user's partial by its remaining parameters (`partial(_scaled, factor)` takes `x`); JAX's own
            # (`partial(dispatch.apply_primitive, p)`) and any other rule by the unwrapped function's
            own_partial = isinstance(fn, functools.partial) and _locate.is_user_code(fn)
            for candidate in ((fn, _locate.unwrap(fn)) if own_partial else (_locate.unwrap(fn),)):
                try:
                    return inspect.signature(candidate)
                except (TypeError, ValueError):
                    continue
        return None
    target = getattr(obj, "fun", None) if subject.kind in ("custom_vjp", "custom_jvp", "custom_vmap") else obj
    try:
        sig = inspect.signature(target if target is not None else obj)
    except (TypeError, ValueError):
        return None
    # only `*args`: a callable object's function (filter-style wrappers), a custom function's `functools.wraps`
    # metadata (a ufunc's wrapper: `jvp(v, z, n=1)`)
    wrapped = getattr(obj, "fn", None) if subject.kind == "function" else obj
    if wrapped is not target and callable(wrapped) and all(
            p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        try:
            return inspect.signature(wrapped)
        except (TypeError, ValueError):
            return sig
    return _held_signature(obj, sig) if subject.kind == "function" else sig


def _held_signature(obj: Any, sig: inspect.Signature) -> inspect.Signature:
    """A wrapper object's call taking its first arguments by name and the rest as `*args` (equinox's
    `filter_custom_vjp.__call__(vjp_arg, /, *args, **kwargs)`): the function it holds says what the rest are."""
    named = positional(sig)
    if not any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
        return sig
    held = _locate.held_function(obj)
    try:
        inner = inspect.signature(held) if held is not None else None
    except (TypeError, ValueError):
        return sig
    if inner is None or len(positional(inner)) <= len(named) or not _hands_on(obj, named):
        return sig
    return inner


def _hands_on(obj: Any, named: list[inspect.Parameter]) -> bool:
    """Whether what the caller passes reaches the held function unchanged: the wrapper's `__call__` never calls it
    directly (equinox's splits the arguments and rebuilds them in a closure), or calls it with its named parameters,
    then `*args` (`self.fn(x, *args)`). A wrapper putting an argument of its own first (`self.fn(self.scale, x,
    *args)`) takes fewer than the held function."""
    import ast

    from .._harness.source import function_source

    call = next((vars(c)["__call__"] for c in type(obj).__mro__ if "__call__" in vars(c)), None)
    found = function_source(call)
    if found is None:
        return False
    names = [p.name for p in named]
    direct = [n for n in ast.walk(found.node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in _locate.HOLDING_ATTRIBUTES]
    return not direct or any(
        [a.id if isinstance(a, ast.Name) else None for a in c.args[:len(names)]] == names
        and len(c.args) > len(names) and isinstance(c.args[len(names)], ast.Starred) for c in direct)


def positional(sig: inspect.Signature | None) -> list[inspect.Parameter]:
    if sig is None:
        return []
    return [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def static_positions(subject: Subject) -> dict[int, str]:
    """Positions the object itself declares static, with where that comes from (for messages)."""
    obj = subject.original if subject.original is not None else subject.obj
    out: dict[int, str] = {}
    if subject.kind in ("custom_vjp", "custom_jvp"):
        for i in getattr(obj, "nondiff_argnums", ()) or ():
            out[int(i)] = f"nondiff_argnums={tuple(obj.nondiff_argnums)}"
    elif subject.kind == "function":
        argnums, argnames = _compat.jit_static_args(obj)
        names = [p.name for p in positional(signature_of(subject))]
        for i in argnums:
            out[int(i)] = f"static_argnums={tuple(argnums)}"
        for name in argnames:
            if name in names and names.index(name) not in out:
                out[names.index(name)] = f"static_argnames={tuple(argnames)}"
    return out


def required_params(prim: Any) -> list[str]:
    """Keyword-only parameters without defaults in a primitive's impl or abstract eval: bind params to give."""
    for fn in (_compat.impl(prim), _compat.abstract_eval_rule(prim)):
        if fn is None or not _locate.is_user_code(fn):
            continue
        try:
            params = inspect.signature(_locate.unwrap(fn)).parameters.values()
        except (TypeError, ValueError):
            continue
        return [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    return []


def _unfilled_params(prim: Any) -> tuple[set[str], bool]:
    """(bind params some user rule of the primitive needs, whether its impl or abstract eval takes `**params`):
    parameters without a default of the impl or abstract eval (arrays are positional, so a name the library's
    bind calls pass by keyword is a bind param), and keyword-only parameters without a default of any other rule
    (JVP, transpose, batching, lowering: JAX passes them the bind params as keywords). A shared impl taking
    `**params` (a kernel class forwarding them) may need any keyword its bind calls pass."""
    named: set[str] = set()
    open_ended = False
    evaluators = {id(fn) for fn in (_compat.impl(prim), _compat.abstract_eval_rule(prim)) if fn is not None}
    for fn in _compat.registered_rules(prim).values():
        if fn is None or not _locate.is_user_code(fn):
            continue
        try:
            params = list(inspect.signature(_locate.unwrap(fn)).parameters.values())
        except (TypeError, ValueError):
            continue
        if id(fn) in evaluators:
            named |= {p.name for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL,
                                                                                         p.VAR_KEYWORD)}
            open_ended = open_ended or any(p.kind == p.VAR_KEYWORD for p in params)
        else:
            named |= {p.name for p in params if p.default is p.empty and p.kind == p.KEYWORD_ONLY}
    return named, open_ended


def bind_site_params(subject: Subject, origins: dict[str, str] | None = None) -> dict[str, Any]:
    """Bind params the primitive's rules need and nobody gave, read from the library's own `prim.bind(...,
    name=value)` call sites (`_passthrough.bind_site_params`): the values its own code binds, never asked of the
    user. Looked for in every loaded module of the package that defines the primitive or its rules. `origins`
    receives where each value read by following a bind site's variable to its callers came from."""
    if subject.kind != "primitive" or subject.parent is not None:
        return {}
    prim = subject.obj
    named, open_ended = _unfilled_params(prim)
    wanted: set[str] | None = None if open_ended else named - set(subject.params)
    if wanted is not None and not wanted:
        return {}
    names, modules = bind_sources(subject)
    from .._loading._passthrough import bind_site_params as passthrough_bind_params

    followed: dict[str, str] = {}
    found = passthrough_bind_params(names, modules, wanted, followed, _operand_names(prim, names, modules))
    unread = (named if wanted is None else wanted) - set(found) - set(subject.params)
    impl = _compat.impl(prim)
    if unread and impl is not None and _locate.is_user_code(impl):  # the impl hands it to a defaulted parameter
        from .._loading._passthrough import callee_defaults

        for name, (value, where) in callee_defaults(impl, unread).items():
            found[name], followed[name] = value, where
            unread.discard(name)
    if unread:  # a param the library binds only as another's partner (`upsampfac=upsampfac_T` in a transpose)
        from .._loading._passthrough import paired_params

        for name, (value, where) in paired_params(names, modules, unread, {**found, **subject.params}).items():
            found[name], followed[name] = value, where
    if origins is not None:
        origins.update({k: v for k, v in followed.items() if k not in subject.params})
    return {k: _hashable(v) for k, v in found.items() if k not in subject.params}


def _operand_names(prim: Any, names: set[str], modules: list[Any]) -> frozenset[str]:
    """The impl's (else abstract eval's) positional parameters its bind calls pass positionally (`_impl(x, spin,
    *pre, **params)`, `p.bind(x, s, *pre)`): a keyword of that name at a call of a same-named wrapper is its own."""
    from .._loading._passthrough import bound_positionally

    for fn in (_compat.impl(prim), _compat.abstract_eval_rule(prim)):
        if fn is None or not _locate.is_user_code(fn):
            continue
        try:
            params = list(inspect.signature(_locate.unwrap(fn)).parameters.values())
        except (TypeError, ValueError):
            continue
        bound = bound_positionally(names, modules)
        return frozenset(p.name for i, p in enumerate(params) if p.kind == p.VAR_POSITIONAL or (
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and i < bound))
    return frozenset()


def bind_site_annotations(subject: Subject, wanted: set[str]) -> dict[str, str]:
    """The annotations of the wrapper parameters the library's bind calls pass as `wanted` bind params
    (`_passthrough.bind_site_annotations`)."""
    from .._loading._passthrough import bind_site_annotations as passthrough_annotations

    return _read_at_bind_sites(subject, wanted, passthrough_annotations)


def bind_site_arities(subject: Subject, wanted: set[str]) -> dict[str, int]:
    """How many entries the library's bind calls give each of the `wanted` tuple bind params
    (`_passthrough.bind_site_arities`)."""
    from .._loading._passthrough import bind_site_arities as passthrough_arities

    return _read_at_bind_sites(subject, wanted, passthrough_arities)


def _read_at_bind_sites(subject: Subject, wanted: set[str], reader: Any) -> dict[str, Any]:
    """`reader(names, modules, wanted)` over the primitive's bind sites in its package; {} for anything else."""
    if subject.kind != "primitive" or not wanted:
        return {}
    names, modules = bind_sources(subject)
    return dict(reader(names, modules, wanted))


def missing_params(subject: Subject) -> list[str]:
    """The required bind params of a primitive subject that nobody gave: its impl's keyword-only ones
    (`required_params`), and the positional parameters of its impl that the library's own bind calls pass by
    keyword (`_keyword_bound`)."""
    if subject.kind != "primitive":
        return []
    required = dict.fromkeys([*required_params(subject.obj), *_keyword_bound(subject)])
    return [m for m in required if m not in subject.params]


def _keyword_bound(subject: Subject) -> list[str]:
    """The impl's positional parameters, after the operands every bind call passes positionally, that some bind
    call of the library passes by keyword (`prim.bind(x, halo_extents=extents)` for `impl(x, halo_extents)`): bind
    params, never operands, whether or not their values can be read at the call site."""
    if subject.parent is not None:
        return []
    params = _named_positionals(subject.obj)
    if not params:
        return []
    from .._loading._passthrough import bound_by_keyword, bound_positionally

    names, modules = bind_sources(subject)
    keywords = bound_by_keyword(names, modules)
    if not keywords:
        return []
    first = bound_positionally(names, modules)
    return [p.name for p in params[first:] if p.name in keywords and p.default is p.empty]


def _named_positionals(prim: Any) -> list[inspect.Parameter]:
    """The named positional parameters of the primitive's impl, else of its abstract eval where the impl only
    forwards `*args` (`def impl(*args, **kw): return kernel("name", *args, **kw)`): operands, then the bind params
    a library may pass by keyword."""
    for fn in (_compat.impl(prim), _compat.abstract_eval_rule(prim)):
        if fn is None or not _locate.is_user_code(fn):
            continue
        try:
            params = [p for p in inspect.signature(_locate.unwrap(fn)).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            continue
        if params:
            return params
    return []


def bind_site_operands(subject: Subject) -> list[list[str]]:
    """For a primitive whose rules take `*args`: the operand lists the library's own `prim.bind(a, b, ...)` calls
    pass (`_passthrough.bind_site_operands`), the arity and the names inference starts from."""
    if subject.kind != "primitive" or subject.parent is not None:
        return []
    from .._loading._passthrough import bind_site_operands as passthrough_operands

    names, modules = bind_sources(subject)
    return passthrough_operands(names, modules, _calling_holders(subject.obj, names, modules))


def _calling_holders(prim: Any, names: set[str], modules: list[Any]) -> frozenset[str]:
    """The module-level names of callable objects holding the primitive (a kernel class whose instances keep it in
    an attribute and bind it when called: `kernel_p(x, idx, outs=...)`): their calls are the library's binds."""
    return frozenset(attr for module in modules for attr, value in list(vars(module).items())
                     if attr in names and value is not prim and _holds(value, prim) and callable(value)
                     and not inspect.isroutine(value) and not isinstance(value, type))


def bind_sources(subject: Subject) -> tuple[set[str], list[Any]]:
    """(the names the primitive is held under, the loaded modules of the packages defining it or its rules)."""
    prim = subject.obj
    roots = {(getattr(_locate.unwrap(r), "__module__", "") or "").split(".")[0]
             for r in _compat.registered_rules(prim).values() if r is not None and _locate.is_user_code(r)}
    roots.add((subject.module or "").split(".")[0])
    # a Primitive object passed to the API has JAX's own core module as its module: JAX binds no user primitive
    # (reading all of JAX's source for bind sites took about 10 s)
    roots -= {"", "jax", "jaxlib"}
    modules = [m for name, m in sorted(sys.modules.items()) if m is not None and name.split(".")[0] in roots]
    names = {prim.name}
    for module in modules:
        for attr, value in list(vars(module).items()):
            if value is prim:
                names.add(attr)
            elif _holds(value, prim):
                names.add(attr)
            elif isinstance(value, type):  # a class attribute (`cls.outer_primitive = p`), bound under its class
                names.update(f"{attr}.{name}" for name, held in list(vars(value).items()) if held is prim)
    return names, modules


def _attrs(value: Any) -> dict[str, Any]:
    try:
        return dict(vars(value)) if hasattr(value, "__dict__") and not isinstance(value, type) else {}
    except TypeError:
        return {}


def _holds(value: Any, obj: Any) -> bool:
    return any(v is obj for v in _attrs(value).values())


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def param_snippet(missing: Sequence[str]) -> str:
    return " ".join(f"--param {m}=…" for m in missing)


def check_params(subject: Subject) -> None:
    """MissingParamsError when the primitive's rules require bind params that were not given."""
    missing = missing_params(subject)
    if missing:
        names = ", ".join(missing)
        raise MissingParamsError(
            f"{subject.label} needs bind parameter(s) {names} (keyword-only in its impl/abstract eval, or passed by "
            "keyword at the library's bind calls); pass "
            f"{param_snippet(missing)} with the values your code binds (or record them with `jaxdiag record`)",
            label=subject.label, missing=missing)


def check_arity(subject: Subject, templates: Sequence[Any]) -> None:
    """UsageError when fewer --arg than required positional parameters (statics included) were given."""
    sig = signature_of(subject)
    if sig is None or any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return
    params = positional(sig)
    if subject.kind == "primitive":
        params = [p for p in params if p.name not in subject.params]
    required = [p for p in params if p.default is p.empty]
    if len(templates) < len(required):
        names = ", ".join(p.name for p in required)
        missing = required[len(templates):]
        statics = static_positions(subject)
        hint = "; ".join(f"`{p.name}` is static ({statics[params.index(p)]}): pass its value, e.g. --arg 0.1"
                         for p in missing if params.index(p) in statics)
        raise UsageError(f"{subject.label} takes {len(required)} positional argument(s) ({names}) but "
                         f"{len(templates)} --arg given{'; ' + hint if hint else ''}")
    if len(templates) > len(params) and subject.kind != "primitive":
        raise UsageError(f"{subject.label} takes at most {len(params)} positional argument(s) "
                         f"({', '.join(p.name for p in params)}) but {len(templates)} --arg given")


def apply(subject: Subject, templates: Sequence[Any]) -> None:
    """Give the subject its inputs: plain arrays and top-level statics directly, anything else via a flat view."""
    names = [p.name for p in positional(signature_of(subject))]
    layout = Layout.from_templates(templates, names)
    if subject.kind == "primitive" and any(not isinstance(leaf, ArgSpec) or leaf.key is not None
                                           for leaves in layout.arg_leaves for leaf in leaves) \
            and not layout.plain:
        raise UsageError(f"{subject.label} is a primitive: its positional arguments are arrays (pass bind "
                         "parameters with --param NAME=VALUE)")
    if subject.kind == "primitive" and layout.static_positions():
        raise UsageError(f"{subject.label} is a primitive: its positional arguments are arrays; a static value "
                         "such as an axis is a bind parameter (--param NAME=VALUE)")
    subject.arg_texts = [template_text(t) for t in templates]
    if layout.plain:
        subject.specs = layout.specs
        subject.static_args = layout.static_positions()
        return
    if subject.original is None:
        subject.original = subject.obj
    subject.obj = flat_view(subject.kind, subject.original, layout)
    subject.layout = layout
    subject.specs = layout.specs
    subject.static_args = {}


def templates_of_args(args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(one template per argument, one concrete array or None per array leaf). SPEC strings are parsed; arrays
    stay concrete; Python scalars, None, dtypes and callables are static; tuples/lists/dicts are pytrees."""
    templates: list[Any] = []
    concrete: list[Any] = []
    template: Any
    for a in args:
        if isinstance(a, (ArgSpec, Static)):
            template = a
        elif isinstance(a, str):
            template = parse_arg(a)
        elif hasattr(a, "shape") and hasattr(a, "dtype"):
            template = template_of(a)
            if isinstance(template, ArgSpec):
                concrete.append(a if template.key is None else jax.random.key_data(a))
                templates.append(template)
                continue
        elif isinstance(a, (tuple, list, dict)) and any(
                isinstance(leaf, (ArgSpec, Static)) for leaf in template_leaves(a)):
            template = a  # already a template (from a recorded call or a parsed pyproject entry)
        elif isinstance(a, (tuple, list, dict)) and not hasattr(a, "_fields"):
            # a pytree from the API: SPEC strings inside are parsed, arrays described, anything else static
            template = jax.tree_util.tree_map(lambda x: parse_arg(x) if isinstance(x, str) else template_of(x), a)
        else:
            template = Static(a)
        templates.append(template)
        concrete.extend(None for leaf in template_leaves(template) if isinstance(leaf, ArgSpec))
    return templates, concrete


def inherited(spec: ArgSpec | None, value: list, root_inputs: list, root: Subject,
              stated: dict[int, str] | None = None) -> Any:
    """A nested argument that is one of the function's own inputs takes that input's domain (per argument), or the
    one the function's docstring states for it (`stated`: `_operand_kinds.documented_domains` of the function)."""
    stated = stated or {}
    if spec is None or spec.domain or not spec.is_inexact:
        return spec
    for k, candidate in enumerate(root_inputs):
        if value and candidate is value[0]:
            # else what the function's docstring states that input holds ("spikes : The binary vector"), where the
            # function ran on values given without a domain (its docstring example's): the nested rule's contract
            domain = (root.specs[k].domain if k < len(root.specs) else None) or stated.get(k)
            if domain:
                return spec.with_domain(domain)
    domains = {s.domain for s in root.specs if s.is_inexact}
    if len(domains) == 1 and None not in domains:  # every input of the function has one domain: keep it
        return spec.with_domain(domains.pop())
    return spec


def custom_call_subject(root: Subject, kind: str, obj: Any, fn: Any, args: tuple, kwargs: dict,
                         root_inputs: Sequence[Any] = (), stated: dict[int, str] | None = None) -> Subject | None:
    """A subject reproducing one recorded custom_jvp/custom_vjp/custom_vmap call from its avals: array (and key)
    leaves become specs, anything else (an int in nondiff_argnums, a callable, a Python scalar) is static, pytree
    arguments are checked through a flat view. Keyword arguments are bound positionally, as JAX does. None when the
    call cannot be reproduced."""
    if kind in ("custom_jvp", "custom_vjp"):
        args = _compat.resolve_positional(fn, tuple(args), dict(kwargs))
    elif kwargs:
        return None
    described = call_user(Layout.from_values, args)  # an argument jaxdiag cannot describe: not reproducible
    if described.value is None:
        return None
    layout = described.value
    if kind == "custom_vmap" and (not layout.plain or layout.static_positions()):
        return None
    subject = Subject(label=f"{root.label} > {getattr(fn, '__name__', kind)}", kind=kind, obj=obj, specs=[],
                      location=_locate.locate(fn), module=root.module, parent=root, domain=root.domain)
    values = iter(jax.tree_util.tree_leaves(list(args)))
    for leaves in layout.arg_leaves:
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, ArgSpec):
                leaves[i] = inherited(leaf, [next(values, None)], list(root_inputs), root, stated)
            else:
                next(values, None)
    try:
        apply(subject, [jax.tree_util.tree_unflatten(d, leaves)
                                   for d, leaves in zip(layout.arg_defs, layout.arg_leaves)])
    except UsageError:
        return None
    return subject
