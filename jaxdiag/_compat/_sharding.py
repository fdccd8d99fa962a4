"""JAX internals and version differences the sharding checks need (`jaxdiag sharding`).

The only place the sharding checks touch JAX internals or version differences: custom_partitioning's callbacks
and Shardy rules, shard_map's location and its varying-axes type system (and jax 0.5's replication-rule tables),
the partitioner in use, and the text of compiled (SPMD-partitioned) HLO. Feature detection only. Not re-exported
by `_compat/__init__`: only the sharding child process imports it (`from .._compat import _sharding as cs`).
"""

from __future__ import annotations

import contextlib
import functools
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import jax
import numpy as np

try:  # the public home since jax 0.6; jax.experimental.shard_map before
    from jax import shard_map as _shard_map
except ImportError:  # pragma: no cover - exercised on jax 0.5
    from jax.experimental.shard_map import shard_map as _shard_map  # type: ignore[no-redef]

from jax.experimental.custom_partitioning import (
    custom_partitioning as custom_partitioning_type,
)

# ---------------------------------------------------------------------------------------------------------------
# Devices, meshes, the partitioner
# ---------------------------------------------------------------------------------------------------------------


def device_count() -> int:
    return len(jax.devices("cpu"))


def make_mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> Any:
    """A mesh over the first prod(shape) CPU devices. `jax.sharding.Mesh` gives `Auto` axes on every release
    (`jax.make_mesh` gives `Explicit` ones on newer JAX, which changes what jit and shard_map accept)."""
    devices = np.array(jax.devices("cpu")[: int(np.prod(shape))]).reshape(shape)
    return jax.sharding.Mesh(devices, names)


def uses_shardy() -> bool:
    """True when this JAX partitions with Shardy (custom_partitioning then follows `sharding_rule`, not
    `infer_sharding_from_operands`)."""
    return bool(getattr(jax.config, "jax_use_shardy_partitioner", False))


@contextlib.contextmanager
def shardy_partitioner() -> Iterator[bool]:
    """Partition with Shardy for the body, where this JAX can (jax 0.5 still defaults to GSPMD but has the switch,
    measured on jax 0.5.3: a custom_partitioning `sharding_rule` then takes effect). Yields whether Shardy is on."""
    if uses_shardy():
        yield True
        return
    try:
        from jax._src.config import use_shardy_partitioner
    except ImportError:  # pragma: no cover - a JAX without the switch: GSPMD only
        yield False
        return
    with use_shardy_partitioner(True):
        yield True


def shard_map(fn: Callable, mesh: Any, in_specs: Any, out_specs: Any) -> Callable:
    return _shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


# ---------------------------------------------------------------------------------------------------------------
# custom_partitioning
# ---------------------------------------------------------------------------------------------------------------


def is_custom_partitioning(obj: Any) -> bool:
    return isinstance(obj, custom_partitioning_type)


@contextlib.contextmanager
def record_partitioned_calls(seen: list, guard: Callable[[str], Any]) -> Iterator[None]:
    """Record (obj, args, kwargs) for every custom_partitioning object called while the body runs, inside
    `guard(...)` (the harness's `jaxdiag_code`); the class's `__call__` is restored on exit, even on error."""
    original = custom_partitioning_type.__dict__["__call__"]

    @functools.wraps(original)
    def recording_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with guard("the custom_partitioning call recorder"):
            seen.append((self, args, kwargs))
        return original(self, *args, **kwargs)

    custom_partitioning_type.__call__ = recording_call  # type: ignore[method-assign]
    try:
        yield
    finally:
        custom_partitioning_type.__call__ = original  # type: ignore[method-assign]


@dataclass(frozen=True)
class PartitionParts:
    fun: Callable
    partition: Callable | None
    infer: Callable | None
    propagate: Callable | None
    rule: Any  # SdyShardingRule, a callable building one, or None
    static_argnums: tuple[int, ...]


def partition_parts(obj: Any) -> PartitionParts:
    return PartitionParts(fun=obj.fun, partition=getattr(obj, "partition", None),
                          infer=getattr(obj, "infer_sharding_from_operands", None),
                          propagate=getattr(obj, "propagate_user_sharding", None),
                          rule=getattr(obj, "sharding_rule", None),
                          static_argnums=tuple(getattr(obj, "static_argnums", ()) or ()))


@contextlib.contextmanager
def spy_partition_callbacks(obj: Any, wrap: Callable[[str, Callable], Callable]) -> Iterator[None]:
    """Replace the object's `partition`, `infer_sharding_from_operands` and `propagate_user_sharding` with
    `wrap(name, original)` for the body; `custom_partitioning.__call__` reads them at every call and passes them to
    the primitive, so a fresh trace (a new jit) sees the spies. Restored on exit, even on error."""
    saved = {name: getattr(obj, name, None)
             for name in ("partition", "infer_sharding_from_operands", "propagate_user_sharding")}
    try:
        for name, original in saved.items():
            if original is not None:
                setattr(obj, name, wrap(name, original))
        yield
    finally:
        for name, original in saved.items():
            setattr(obj, name, original)


