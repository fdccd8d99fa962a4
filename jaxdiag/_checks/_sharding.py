"""Sharding checks on a virtual CPU mesh (`jaxdiag sharding`): jit with sharded inputs against the unsharded
result (JXS001), custom_partitioning callbacks spied on under the partitioner (JXS002, JXS006), and the gathering
cost of opaque user calls read off the partitioned HLO (JXS005).

These checks run only in the child process `jaxdiag._mesh._sharding_child` starts with
`--xla_force_host_platform_device_count`, never inside `jaxdiag check`'s own process: they are not in
`ALL_CHECKS`. The Shardy rule and shard_map checks live in `_sharding_rules.py`.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .._core import _locate
from .. import _rules as rules
from .._compat import _sharding as cs
from .._loading._inputs import ArgSpec
from .._loading._numerics import Comparison, compare
from .._core._report import Finding, Location
from ._base import Check, Context, Options, SkipCheck, Subject, check
from .._harness.boundary import call_user, jaxdiag_code

MESH_AXIS_NAMES = ("a", "b", "c", "d")


@dataclass
class ShardingOptions(Options):
    command: str = "sharding"
    mesh: tuple[int, ...] = (2, 4)
    max_placements: int = 12  # input shardings tried per subject (replicated first, then one dimension at a time)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return MESH_AXIS_NAMES[: len(self.mesh)]


def sharding_options(ctx: Context) -> ShardingOptions:
    """The sharding child's options (a `ShardingOptions`: mesh, placements), typed for the sharding checks."""
    options = ctx.options
    if not isinstance(options, ShardingOptions):  # a sharding check only ever runs in the sharding child
        raise TypeError(f"sharding checks need ShardingOptions, got {type(options).__name__}")
    return options


_MESHES: dict[tuple[int, ...], Any] = {}


def mesh_of(options: Options) -> Any:
    shape = tuple(getattr(options, "mesh", (2, 4)))
    if shape not in _MESHES:
        _MESHES[shape] = cs.make_mesh(shape, MESH_AXIS_NAMES[: len(shape)])
    return _MESHES[shape]


def describe_mesh(options: Options) -> str:
    shape = tuple(getattr(options, "mesh", (2, 4)))
    return " x ".join(f"{n}={s}" for n, s in zip(MESH_AXIS_NAMES, shape)) + f" ({int(np.prod(shape))} CPU devices)"


def show_spec(spec: Any) -> str:
    """`P(None, 'b')`, the same on every JAX (reprs differ across releases)."""
    parts = []
    for entry in tuple(spec):
        if entry is None:
            parts.append("None")
        elif isinstance(entry, (tuple, list)):
            parts.append("(" + ", ".join(repr(e) for e in entry) + ("," if len(entry) == 1 else "") + ")")
        else:
            parts.append(repr(entry))
    return "P(" + ", ".join(parts) + ")"


# ---------------------------------------------------------------------------------------------------------------
# Input placements
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """One sharding per array argument."""

    specs: tuple[Any, ...]
    sharded_dims: tuple[tuple[int, int], ...] = ()  # (argument, dimension) pairs sharded here
    out_spec: Any = None  # the result's sharding requested with jit's out_shardings (GSPMD's propagate callback)

    def describe(self, arg_specs: Sequence[ArgSpec]) -> str:
        if len(self.specs) == 1:
            text = f"input {show_spec(self.specs[0])}"
        else:
            text = ", ".join(f"argument {i} {show_spec(s)}" for i, s in enumerate(self.specs))
        return text + (f" and the result constrained to {show_spec(self.out_spec)}" if self.out_spec else "")

    @property
    def short(self) -> str:
        return " ".join(show_spec(s) for s in self.specs) + (f" -> {show_spec(self.out_spec)}" if self.out_spec
                                                             else "")

    @property
    def sharded(self) -> bool:
        return bool(self.sharded_dims) or self.out_spec is not None


