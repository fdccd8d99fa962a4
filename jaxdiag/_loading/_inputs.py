"""Example inputs: SPEC parsing, seeded random draws, domains, and shape ladders.

One `--arg` describes one positional argument (docs/cli.md, SPEC):
- an array: `f32[2,3]`, optionally with a value domain, `f32[3]@positive`, `f32[3]@-1..0`;
- a typed PRNG key: `key[]`, `key[4]` (drawn as raw key data, wrapped into a key when the target is called);
- a static Python value, passed as-is and never batched or differentiated: `0.1`, `3`, `True`, `'mode'`, `None`,
  a dtype name (`int32`, `f32`);
- a pytree of those: `(f32[3], i32[])`, `[f32[2], 0.5]`, `{"w": f32[3,4], "b": f32[4]}`.
`parse_arg` returns a *template*: the same structure with `ArgSpec` for arrays and keys and `Static` for values.
"""

from __future__ import annotations

import ast
import enum
import re
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from .._core._errors import UsageError

# Bounds on one --arg (and on every SPEC a recording or pyproject gives), checked when it is parsed, so that a value
# no run could draw or hold is one `jaxdiag: error:` line before any check (docs/cli.md, "Bounds"):
MAX_SPEC_CHARS = 10_000  # the text of one SPEC (a pytree of many arrays fits; a pasted array does not)
MAX_SPEC_DEPTH = 32  # nesting of brackets in one SPEC (a pytree deeper than this is not an example input)
# dimensions of one array: NumPy 1 holds at most 32 and the checks add up to two batch axes (nested vmap)
MAX_RANK = 30
# elements of one example argument: 2**24 (16M; 64 MiB as f32). Values are drawn straight into the spec's own dtype
# in chunks, so drawing one example takes its own bytes plus one chunk; the checks hold a batch of examples.
MAX_ELEMENTS = 2 ** 24
_DRAW_CHUNK = 2 ** 20  # elements drawn (in float64/int64) at a time before conversion to the spec's dtype

DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}
SHORT_NAMES = {v: k for k, v in DTYPES.items()}

# Domains to draw from; the fallback order is the order of this dict after "normal".
# "spd": symmetric (Hermitian) positive-definite matrices in the last two dims of a square spec (others: normal), for
# matrix functions defined there only (square roots, Cholesky solves); tried after the elementwise domains.
# "binary": the values 0 and 1 only, for operands that are indicators (spikes, masks) carried as floats.
# "diagonal": integers at the positions 0, 1, 2, ... along their last axis (inside their range), floats positive: a
# sparse matrix's (rows, cols, values) then describe a positive diagonal, where random positions make it singular.
DOMAINS = ("normal", "positive", "unit", "small", "negative", "spd", "binary", "diagonal")
# The two ends of a bound pair (`low, high`, `x_min, x_max`): not domains of a run, but placed inside the run's domain
# apart, the lower below the upper at every entry (`in_run_domain`); normal draws put them around 0, as a clip's are.
PAIRED = ("lower", "upper")
_PAIRED_ENDS = {"positive": ("0.5..1.0", "1.5..2.5"), "negative": ("-2.5..-1.5", "-1.0..-0.5"),
                "unit": ("0.1..0.4", "0.6..0.9")}
_SPEC_RE = re.compile(r"^([a-z]+[0-9]*)\[([0-9,\s]*)\](?:@(.+))?$")
_RANGE_RE = re.compile(r"^(-?[0-9.eE+-]+)\.\.(-?[0-9.eE+-]+)$")

SPEC_HELP = (
    "expected DTYPE[DIMS] such as f32[2,3], f64[], i32[5], bool[4], bf16[8], f16[3], c64[2], u8[3] "
    "(optionally @positive, @negative, @unit, @small, @normal, @spd, @binary, @diagonal, @LO..HI, or @lower and "
    "@upper for the two ends of a bound pair, for the value domain), "
    "key[] or key[4] "
    "for a PRNG key, a Python literal (0.1, 3, True, 'mode', None, int32) for a static argument, or a pytree of "
    "these: (f32[3], i32[]), [f32[2], f32[2]], {\"w\": f32[3,4], \"b\": f32[4]}"
)


