"""Which platforms a primitive can run on here: its registered lowerings, and whether an error is a platform's (or
came from host code outside JAX).

A GPU kernel (a Pallas or Triton kernel, a lowering registered with `platform="cuda"`) cannot run on a CPU-only
machine; its rules (abstract eval, batching, JVP, transpose) can still be traced without running it.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from jax._src.interpreters import mlir as _mlir

# Modules whose frames in a traceback mean the error came from a GPU/TPU kernel's machinery, not from the rule.
_KERNEL_MODULES = ("jax._src.pallas", "jax.experimental.pallas", "jax_triton", "jax._src.tpu_custom_call",
                   "jaxlib.mosaic", "jax._src.triton", "jaxlib.triton")
_KERNEL_PATHS = tuple("/" + m.replace(".", "/") for m in _KERNEL_MODULES)
# What JAX says when a primitive has no lowering for the platform it is compiled for, or a kernel that only
# compiles elsewhere is compiled on CPU; and what XLA says when a custom call's FFI target has no handler on this
# platform (a GPU build's target, registered only for CUDA: "No FFI handler registered for X on a platform Host";
# before jaxlib 0.6, "No registered implementation for FFI custom call to X for Host").
_PLATFORM_MESSAGES = ("not found for platform", "only interpret mode is supported on cpu",
                      "cannot lower pallas_call on cpu", "only supported on gpu", "only supported on tpu",
                      "requires a gpu", "requires gpu", "no ffi handler registered for",
                      "no registered implementation for ffi custom call to",
                      "no registered implementation for custom call to")
# What Python says when a module a kernel's backend needs (a JIT compiler for CPU kernels, a vendor library) is not
# installed: the kernel cannot be built here either, whatever wrapper exception the library raises around it.
_MISSING_BACKEND_MESSAGES = ("no module named",)
_ACCELERATORS = frozenset({"cuda", "rocm", "gpu", "tpu"})


def lowering_platforms(prim: Any) -> frozenset[str]:
    """The platforms `prim` has a lowering for: `{"*"}` for a platform-independent one."""
    if prim in getattr(_mlir, "_lowerings", {}):
        return frozenset({"*"})
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    return frozenset(platform for platform, table in per_platform.items() if prim in table)


def accelerator_only_lowering(prim: Any, platform: str = "cpu") -> frozenset[str]:
    """The accelerator platforms `prim` lowers for when it has no lowering for `platform` (empty otherwise)."""
    have = lowering_platforms(prim)
    if not have or "*" in have or platform in have:
        return frozenset()
    return frozenset(have & _ACCELERATORS) or frozenset(have)


def is_platform_error(exc: BaseException) -> bool:
    """The error comes from a GPU/TPU kernel's machinery (Pallas, Triton, Mosaic), says the platform lacks a
    lowering, or says a module the kernel's backend needs is missing: running the kernel here is impossible, which
    says nothing about its rules."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current).lower()
        if any(m in text for m in _PLATFORM_MESSAGES + _MISSING_BACKEND_MESSAGES):
            return True
        for frame in traceback.extract_tb(current.__traceback__):
            path = frame.filename.replace("\\", "/")
            if any(p in path for p in _KERNEL_PATHS):
                return True
        current = current.__cause__ or current.__context__
    return False


_JAX_PATHS = ("/jax/", "/jaxlib/")


def raised_by_host_code(exc: BaseException) -> bool:
    """The error was raised by code running on host values rather than by JAX's tracing or compilation: its
    innermost frame lies outside JAX (a check in a primitive's impl, NumPy or SciPy there). An error JAX reports
    for a callback (a host function that raised, `equinox.error_if`) is raised inside JAX and does not count: on
    one library, taking such a refusal for a domain let a check run whose reference took minutes and 17 GB to
    compile."""
    if type(exc).__module__.split(".")[0] in ("jax", "jaxlib"):  # JaxRuntimeError & co.: raised by JAX itself
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    innermost = frames[-1].filename.replace("\\", "/") if frames else "<>"
    return not innermost.startswith("<") and not any(p in innermost for p in _JAX_PATHS)


def raised_by_kernel(exc: BaseException) -> bool:
    """The error is a foreign kernel's (an `ffi_call` handler, a custom call) refusing its operands at run time:
    JAX's runtime error carrying the handler's status ("FAILED_PRECONDITION: matrix not positive definite"), not a
    callback's (a host function that raised, `equinox.error_if`: see `raised_by_host_code`)."""
    text = str(exc)
    # XLA's own "Failed to decode all FFI handler operands" is a dtype or rank the handler was not written for
    return (type(exc).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and bool(re.match(r"^[A-Z_]+: ", text))
            and not re.search(r"callback|failed to decode", text, re.IGNORECASE))


# What JAX raises when traced code needs a concrete value (NumPy on a tracer, a Python `if` or `int()` on one).
_CONCRETE_VALUE_ERRORS = ("TracerArrayConversionError", "ConcretizationTypeError", "TracerBoolConversionError",
                          "TracerIntegerConversionError")


def is_callback_failure(exc: BaseException) -> bool:
    """The error is XLA's report of a host callback (`jax.pure_callback`, `io_callback`) whose Python function
    raised: "INTERNAL: CpuCallback error calling callback: Traceback ..." (the function's own error is its last
    line), or on older jaxlib (0.5) "INTERNAL: CpuCallback error: TypeError: ..."."""
    text = str(exc)
    return type(exc).__module__.split(".")[0] in ("jax", "jaxlib") and (
        "error calling callback" in text or "CpuCallback error:" in text or "GpuCallback error:" in text)


_EMBEDDED_TRACEBACK = "Traceback (most recent call last):"


def callback_error_line(lines: list[str]) -> str:
    """The first of an error message's `lines` ("" for none), with a host callback's embedded traceback header
    replaced by the error the callback raised (the traceback's last line): XLA reports a failed callback as
    "INTERNAL: CpuCallback error calling callback: Traceback (most recent call last):" followed by the text."""
    first = lines[0] if lines else ""
    if first.endswith(_EMBEDDED_TRACEBACK) and len(lines) > 1 and not lines[-1].startswith(" "):
        return first[: -len(_EMBEDDED_TRACEBACK)] + lines[-1].strip()
    return first


def needs_concrete_values(exc: BaseException) -> bool:
    """The error is JAX refusing to give traced code a concrete value: the code runs eagerly, not under a trace."""
    return type(exc).__name__ in _CONCRETE_VALUE_ERRORS