def placements(specs: Sequence[ArgSpec], mesh: tuple[int, ...], names: tuple[str, ...], limit: int
               ) -> list[Placement]:
    """Replicated; each dimension of each argument over each mesh axis (and over all axes at once); every
    argument on its leading dimension together; two dimensions of one argument over two axes. Deterministic,
    at most `limit`, the single-dimension ones first since they name the dimension at fault."""
    sizes = dict(zip(names, mesh))
    total = int(np.prod(mesh))

    def place(entries: dict[tuple[int, int], Any]) -> Placement:
        out = []
        for i, spec in enumerate(specs):
            dims = [entries.get((i, d)) for d in range(len(spec.shape))]
            out.append(P(*dims))
        return Placement(tuple(out), tuple(sorted(entries)))

    found = [place({})]
    singles, combos = [], []
    for i, spec in enumerate(specs):
        for d, n in enumerate(spec.shape):
            for name in names:
                if sizes[name] > 1 and n % sizes[name] == 0:
                    singles.append(place({(i, d): name}))
            if len(names) > 1 and total > 1 and n % total == 0:
                combos.append(place({(i, d): tuple(names)}))
        if len(names) > 1:
            for d1, n1 in enumerate(spec.shape):
                for d2, n2 in enumerate(spec.shape):
                    if d1 != d2 and n1 % sizes[names[0]] == 0 and n2 % sizes[names[1]] == 0 and sizes[names[1]] > 1:
                        combos.append(place({(i, d1): names[0], (i, d2): names[1]}))
    if len(specs) > 1 and all(s.shape and s.shape[0] % sizes[names[0]] == 0 for s in specs):
        combos.insert(0, place({(i, 0): names[0] for i in range(len(specs))}))
    for p in singles + combos:
        if p not in found:
            found.append(p)
    return found[:limit]


# ---------------------------------------------------------------------------------------------------------------
# Running jit on sharded inputs (shared by the checks of one subject)
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class CallbackRecord:
    """One call of a custom_partitioning callback during compilation."""

    name: str  # "partition", "infer_sharding_from_operands" or "propagate_user_sharding"
    arg_shardings: list[Any]
    requested: list[Any]  # result shardings the partitioner asked `partition` for
    returned: list[Any]  # what the callback returned
    error: BaseException | None = None


@dataclass
class Run:
    placement: Placement
    outputs: list[np.ndarray] | None = None
    hlo: str = ""
    error: BaseException | None = None
    callbacks: list[CallbackRecord] = field(default_factory=list)


def _shardings(tree: Any) -> list[Any]:
    return [getattr(leaf, "sharding", leaf) for leaf in jax.tree_util.tree_leaves(
        tree, is_leaf=lambda x: hasattr(x, "sharding") or isinstance(x, jax.sharding.Sharding))]


def _spy(records: list[CallbackRecord]) -> Any:
    def wrap(name: str, original: Any) -> Any:
        def spy(*args: Any) -> Any:
            with jaxdiag_code("the partition-callback spy"):  # its failure is jaxdiag's, never the callback's
                arg_shapes, result_shape = (args[-2], args[-1]) if len(args) > 2 else ((), args[-1])
                arg_sh = _shardings(arg_shapes)
                requested = _shardings(result_shape) if name == "partition" else []
            called = call_user(original, *args)
            if called.error is not None:  # the user's callback raised: recorded, then re-raised into XLA
                with jaxdiag_code("the partition-callback spy"):
                    records.append(CallbackRecord(name, arg_sh, requested, [], called.error))
                raise called.error
            result = called.value
            with jaxdiag_code("the partition-callback spy"):
                returned = _shardings(result[2]) if name == "partition" and isinstance(result, tuple) and len(
                    result) == 4 else _shardings(result)
                records.append(CallbackRecord(name, arg_sh, requested, returned))
            return result

        vars(spy)["__wrapped__"] = original
        return spy

    return wrap


def reference_outputs(ctx: Context) -> list[np.ndarray]:
    """The subject on the example, unsharded (one device), as float64-comparable NumPy leaves."""
    if ctx.cache.sharding.reference is None:
        called = call_user(ctx.call, *ctx.example())
        ctx.cache.sharding.reference = called.error if called.error is not None else [
            np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(called.value)]
    ref = ctx.cache.sharding.reference
    if isinstance(ref, BaseException):  # a note, never a silent pass: nothing was compared
        raise SkipCheck(f"{ctx.subject.name} raised on one device on the example inputs "
                        f"({', '.join(map(str, ctx.specs)) or 'none'}), so nothing can be compared under sharding: "
                        f"{type(ref).__name__}: {str(ref).splitlines()[0] if str(ref) else ''}; pass the inputs it "
                        "expects with --arg", note=True, location=ctx.subject.location)
    return ref