@dataclass(frozen=True)
class ArgSpec:
    """One positional argument per example: dtype, shape (no batch axis) and, optionally, a fixed domain."""

    dtype: np.dtype
    shape: tuple[int, ...]
    domain: str | None = None
    # A typed PRNG key: `dtype`/`shape` describe its raw key data (uint32, key shape + the impl's data shape), which
    # is what checks draw, batch and compare; the target receives `jax.random.wrap_key_data(data, impl=key)`.
    key: str | None = None

    def __str__(self) -> str:
        if self.key is not None:
            return f"key[{','.join(map(str, self.shape[:len(self.shape) - len(key_data_shape(self.key))]))}]"
        text = f"{SHORT_NAMES.get(self.dtype, self.dtype.name)}[{','.join(map(str, self.shape))}]"
        return f"{text}@{self.domain}" if self.domain else text

    @property
    def is_float(self) -> bool:
        return np.issubdtype(self.dtype, np.floating) or self.dtype == DTYPES["bf16"]

    @property
    def is_inexact(self) -> bool:
        return self.is_float or np.issubdtype(self.dtype, np.complexfloating)

    def with_domain(self, domain: str | None) -> "ArgSpec":
        return self if self.key is not None else ArgSpec(self.dtype, self.shape, domain)


@dataclass(frozen=True)
class Static:
    """A static argument (or pytree leaf): passed to the target as-is, never drawn, batched or differentiated."""

    value: Any

    def __str__(self) -> str:
        return static_text(self.value)


def static_text(value: Any) -> str:
    """How a static value is written as an --arg: `0.1`, `'mode'`, `int32`."""
    if isinstance(value, np.dtype):
        return SHORT_NAMES.get(value, value.name)
    if isinstance(value, type) and issubclass(value, np.generic):
        return SHORT_NAMES.get(np.dtype(value), np.dtype(value).name)
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    text = repr(value)
    if not is_literal_text(text):  # a callable, a treedef: named by type (an Enum member also by its name), so
        return f"<{type(value).__name__}{'.' + value.name if isinstance(value, enum.Enum) else ''}>"  # deterministic
    return text


def is_literal_text(text: str) -> bool:
    """Whether `parse_arg` gives the value back: a Python literal or a dtype name."""
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text in DTYPES or _extended_dtype_name(text)
    return True


def _extended_dtype_name(text: str) -> bool:
    """`float8_e4m3fn`, `int4` and the other ml_dtypes names NumPy knows once ml_dtypes is imported."""
    return named_jax_dtype(text) is not None


def is_jax_dtype(dtype: np.dtype) -> bool:
    """A dtype JAX arrays can have: bool, (u)int8..64, float16..64, complex64/128, and ml_dtypes' types (bfloat16,
    float8_*, int4...). Not object, str, bytes, void, datetime, float128 or complex256."""
    if dtype.type.__module__.split(".")[0] == "ml_dtypes":
        return True
    return dtype.kind in "biuf" and dtype.itemsize <= 8 or dtype.kind == "c" and dtype.itemsize <= 16


def named_jax_dtype(text: str) -> np.dtype | None:
    """The dtype a full dtype name spells (`int32`, `float8_e4m3fn`), when JAX has it; None for anything else:
    NumPy's one-letter codes (`O`, `f`, `d`), aliases that depend on the platform or on x64 (`float`, `int`) and
    types JAX arrays cannot have (`object`, `str`, `datetime64`, `float128`)."""
    if not text.isidentifier():
        return None
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError, SyntaxError):
        return None
    return dtype if dtype.name == text and is_jax_dtype(dtype) else None