@dataclass(frozen=True)
class RuleFactors:
    """A Shardy sharding rule as factor names per dimension: `operands[i][d]` is the tuple of factors of operand i's
    dimension d (one factor, or several for a compound dimension)."""

    operands: tuple[tuple[tuple[str, ...], ...], ...]
    results: tuple[tuple[tuple[str, ...], ...], ...]
    special: frozenset[str]  # reduction, need-replication and permutation factors: not pass-through
    text: str  # the rule as the user would write it, "i j -> i j"


def rule_factors(rule: Any) -> RuleFactors | None:
    """The factors of an `SdyShardingRule` (None for no rule or a callable rule, which needs shapes)."""
    if rule is None or not hasattr(rule, "operand_mappings"):
        return None

    def dims(mapping: Any) -> tuple[tuple[str, ...], ...]:
        out = []
        for dim in mapping:
            out.append((dim,) if isinstance(dim, str) else tuple(str(f) for f in dim))
        return tuple(out)

    operands = tuple(dims(m) for m in rule.operand_mappings)
    results = tuple(dims(m) for m in rule.result_mappings)
    special = frozenset(f for name in ("reduction_factors", "need_replication_factors", "permutation_factors")
                        for f in (getattr(rule, name, ()) or ()))

    def show(mapping: tuple[tuple[str, ...], ...]) -> str:
        words = [d[0] if len(d) == 1 else "(" + " ".join(d) + ")" for d in mapping]
        # `...` is stored as one factor per batch dimension (`…0 …1`): written back as the user wrote it
        shown = [w for k, w in enumerate(words) if not (w.startswith("…") and k and words[k - 1].startswith("…"))]
        return " ".join("..." if w.startswith("…") else w for w in shown)

    text = ", ".join(show(m) for m in operands) + " -> " + ", ".join(show(m) for m in results)
    return RuleFactors(operands, results, special, text)


def supports_factor_kinds() -> bool:
    """Whether `def_partition` takes `need_replication_factors` (jax 0.5.3 takes only the rule itself)."""
    import inspect

    return "need_replication_factors" in inspect.signature(custom_partitioning_type.def_partition).parameters


def supports_sharding_rule() -> bool:
    """Whether `def_partition` takes a Shardy `sharding_rule` on this JAX."""
    import inspect

    return "sharding_rule" in inspect.signature(custom_partitioning_type.def_partition).parameters


# ---------------------------------------------------------------------------------------------------------------
# shard_map and the varying-manual-axes type
# ---------------------------------------------------------------------------------------------------------------


def tracks_varying_axes() -> bool:
    """True when avals carry the set of mesh axes a value varies over inside shard_map (`vma`, newer JAX): a
    primitive's abstract eval must then propagate it. Older JAX tracks replication with per-primitive rules."""
    aval = jax.core.ShapedArray((), np.float32)
    return hasattr(aval, "vma") or hasattr(aval, "manual_axis_type")


def varying_axes(aval: Any) -> frozenset[str] | None:
    """The mesh axes a value varies over inside shard_map, from its aval (None where JAX does not track it)."""
    mat = getattr(aval, "manual_axis_type", None)
    if mat is not None and hasattr(mat, "varying"):
        return frozenset(mat.varying)
    vma = getattr(aval, "vma", None)
    return frozenset(vma) if vma is not None else None


def missing_replication_rules(prim: Any) -> list[str]:
    """On JAX that tracks replication with per-primitive tables (shard_map's `check_rep`, jax <= 0.5), the
    registrations `prim` lacks: both a check rule and a rewrite rule are needed (measured on jax 0.5.3: with only
    one, shard_map still raises `No replication rule`). Empty where the tables do not exist."""
    try:
        from jax.experimental import shard_map as _sm_module
    except ImportError:  # pragma: no cover
        return []
    tables = (("register_standard_check", "_check_rules"), ("register_standard_rewrite", "_rewrite_rules"))
    return [register for register, table in tables
            if isinstance(getattr(_sm_module, table, None), dict) and prim not in getattr(_sm_module, table)]


def shard_map_rule_name() -> str:
    """What a user primitive needs for shard_map on this JAX, for messages."""
    if tracks_varying_axes():
        return "an abstract eval that keeps the inputs' varying mesh axes (`vma`)"
    return "a replication rule for shard_map's check_rep"