def _fresh_call(subject: Subject) -> Any:
    def call(*args: Any) -> Any:
        return subject.call(*args)

    return call


def _compile_and_run(fn: Any, placed: list[Any], out: Any = None) -> tuple[str, list[np.ndarray]]:
    """Compile jit(fn) for these placed arguments (the partitioner calls the user's callbacks here), run it."""
    compiled = (jax.jit(fn) if out is None else jax.jit(fn, out_shardings=out)).lower(*placed).compile()
    out = compiled(*placed)
    return compiled.as_text() or "", [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)]


def sharded_runs(ctx: Context, shardy: bool = False) -> list[Run]:
    """jit of the subject compiled and run for every placement (cached per subject); `shardy` partitions with
    Shardy even where this JAX defaults to GSPMD (empty when it cannot)."""
    forced = shardy and not cs.uses_shardy()  # Shardy where this JAX defaults to GSPMD: its own runs
    runs = ctx.cache.sharding.runs
    if forced not in runs:
        with cs.shardy_partitioner() if forced else contextlib.nullcontext(True) as on:
            runs[forced] = _sharded_runs(ctx) if on else []
    return runs[forced]


def _sharded_runs(ctx: Context) -> list[Run]:
    options = sharding_options(ctx)
    mesh = mesh_of(options)
    example = ctx.example()
    partitioned = ctx.subject.obj if ctx.subject.kind == "custom_partitioning" else None
    runs = []
    found = placements(ctx.specs, tuple(options.mesh), options.axis_names, options.max_placements)
    for placement in found + _constrained(ctx, partitioned):
        run = Run(placement)
        placed = [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(example, placement.specs)]
        spying = cs.spy_partition_callbacks(partitioned, _spy(run.callbacks)) if partitioned is not None \
            else contextlib.nullcontext()
        with spying:
            fresh = _fresh_call(ctx.subject)  # a new function per placement: a new trace carries the spies
            out = NamedSharding(mesh, placement.out_spec) if placement.out_spec is not None else None
            called = call_user(_compile_and_run, fresh, placed, out)
            if called.error is not None:
                run.error = called.error
            else:
                run.hlo, run.outputs = called.value
        runs.append(run)
    return runs


def _constrained(ctx: Context, partitioned: Any) -> list[Placement]:
    """Under GSPMD, a custom_partitioning op with a `propagate_user_sharding` callback is also compiled with
    replicated inputs and its (single) result constrained to its leading dimension sharded over the first mesh
    axis: that is when GSPMD calls the callback. Shardy never calls it."""
    if partitioned is None or cs.uses_shardy() or cs.partition_parts(partitioned).propagate is None:
        return []
    reference = reference_outputs(ctx)
    options = sharding_options(ctx)
    first = options.axis_names[0]
    size = dict(zip(options.axis_names, options.mesh))[first]
    if len(reference) != 1 or not np.ndim(reference[0]) or np.shape(reference[0])[0] % size or size < 2:
        return []
    return [Placement(tuple(P() for _ in ctx.specs), (), P(first, *(None,) * (np.ndim(reference[0]) - 1)))]


# ---------------------------------------------------------------------------------------------------------------
# JXS001 / JXS002 / JXS006
# ---------------------------------------------------------------------------------------------------------------


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _callback(ctx: Context, name: str) -> Any:
    parts = cs.partition_parts(ctx.subject.obj)
    return {"partition": parts.partition, "infer_sharding_from_operands": parts.infer,
            "propagate_user_sharding": parts.propagate}.get(name)


def callback_location(ctx: Context, name: str = "partition") -> Location | None:
    """The `def` line of the custom_partitioning callback at fault (the subject's location for other kinds)."""
    if ctx.subject.kind != "custom_partitioning":
        return ctx.subject.location
    fn = _callback(ctx, name)
    return (_locate.locate(fn) if fn is not None else None) or ctx.subject.location


def callback_name(ctx: Context, name: str) -> str:
    fn = _callback(ctx, name)
    return str(getattr(_locate.unwrap(fn), "__name__", name)) if fn is not None else name