def template_text(template: Any) -> str:
    """The --arg text of a parsed template (round-trips through `parse_arg` for literal statics)."""
    if isinstance(template, (ArgSpec, Static)):
        return str(template)
    if isinstance(template, tuple) and type(template) is tuple:
        inner = ", ".join(template_text(t) for t in template)
        return f"({inner},)" if len(template) == 1 else f"({inner})"
    if isinstance(template, list) and type(template) is list:
        return "[" + ", ".join(template_text(t) for t in template) + "]"
    if isinstance(template, dict) and type(template) is dict:
        return "{" + ", ".join(f"{k!r}: {template_text(v)}" for k, v in template.items()) + "}"
    if template is None:
        return "None"
    if isinstance(template, tuple) and hasattr(template, "_fields") and any(isinstance(t, ArgSpec) for t in template):
        # a NamedTuple of drawn arrays (`_operand_kinds.container_positions`): shown with its fields' specs
        return f"<{type(template).__name__}({', '.join(template_text(t) for t in template)})>"
    drawn = _drawn_leaves(template)
    if drawn:  # an object built around drawn arrays (`_operand_kinds`: a sparse matrix, a dataclass): its arrays
        return f"<{type(template).__name__}({', '.join(drawn)})>"
    return f"<{type(template).__name__}>"  # a custom pytree node (a NamedTuple, a Module): not expressible as text


def _drawn_leaves(template: Any) -> list[str]:
    """The specs of the drawn arrays of a custom pytree node made of arrays: one level, every child an array or a
    kept value, at most 4 drawn (a recorded Module of many layers stays `<MLP>`). Only where JAX is loaded: no
    object holds a spec otherwise."""
    import sys

    if "jax" not in sys.modules:
        return []
    import jax

    children = jax.tree_util.tree_flatten(template, is_leaf=lambda x: x is not template)[0]
    if not all(isinstance(child, (ArgSpec, Static)) for child in children):
        return []
    drawn = [str(child) for child in children if isinstance(child, ArgSpec)]
    return drawn if len(drawn) <= 4 else []


# The raw data shape of one key of JAX's built-in PRNG implementations: known here, so that parsing `key[]` in the
# CLI's process (which never imports JAX: the supervisor's parent side) needs no JAX. Another implementation is
# asked of JAX itself.
_KEY_DATA_SHAPES = {"threefry2x32": (2,), "rbg": (4,), "unsafe_rbg": (4,)}


def key_data_shape(impl: str) -> tuple[int, ...]:
    """The raw data shape of one key of this PRNG implementation (threefry2x32: (2,), rbg: (4,))."""
    if impl in _KEY_DATA_SHAPES:
        return _KEY_DATA_SHAPES[impl]
    import jax

    return tuple(jax.random.key_data(jax.random.key(0, impl=impl)).shape)


def default_key_impl() -> str:
    """JAX's default PRNG implementation: `JAX_DEFAULT_PRNG_IMPL` where JAX is not imported (it reads the same
    variable when it is), else its configuration."""
    import os
    import sys

    if "jax" not in sys.modules:
        return os.environ.get("JAX_DEFAULT_PRNG_IMPL", "threefry2x32") or "threefry2x32"
    import jax

    return str(jax.random.key_impl(jax.random.key(0)))


def key_spec(shape: tuple[int, ...], impl: str | None = None) -> ArgSpec:
    impl = impl or default_key_impl()
    return ArgSpec(np.dtype(np.uint32), tuple(shape) + key_data_shape(impl), key=impl)


# An array or key spec inside a larger expression: `f32[2,3]`, `f32[3]@positive`, `f32[3]@-1..1`, `key[4]`.
_SPEC_TOKEN_RE = re.compile(r"(?<![\w'\"])([a-z]+[0-9]*)\[([0-9,\s]*)\](?:@(-?[0-9.eE]+\.\.-?[0-9.eE]+|[a-z]+))?")


