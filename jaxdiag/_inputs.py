"""Example inputs: SPEC parsing (`f32[2,3]@positive`), seeded random draws, domains, and shape ladders."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterator

import ml_dtypes
import numpy as np

from ._errors import UsageError

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
DOMAINS = ("normal", "positive", "unit", "small")
_SPEC_RE = re.compile(r"^([a-z]+[0-9]*)\[([0-9,\s]*)\](?:@(.+))?$")
_RANGE_RE = re.compile(r"^(-?[0-9.eE+-]+)\.\.(-?[0-9.eE+-]+)$")

SPEC_HELP = (
    "expected DTYPE[DIMS] such as f32[2,3], f64[], i32[5], bool[4], bf16[8], f16[3], c64[2], u8[3] "
    "(optionally @positive, @unit, @small, @normal or @LO..HI for the value domain)"
)


@dataclass(frozen=True)
class ArgSpec:
    """One positional argument per example: dtype, shape (no batch axis) and, optionally, a fixed domain."""

    dtype: np.dtype
    shape: tuple[int, ...]
    domain: str | None = None

    def __str__(self) -> str:
        text = f"{SHORT_NAMES.get(self.dtype, self.dtype.name)}[{','.join(map(str, self.shape))}]"
        return f"{text}@{self.domain}" if self.domain else text

    @property
    def is_float(self) -> bool:
        return np.issubdtype(self.dtype, np.floating) or self.dtype == DTYPES["bf16"]

    @property
    def is_inexact(self) -> bool:
        return self.is_float or np.issubdtype(self.dtype, np.complexfloating)

    def with_domain(self, domain: str | None) -> "ArgSpec":
        return ArgSpec(self.dtype, self.shape, domain)


def parse_spec(text: str) -> ArgSpec:
    """Parse `f32[2,3]` (whitespace tolerated); raise UsageError naming the bad token."""
    cleaned = re.sub(r"\s+", "", text or "")
    match = _SPEC_RE.match(cleaned)
    if not match:
        raise UsageError(f"bad argument spec {text!r}: {SPEC_HELP}")
    dtype_name, dims, domain = match.groups()
    if dtype_name not in DTYPES:
        raise UsageError(f"bad argument spec {text!r}: unknown dtype {dtype_name!r}; {SPEC_HELP}")
    parts = [p for p in dims.split(",")] if dims else []
    if any(p == "" for p in parts):
        raise UsageError(f"bad argument spec {text!r}: empty dimension in [{dims}]; {SPEC_HELP}")
    shape = tuple(int(p) for p in parts)
    if domain is not None and domain not in DOMAINS and not _RANGE_RE.match(domain):
        raise UsageError(f"bad argument spec {text!r}: unknown domain {domain!r}; {SPEC_HELP}")
    if domain is not None and _RANGE_RE.match(domain) and not _valid_range(domain):
        raise UsageError(f"bad argument spec {text!r}: domain {domain!r} must be @LO..HI with numbers LO < HI")
    return ArgSpec(DTYPES[dtype_name], shape, domain)


def spec_of(value: Any) -> ArgSpec:
    """The spec of a concrete array (used when the API is given arrays instead of spec strings)."""
    arr = np.asarray(value)
    return ArgSpec(arr.dtype, tuple(arr.shape))


def _valid_range(domain: str) -> bool:
    try:
        low, high = _domain_bounds(domain) or (0.0, 0.0)
    except ValueError:  # the pattern admits text such as `1e..2` that is not a number
        return False
    return bool(np.isfinite(low) and np.isfinite(high) and low < high)


def _domain_bounds(domain: str) -> tuple[float, float] | None:
    match = _RANGE_RE.match(domain)
    return (float(match.group(1)), float(match.group(2))) if match else None


def draw(spec: ArgSpec, rng: np.random.Generator, domain: str = "normal", lead: tuple[int, ...] = ()) -> np.ndarray:
    """Random values for `spec` with extra leading dims `lead` (batch elements), from `domain`."""
    domain = spec.domain or domain
    shape = lead + spec.shape
    dtype = spec.dtype
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        low = 1 if domain in ("positive", "unit") or np.issubdtype(dtype, np.unsignedinteger) else -5
        bounds = _domain_bounds(domain)
        if bounds:
            low, high = int(np.ceil(bounds[0])), int(np.floor(bounds[1])) + 1
        else:
            high = 6
        return rng.integers(low, high, size=shape).astype(dtype)
    real = _draw_real(rng, domain, shape)
    if np.issubdtype(dtype, np.complexfloating):
        real = real + 1j * _draw_real(rng, domain, shape)
    return np.asarray(real).astype(dtype)


def _draw_real(rng: np.random.Generator, domain: str, shape: tuple[int, ...]) -> np.ndarray:
    bounds = _domain_bounds(domain)
    if bounds:
        return rng.uniform(bounds[0], bounds[1], size=shape)
    if domain == "positive":
        return rng.uniform(0.5, 2.0, size=shape)
    if domain == "unit":
        return rng.uniform(0.05, 0.95, size=shape)
    if domain == "small":
        return 0.1 * rng.standard_normal(shape)
    return rng.standard_normal(shape)


def parse_literal(text: str, what: str) -> Any:
    """A Python literal, a dtype name (`int32`, `f32`), or raise UsageError."""
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    if text in DTYPES:
        return DTYPES[text]
    try:
        return np.dtype(text)
    except TypeError:
        pass
    if text in ("bfloat16",):
        return DTYPES["bf16"]
    raise UsageError(f"bad {what} value {text!r}: expected a Python literal (1, 2.5, (0, 1), 'name', True) or a "
                     "dtype name")


def parse_param(text: str) -> tuple[str, Any]:
    """`NAME=VALUE` for a primitive's bind parameter."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"bad --param {text!r}: expected NAME=VALUE, e.g. --param axis=1 or --param dtype=int32")
    return name.strip(), parse_literal(value, f"--param {name.strip()}")