def worst(outputs: list[np.ndarray], reference: list[np.ndarray]) -> tuple[int, Comparison] | None:
    for k, (got, want) in enumerate(zip(outputs, reference)):
        cmp = compare(got, want)
        if not cmp.ok and not cmp.nonfinite:
            return k, cmp
    return None


@check("sharded-results", "sharding", {"custom_partitioning", "function", "primitive", "custom_jvp", "custom_vjp"})
def sharded_results(ctx: Context) -> Iterator[Finding]:
    """JXS001 (and JXS006 for a callback that raised) over every placement."""
    reference = reference_outputs(ctx)
    runs = sharded_runs(ctx)
    subject = ctx.subject
    if not any(run.placement.sharded for run in runs) and subject.parent is None:
        yield rules.CHECK_SKIPPED.finding(
            reason=f"no dimension of {', '.join(map(str, ctx.specs))} divides an axis of mesh "
                   f"{describe_mesh(ctx.options)}, so only the replicated placement ran: nothing was checked under "
                   "sharding; pass --arg with dimensions divisible by the mesh axes (e.g. --arg f32[8,16] on a 2x4 "
                   "mesh), or choose a --mesh that divides them",
            check="sharded-results", location=subject.location)
    failing: list[tuple[Run, str]] = []
    passing: list[Run] = []
    for run in runs:
        raised = [r for r in run.callbacks if r.error is not None]
        if raised:
            rec = raised[0]
            yield rules.PARTITION_CALLBACK_RAISED.finding(
                evidence=f"`{callback_name(ctx, rec.name)}` (the `{rec.name}` callback of {subject.name}) raised "
                f"for {run.placement.describe(ctx.specs)} on mesh {describe_mesh(ctx.options)} (arguments "
                f"{', '.join(map(str, ctx.specs))}): {first_line(rec.error)}",  # type: ignore[arg-type]
                fix=f"Make `{callback_name(ctx, rec.name)}` handle every sharding of its operands (including "
                    f"{run.placement.short}): read `arg_shapes[i].sharding.spec` and return shardings for it, "
                    "replicating the dimensions the op cannot split.",
                location=callback_location(ctx, rec.name))
            return
        if run.error is not None:
            if "Mismatch in result shapes" in str(run.error):
                continue  # JXS002 reports the lowered function's result against its declared sharding
            failing.append((run, f"raised {first_line(run.error)}"))
            continue
        differs = worst(run.outputs or [], reference)
        if differs is None:
            passing.append(run)
        else:
            k, cmp = differs
            output = f"output {k}: " if len(reference) > 1 else ""
            failing.append((run, f"{output}{cmp.describe()}"))
    if not failing:
        return
    run, what = failing[0]
    agree = ", ".join(r.placement.short for r in passing[:4]) or "no placement"
    dims = sorted({d for r, _ in failing for d in r.placement.sharded_dims if len(r.placement.sharded_dims) == 1})
    others = f" ({len(failing) - 1} more input sharding(s) fail the same way)" if len(failing) > 1 else ""
    message = (f"jit({subject.name}) with {run.placement.describe(ctx.specs)} on mesh {describe_mesh(ctx.options)} "
               f"(arguments {', '.join(map(str, ctx.specs))}) differs from the unsharded result: {what}{others}. "
               f"It agrees with the unsharded result for: {agree}.")
    yield rules.SHARDED_RESULT_MISMATCH.finding(evidence=message, fix=_mismatch_fix(ctx, dims),
                                                location=callback_location(ctx))


def _mismatch_fix(ctx: Context, dims: list[tuple[int, int]]) -> str:
    where = ", ".join(f"dimension {d} of argument {i}" for i, d in dims) or "the sharded dimensions"
    if ctx.subject.kind != "custom_partitioning":
        return (f"{ctx.subject.name} is not correct when {where} is sharded; give the op a `custom_partitioning` "
                "rule that replicates that dimension, or constrain its input with "
                "`jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(...)))` so that dimension is whole.")
    parts = cs.partition_parts(ctx.subject.obj)
    name = getattr(parts.partition, "__name__", "partition")
    i, d = dims[0] if dims else (0, 0)
    rule_note = (" In the `sharding_rule`, list that dimension's factor in `need_replication_factors` (or give the "
                 "result a new factor) so Shardy stops passing it through.") if cs.uses_shardy() else ""
    return (f"In `{name}` (and `infer_sharding_from_operands`), replicate {where} before lowering, since the op "
            f"mixes values along it: `spec = P(*(None if k == {d} else s for k, s in "
            f"enumerate(arg_shapes[{i}].sharding.spec)))` and return `NamedSharding(mesh, spec)` as that argument's "
            f"sharding and the result's.{rule_note}")