def parse_arg(text: str) -> Any:
    """Parse one --arg into a template (ArgSpec, Static, or a tuple/list/dict of them); UsageError if malformed."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"bad argument spec {text!r}: {SPEC_HELP}")
    check_spec_text(text)
    specs: dict[str, ArgSpec] = {}

    def placeholder(match: re.Match) -> str:
        name = f"__jaxdiag_spec_{len(specs)}__"
        specs[name] = _parse_one_spec(match.group(0), text)
        return name

    source = _SPEC_TOKEN_RE.sub(placeholder, text.strip())
    try:
        tree = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        raise UsageError(f"bad argument spec {_shown(text)}: {SPEC_HELP}") from None
    return _template(tree, specs, text)


def check_spec_text(text: str, what: str = "argument spec") -> None:
    """The text bounds of one SPEC or literal: length and bracket nesting (UsageError naming the bound)."""
    if len(text) > MAX_SPEC_CHARS:
        raise UsageError(f"bad {what} {_shown(text)}: {len(text)} characters, more than the bound of "
                         f"{MAX_SPEC_CHARS} (MAX_SPEC_CHARS)")
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    if deepest > MAX_SPEC_DEPTH + 1:  # the brackets of an array's shape are one level
        raise UsageError(f"bad {what} {_shown(text)}: brackets nested {deepest} deep, more than the bound of "
                         f"{MAX_SPEC_DEPTH} (MAX_SPEC_DEPTH)")


def _shown(text: str) -> str:
    """A SPEC as a message shows it: whole when short, else its start and length (one readable line)."""
    return repr(text) if len(text) <= 80 else f"{text[:60]!r}... ({len(text)} characters)"


def _parse_one_spec(token: str, text: str) -> ArgSpec:
    name = token.split("[", 1)[0]
    if name == "key":
        dims = token[4:].split("]", 1)[0].replace(" ", "")
        if "@" in token:
            raise UsageError(f"bad argument spec {text!r}: a PRNG key takes no value domain")
        parts = dims.split(",") if dims else []
        if any(p == "" for p in parts):
            raise UsageError(f"bad argument spec {text!r}: empty dimension in key[{dims}]; {SPEC_HELP}")
        shape = tuple(int(p) for p in parts)
        _check_shape(shape, np.dtype(np.uint32), token, text)
        return key_spec(shape)
    return parse_spec(token, text)


def _template(node: ast.AST, specs: dict[str, ArgSpec], text: str) -> Any:
    if isinstance(node, ast.Name):
        if node.id in specs:
            return specs[node.id]
        if node.id in DTYPES or node.id in ("bfloat16",):
            return Static(DTYPES.get(node.id, DTYPES["bf16"]))
        dtype = named_jax_dtype(node.id)
        if dtype is None:
            raise UsageError(f"bad argument spec {_shown(text)}: {_unknown_name(node.id)}; {SPEC_HELP}")
        return Static(dtype)
    if isinstance(node, ast.Tuple):
        return tuple(_template(e, specs, text) for e in node.elts)
    if isinstance(node, ast.List):
        return [_template(e, specs, text) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and type(k.value) in (str, int)):
                raise UsageError(f"bad argument spec {_shown(text)}: dict keys must be strings or ints")
            if k.value in out:
                raise UsageError(f"bad argument spec {_shown(text)}: dict key {k.value!r} given twice")
            out[k.value] = _template(v, specs, text)
        if len({type(k) for k in out}) > 1:  # JAX sorts a dict's keys to flatten it: str and int do not compare
            raise UsageError(f"bad argument spec {_shown(text)}: dict keys must be all strings or all ints "
                             f"(got {', '.join(repr(k) for k in out)})")
        return out
    try:
        return Static(ast.literal_eval(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise UsageError(f"bad argument spec {_shown(text)}: {SPEC_HELP}") from None


def _unknown_name(name: str) -> str:
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError, SyntaxError):
        return f"unknown name {name!r}"
    if is_jax_dtype(dtype):  # `f`, `float`, `int`: a NumPy alias whose meaning depends on the platform or on x64
        short = f" (or {SHORT_NAMES[dtype]})" if dtype in SHORT_NAMES else ""
        return f"{name!r} is NumPy's alias of {dtype.name}; write {dtype.name}{short}"
    return f"{name!r} is NumPy's dtype {dtype.name}, which JAX arrays cannot have"


def template_leaves(template: Any) -> list[Any]:
    """The ArgSpec and Static leaves of a template, in the order `Layout` flattens them."""
    import jax

    return jax.tree_util.tree_leaves(template, is_leaf=lambda x: isinstance(x, (ArgSpec, Static)))


def parse_spec(text: str, whole: str | None = None) -> ArgSpec:
    """Parse `f32[2,3]` (whitespace tolerated); raise UsageError naming the bad token, or the bound a shape or
    domain exceeds. `whole` is the --arg the token is part of (for the message)."""
    shown = _shown(whole if whole is not None else text or "")
    if len(text or "") > MAX_SPEC_CHARS:
        check_spec_text(text)
    cleaned = re.sub(r"\s+", "", text or "")
    match = _SPEC_RE.match(cleaned)
    if not match:
        raise UsageError(f"bad argument spec {shown}: {SPEC_HELP}")
    dtype_name, dims, domain = match.groups()
    if dtype_name not in DTYPES:
        raise UsageError(f"bad argument spec {shown}: unknown dtype {dtype_name!r}; {SPEC_HELP}")
    parts = [p for p in dims.split(",")] if dims else []
    if any(p == "" for p in parts):
        raise UsageError(f"bad argument spec {shown}: empty dimension in [{dims}]; {SPEC_HELP}")
    dtype = DTYPES[dtype_name]
    shape = tuple(int(p) for p in parts)
    _check_shape(shape, dtype, cleaned, whole if whole is not None else text)
    if domain is not None and domain not in DOMAINS + PAIRED and not _RANGE_RE.match(domain):
        raise UsageError(f"bad argument spec {shown}: unknown domain {domain!r}; {SPEC_HELP}")
    if domain is not None and _RANGE_RE.match(domain):
        if not _valid_range(domain, np.issubdtype(dtype, np.integer)):
            raise UsageError(f"bad argument spec {shown}: domain {domain!r} must be @LO..HI with numbers LO < HI")
        _check_range_fits(domain, dtype, dtype_name, shown)
    return ArgSpec(dtype, shape, domain)


def _check_shape(shape: tuple[int, ...], dtype: np.dtype, token: str, text: str) -> None:
    """Rank, dimension and element bounds of one array spec (MAX_RANK, MAX_ELEMENTS)."""
    shown = _shown(text)
    if len(shape) > MAX_RANK:
        raise UsageError(f"bad argument spec {shown}: {len(shape)} dimensions, more than the bound of {MAX_RANK} "
                         "(MAX_RANK: NumPy 1 holds 32 and the checks add up to two batch axes)")
    big = next((d for d in shape if d > MAX_ELEMENTS), None)
    if big is not None:
        raise UsageError(f"bad argument spec {shown}: dimension {big} is larger than the bound of {MAX_ELEMENTS} "
                         "elements per example argument (MAX_ELEMENTS)")
    elements = 1
    for d in shape:
        elements *= d
    if elements > MAX_ELEMENTS:
        raise UsageError(f"bad argument spec {shown}: {token} has {elements} elements "
                         f"({elements * dtype.itemsize / 2**20:.0f} MiB), more than the bound of {MAX_ELEMENTS} "
                         f"elements per example argument (MAX_ELEMENTS); use a smaller shape: the checks do not "
                         "depend on the size")


def _check_range_fits(domain: str, dtype: np.dtype, name: str, shown: str) -> None:
    """@LO..HI must lie within what the dtype holds (and, for integers, contain an integer)."""
    low, high = _domain_bounds(domain) or (0.0, 0.0)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo, hi = int(np.ceil(low)), int(np.floor(high))
        if lo > hi:
            raise UsageError(f"bad argument spec {shown}: domain {domain!r} holds no integer, and {name} draws "
                             "integers")
        top = min(int(info.max), 2 ** 63 - 2)  # integers are drawn in int64, HI inclusive
        if lo < int(info.min) or hi > top:
            raise UsageError(f"bad argument spec {shown}: domain {domain!r} is outside what {name} holds "
                             f"({int(info.min)}..{top})")
    elif dtype != np.bool_:
        component = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype
        biggest = float(ml_dtypes.finfo(component).max)
        if max(abs(low), abs(high)) > biggest:
            raise UsageError(f"bad argument spec {shown}: domain {domain!r} overflows {name}: its largest value is "
                             f"{biggest:.6g}")


def spec_of(value: Any) -> ArgSpec:
    """The spec of a concrete array (used when the API is given arrays instead of spec strings)."""
    arr = np.asarray(value)
    return ArgSpec(arr.dtype, tuple(arr.shape))


def _valid_range(domain: str, integer: bool = False) -> bool:
    try:
        low, high = _domain_bounds(domain) or (0.0, 0.0)
    except ValueError:  # the pattern admits text such as `1e..2` that is not a number
        return False
    return bool(np.isfinite(low) and np.isfinite(high) and (low <= high if integer else low < high))


def _domain_bounds(domain: str) -> tuple[float, float] | None:
    match = _RANGE_RE.match(domain)
    return (float(match.group(1)), float(match.group(2))) if match else None


def draw(spec: ArgSpec, rng: np.random.Generator, domain: str = "normal", lead: tuple[int, ...] = ()) -> np.ndarray:
    """Random values for `spec` with extra leading dims `lead` (batch elements), from `domain`."""
    if "diagonal" in (domain, spec.domain) and np.issubdtype(spec.dtype, np.integer) and spec.key is None:
        return _diagonal_positions(spec, lead)
    domain = in_run_domain(spec.domain, domain)
    shape = lead + spec.shape
    dtype = spec.dtype
    # Drawn in chunks straight into the spec's dtype: a generator's stream does not depend on how it is split, so
    # the values are those of one float64/int64 draw converted, without ever holding the whole draw in 64 bits.
    if spec.key is not None:  # raw key data: any bits are a valid key
        return _chunked(shape, np.dtype(np.uint32), lambda n: rng.integers(0, 2**32, size=n, dtype=np.uint64))
    if dtype == np.bool_:
        return _truth_values(rng, lead, spec.shape)
    if np.issubdtype(dtype, np.integer):
        low = 1 if domain in ("positive", "unit") or np.issubdtype(dtype, np.unsignedinteger) else -5
        high = 0 if domain == "negative" and not np.issubdtype(dtype, np.unsignedinteger) else 6
        bounds = (0, 1) if domain == "binary" else _domain_bounds(domain)
        if bounds:
            low, high = int(np.ceil(bounds[0])), int(np.floor(bounds[1])) + 1
        return _chunked(shape, dtype, lambda n: rng.integers(low, high, size=n))
    if np.issubdtype(dtype, np.complexfloating):
        out = np.empty(shape, dtype)
        out.real = _chunked(shape, out.real.dtype, lambda n: draw_real(rng, domain, n))
        out.imag = _chunked(shape, out.real.dtype, lambda n: draw_real(rng, domain, n))
        return positive_definite(out) if domain == "spd" and is_square(spec.shape) else out
    out = _chunked(shape, dtype, lambda n: draw_real(rng, domain, n))
    return positive_definite(out) if domain == "spd" and is_square(spec.shape) else out


def in_run_domain(declared: str | None, run: str) -> str:
    """The domain a spec is drawn from in a run on `run`: its own, an end of a bound pair as a range of `run`."""
    if declared in PAIRED:
        return _PAIRED_ENDS.get(run, ("-1.5..-0.5", "0.5..1.5"))[PAIRED.index(declared)]
    return declared or run


def _diagonal_positions(spec: ArgSpec, lead: tuple[int, ...]) -> np.ndarray:
    """0, 1, 2, ... along the last axis, wrapped inside the spec's own range, for every leading index."""
    bounds = _domain_bounds(spec.domain) if spec.domain and spec.domain != "diagonal" else None
    low = int(np.ceil(bounds[0])) if bounds else 0
    count = int(np.floor(bounds[1])) - low + 1 if bounds else (spec.shape[-1] if spec.shape else 1)
    base = low + np.arange(spec.shape[-1] if spec.shape else 1) % max(count, 1)
    return np.array(np.broadcast_to(base if spec.shape else base[0], lead + spec.shape), dtype=spec.dtype)