def parse_axes(text: str | None, option: str) -> Any:
    """`--in-axes 0,None` / `(0, None)` / `[0, None]` / `1`: an int, None, or a tuple/list of them."""
    if text is None:
        return None
    stripped = text.strip()
    if not stripped:
        raise UsageError(f"bad {option} {text!r}: expected an int, None, or a comma-separated list like 0,None")
    source = stripped if stripped[0] in "([" or "," not in stripped else f"({stripped},)"
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError):
        raise UsageError(f"bad {option} {text!r}: expected an int, None, or a comma-separated list like "
                         "0,None") from None

    def ok(v: Any) -> bool:
        if isinstance(v, (tuple, list)):
            return all(ok(x) for x in v)
        return v is None or (isinstance(v, int) and not isinstance(v, bool))

    if not ok(value):
        raise UsageError(f"bad {option} {text!r}: every axis must be an int or None")
    return value


SHAPE_LADDER: tuple[tuple[tuple[int, ...], ...], ...] = (
    ((3,),), ((),), ((2, 3),), ((3, 3),), ((2, 3, 4),),
)
PAIR_LADDER: tuple[tuple[tuple[int, ...], ...], ...] = (((2, 3), (3, 4)), ((3,), ()), ((), (3,)))


def shape_ladder(arity: int) -> Iterator[list[ArgSpec]]:
    """Candidate float32 inputs for a target of `arity` positional arguments, simplest first."""
    f32 = DTYPES["f32"]
    for (shape,) in SHAPE_LADDER:
        yield [ArgSpec(f32, shape) for _ in range(arity)]
    if arity == 2:
        for pair in PAIR_LADDER:
            yield [ArgSpec(f32, s) for s in pair]


def choose_batch_size(shapes: list[tuple[int, ...]], start: int = 5) -> int:
    """A batch size equal to no dimension of any input or output, so a mislabelled axis cannot pass by accident."""
    taken = {d for shape in shapes for d in shape}
    size = start
    while size in taken:
        size += 1
    return size