def same_sharding(a: Any, b: Any, ndim: int) -> bool:
    try:
        return bool(a.is_equivalent_to(b, ndim))
    except (AttributeError, TypeError, ValueError):  # not a jax Sharding (a user's odd return value)
        return getattr(a, "spec", a) == getattr(b, "spec", b)


_COLLECTIVE = re.compile(r"\b(all-gather|all-to-all|collective-permute|all-reduce)(-start)?\(")
_DEFINITION = re.compile(r"^\s*(?:ROOT\s+)?%([\w.-]+)\s*=\s*(.*?)\s+([\w-]+)\((.*)$")
_ARRAY = re.compile(r"\b([a-z]+[0-9]*)\[([0-9,]*)\]")
_ITEMSIZE = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
             "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


def _has_collective(hlo: str) -> bool:
    return bool(_COLLECTIVE.search(hlo))


def _array_bytes(text: str) -> tuple[int, str]:
    """Bytes and the shape text of the (last) array type in an HLO type string, `c64[4,16]{1,0}` -> 512."""
    found = _ARRAY.findall(text)
    if not found:
        return 0, ""
    dtype, dims = found[-1]
    n = int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
    return n * _ITEMSIZE.get(dtype, 4), f"{dtype}[{dims}]"


@dataclass(frozen=True)
class Moved:
    """What the collectives of one partitioned program move, per device."""

    per_device: int  # bytes each device receives
    parts: tuple[str, ...]  # "all-gather c64[4,4] -> c64[4,16]"

    def describe(self, devices: int) -> str:
        return (f"{fmt_bytes(self.per_device)} received per device and call ({'; '.join(self.parts[:3])}"
                f"{'; ...' if len(self.parts) > 3 else ''}), {fmt_bytes(self.per_device * devices)} over the "
                f"{devices} devices")


def moved_bytes(hlo: str) -> Moved:
    """The bytes the collectives in partitioned HLO text move per device: an all-gather receives its result less
    its own operand, an all-to-all, collective-permute or all-reduce exchanges its operand."""
    shapes: dict[str, str] = {}
    total, parts = 0, []
    for line in hlo.splitlines():
        m = _DEFINITION.match(line)
        if m is None:
            continue
        name, result_type, op, rest = m.groups()
        shapes[name] = result_type
        kind = op[:-6] if op.endswith("-start") else op
        if kind not in ("all-gather", "all-to-all", "collective-permute", "all-reduce"):
            continue
        operand = re.match(r"\s*(?:[^%)]*\s)?%([\w.-]+)", rest)
        in_bytes, in_shape = _array_bytes(shapes.get(operand.group(1), "")) if operand else (0, "")
        out_bytes, out_shape = _array_bytes(result_type)
        got = max(out_bytes - in_bytes, 0) if kind == "all-gather" else (in_bytes or out_bytes)
        total += got
        parts.append(f"{kind} {in_shape or '?'} -> {out_shape}")
    return Moved(total, tuple(parts))


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


CHECKS: list[Check] = [sharded_results]


def subject_for_partitioned_call(parent: Subject, obj: Any, specs: list[ArgSpec], static: dict[int, Any],
                                 is_root: bool = False) -> Subject:
    """A custom_partitioning op as a subject: the target itself (`is_root`) or a call found inside `parent`."""
    parts = cs.partition_parts(obj)
    label_name = getattr(parts.fun, "__name__", "custom_partitioning")
    location = _locate.locate(parts.partition) if parts.partition is not None else _locate.locate(parts.fun)
    return Subject(label=parent.label if is_root else f"{parent.label} > {label_name}", kind="custom_partitioning",
                   obj=obj, specs=specs, location=location, module=parent.module,
                   parent=None if is_root else parent, domain=parent.domain, static_args=static)