def _truth_values(rng: np.random.Generator, lead: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Booleans, each true with probability 1/2; with leading (batch) dims, each example has its own count of true
    flags (all, none, then counts between), at random places: `any`/`all` of an example's flags then differ between
    examples (at 1/2, `any` of a few flags is nearly always true). The same uniform numbers are drawn either way,
    so the stream of later draws does not change."""
    uniform = _chunked(lead + shape, np.dtype(np.float64), lambda n: rng.random(n))
    if not lead or not shape:
        return uniform < 0.5
    count, size = int(np.prod(lead)), int(np.prod(shape))
    rows = uniform.reshape(count, size)
    ranks = np.argsort(np.argsort(rows, axis=1), axis=1)
    spread = np.rint(np.arange(count) * size / max(count - 1, 1)).astype(int)
    ends_first = [i for pair in zip(range(count - 1, -1, -1), range(count)) for i in pair][:count]
    trues = spread[ends_first][:, None]  # all set, none set, then the counts between: any few examples differ
    return (ranks < trues).reshape(lead + shape)


def is_square(shape: tuple[int, ...]) -> bool:
    return len(shape) >= 2 and shape[-1] == shape[-2]


def positive_definite(m: np.ndarray) -> np.ndarray:
    """`M M^H / n + I` over the last two dims: Hermitian positive definite, eigenvalues at least 1, in m's dtype."""
    wide = m.astype(np.complex128 if np.iscomplexobj(m) else np.float64)
    n = m.shape[-1]
    return (wide @ np.conj(np.swapaxes(wide, -1, -2)) / n + np.eye(n)).astype(m.dtype)


def symmetric_directions(spec: ArgSpec, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """`count` random symmetric (Hermitian) directions for a square spec on the spd domain: only these keep a
    perturbed input inside it, and a function defined there (reading one triangle, symmetrising) is differentiable
    along them only."""
    out = []
    for _ in range(count):
        v = rng.standard_normal(spec.shape)
        if spec.dtype.kind == "c":
            v = v + 1j * rng.standard_normal(spec.shape)
        out.append(((v + np.conj(np.swapaxes(v, -1, -2))) / 2).astype(spec.dtype))
    return out


def _chunked(shape: tuple[int, ...], dtype: np.dtype, sample: Any) -> np.ndarray:
    """An array of `shape` and `dtype` filled from `sample(n)` (n values, any dtype) in order, a chunk at a time."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for start in range(0, flat.size, _DRAW_CHUNK):
        stop = min(start + _DRAW_CHUNK, flat.size)
        flat[start:stop] = sample(stop - start)
    return out


def needs_x64(spec: ArgSpec) -> bool:
    """A 64-bit component type: f64, i64, u64, c128 (c64 holds two float32s)."""
    itemsize = spec.dtype.itemsize // (2 if spec.dtype.kind == "c" else 1)
    return itemsize >= 8 and spec.dtype.kind in "fciu"


def draw_real(rng: "np.random.Generator", domain: str, size: "int | tuple[int, ...]") -> "np.ndarray":
    """Real values from `domain` ("positive", "negative", "unit", "small", "binary", "LO..HI", else standard normal) for
    `size` (a count or a shape). The one domain table: `--repro` scripts embed this function's source (`_repro`),
    so it uses NumPy and the standard library only, and reads no name of this module."""
    import re

    match = re.match(r"^(-?[0-9.eE+-]+)\.\.(-?[0-9.eE+-]+)$", str(domain))  # _RANGE_RE (no module names here)
    if match:
        return rng.uniform(float(match.group(1)), float(match.group(2)), size=size)
    if domain in ("positive", "diagonal"):
        return rng.uniform(0.5, 2.0, size=size)
    if domain == "negative":
        return rng.uniform(-2.0, -0.5, size=size)
    if domain == "unit":
        return rng.uniform(0.05, 0.95, size=size)
    if domain == "small":
        return 0.1 * rng.standard_normal(size)
    if domain == "binary":
        return rng.integers(0, 2, size=size).astype(float)
    return rng.standard_normal(size)


def choose_batch_size(shapes: list[tuple[int, ...]], start: int = 5) -> int:
    """A batch size equal to no dimension of any input or output, so a mislabelled axis cannot pass by accident."""
    taken = {d for shape in shapes for d in shape}
    size = start
    while size in taken:
        size += 1
    return size
