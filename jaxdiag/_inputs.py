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
DOMAINS = ("normal", "positive", "unit", "small", "negative")
_SPEC_RE = re.compile(r"^([a-z]+[0-9]*)\[([0-9,\s]*)\](?:@(.+))?$")
_RANGE_RE = re.compile(r"^(-?[0-9.eE+-]+)\.\.(-?[0-9.eE+-]+)$")

SPEC_HELP = (
    "expected DTYPE[DIMS] such as f32[2,3], f64[], i32[5], bool[4], bf16[8], f16[3], c64[2], u8[3] "
    "(optionally @positive, @negative, @unit, @small, @normal or @LO..HI for the value domain), key[] or key[4] "
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
    if not is_literal_text(text):  # a callable, a treedef: named by type, so reports stay deterministic
        return f"<{type(value).__name__}>"
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
    if not text.isidentifier():
        return False
    try:
        return np.dtype(text).name == text
    except TypeError:
        return False


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
    return f"<{type(template).__name__}>"  # a custom pytree node (a NamedTuple, a Module): not expressible as text


def key_data_shape(impl: str) -> tuple[int, ...]:
    """The raw data shape of one key of this PRNG implementation (threefry2x32: (2,), rbg: (4,))."""
    import jax

    return tuple(jax.random.key_data(jax.random.key(0, impl=impl)).shape)


def default_key_impl() -> str:
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
    specs: dict[str, ArgSpec] = {}

    def placeholder(match: re.Match) -> str:
        name = f"__jaxdiag_spec_{len(specs)}__"
        specs[name] = _parse_one_spec(match.group(0), text)
        return name

    source = _SPEC_TOKEN_RE.sub(placeholder, text.strip())
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        raise UsageError(f"bad argument spec {text!r}: {SPEC_HELP}") from None
    return _template(tree, specs, text)


def _parse_one_spec(token: str, text: str) -> ArgSpec:
    name = token.split("[", 1)[0]
    if name == "key":
        dims = token[4:].split("]", 1)[0].replace(" ", "")
        if "@" in token:
            raise UsageError(f"bad argument spec {text!r}: a PRNG key takes no value domain")
        parts = dims.split(",") if dims else []
        if any(p == "" for p in parts):
            raise UsageError(f"bad argument spec {text!r}: empty dimension in key[{dims}]; {SPEC_HELP}")
        return key_spec(tuple(int(p) for p in parts))
    return parse_spec(token)


def _template(node: ast.AST, specs: dict[str, ArgSpec], text: str) -> Any:
    if isinstance(node, ast.Name):
        if node.id in specs:
            return specs[node.id]
        if node.id in DTYPES or node.id in ("bfloat16",):
            return Static(DTYPES.get(node.id, DTYPES["bf16"]))
        try:
            return Static(np.dtype(node.id))
        except TypeError:
            raise UsageError(f"bad argument spec {text!r}: unknown name {node.id!r}; {SPEC_HELP}") from None
    if isinstance(node, ast.Tuple):
        return tuple(_template(e, specs, text) for e in node.elts)
    if isinstance(node, ast.List):
        return [_template(e, specs, text) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, (str, int))):
                raise UsageError(f"bad argument spec {text!r}: dict keys must be strings or ints")
            out[k.value] = _template(v, specs, text)
        return out
    try:
        return Static(ast.literal_eval(node))
    except (ValueError, SyntaxError):
        raise UsageError(f"bad argument spec {text!r}: {SPEC_HELP}") from None


def template_leaves(template: Any) -> list[Any]:
    """The ArgSpec and Static leaves of a template, in the order `Layout` flattens them."""
    import jax

    return jax.tree_util.tree_leaves(template, is_leaf=lambda x: isinstance(x, (ArgSpec, Static)))


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
    if spec.key is not None:  # raw key data: any bits are a valid key
        return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        low = 1 if domain in ("positive", "unit") or np.issubdtype(dtype, np.unsignedinteger) else -5
        high = 0 if domain == "negative" and not np.issubdtype(dtype, np.unsignedinteger) else 6
        bounds = _domain_bounds(domain)
        if bounds:
            low, high = int(np.ceil(bounds[0])), int(np.floor(bounds[1])) + 1
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
    if domain == "negative":
        return rng.uniform(-2.0, -0.5, size=shape)
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