def shard_map_rule_fix(prim_name: str, mixed: bool = False) -> str:
    if tracks_varying_axes():
        cast = ("jax.lax.pcast(w, axis_names, to='varying')" if hasattr(jax.lax, "pcast") else
                "jax.lax.pvary(w, axis_names)")
        operands = (" With several operands, bind it only on operands that vary over the same mesh axes, as JAX's "
                    f"own primitives require: cast a replicated one first (`{cast}`), or make the abstract eval "
                    "raise when the operands' varying axes differ." if mixed else "")
        return (f"Build {prim_name}'s output avals from an input aval so they keep its varying mesh axes: "
                "`return x.update(shape=out_shape, dtype=out_dtype)` instead of "
                "`return ShapedArray(out_shape, out_dtype)`." + operands)
    return (f"Register {prim_name}'s replication rules for shard_map (its output is replicated exactly when all "
            "inputs are): `from jax.experimental import shard_map` then "
            f"`shard_map.register_standard_check(prim)` and `shard_map.register_standard_rewrite(prim)` for the "
            f"primitive object ({prim_name!r}), or pass `check_rep=False` to shard_map.")


# ---------------------------------------------------------------------------------------------------------------
# Compiled HLO
# ---------------------------------------------------------------------------------------------------------------


def compiled_hlo(fn: Callable, *args: Any) -> str:
    """The optimized, SPMD-partitioned HLO text of `jax.jit(fn)` on these (sharded) arguments."""
    return jax.jit(fn).lower(*args).compile().as_text() or ""


def lowered_text(fn: Callable, *args: Any) -> str:
    return jax.jit(fn).lower(*args).as_text()


# Custom-call targets JAX itself emits around or inside ordinary ops (sharding annotations, LAPACK, FFT,
# Python callbacks): not a user kernel.
_INTERNAL_TARGET = re.compile(r"^(Sharding|SPMD|sdy|xla\.sdy|lapack_|ducc_|xla_python|xla_ffi_python|"
                              r"annotate_device_placement|MoveToHost|MoveToDevice|LayoutConstraint|"
                              r"cu|hip|tpu_|mhlo\.|X64)")


def custom_call_targets(stablehlo: str) -> list[str]:
    """The targets of `stablehlo.custom_call`s in lowered StableHLO text."""
    return re.findall(r"custom_call\s*@([\w.$-]+)", stablehlo) + re.findall(
        r"call_target_name\s*=\s*\"([^\"]+)\"", stablehlo)


def is_internal_target(name: str) -> bool:
    return bool(_INTERNAL_TARGET.match(name))


def callback_targets() -> tuple[str, ...]:
    """The custom-call targets pure_callback lowers to on CPU (the name changed across releases)."""
    return ("xla_ffi_python_cpu_callback", "xla_python_cpu_callback")


def eqn_params(eqn: Any) -> dict[str, Any]:
    return dict(eqn.params)


def types_varying_values() -> bool:
    """Whether this JAX says which values inside a shard_map vary over a mesh axis (`varying_outputs` can answer)."""
    return tracks_varying_axes() and hasattr(jax, "typeof") and (hasattr(jax.lax, "pcast") or hasattr(jax.lax, "pvary"))


def varying_outputs(fn: Callable, name: str, shapes: list[Any], varying: list[bool]) -> list[bool] | None:
    """Per output leaf of `fn` traced in a shard_map over a one-device mesh axis `name`, its arguments (`shapes`)
    varying over the axis where `varying` says: whether JAX types it as varying too (a `psum`'s result is the same
    on every device, an `all_gather`'s or a `ppermute`'s is not). None where this JAX has no such typing (`vma`);
    what `fn` raises there propagates (the caller runs it as user code)."""
    if not types_varying_values():
        return None
    # `pcast(..., to="varying")` on newer JAX, `pvary` before it (looked up by name: each release has one)
    cast, pvary = getattr(jax.lax, "pcast", None), getattr(jax.lax, "pvary", None)
    found: list[list[bool]] = []

    def to_varying(x: Any) -> Any:
        return cast(x, (name,), to="varying") if cast is not None else pvary(x, (name,))  # type: ignore[misc]

    def body(*args: Any) -> tuple:
        out = fn(*[to_varying(a) if v else a for a, v in zip(args, varying)])
        found.append([name in (varying_axes(jax.typeof(leaf)) or ()) for leaf in jax.tree_util.tree_leaves(out)])
        return ()

    mesh = make_mesh((1,), (name,))
    specs = tuple(jax.sharding.PartitionSpec() for _ in shapes)
    jax.eval_shape(_shard_map(body, mesh=mesh, in_specs=specs, out_specs=()), *shapes)  # raises what fn raises
    return found[0] if found else None
