"""Compile `ffi_kernels.cc` with the system C++ compiler on first import and register its XLA FFI targets.

Used by the JXB020-JXB022 samples. The shared library is cached in the temp directory, keyed by a hash of the kernel
source and of the installed JAX FFI headers, so only the first import compiles (about 2 s with g++ -O2).

    CumsumRows   cumulative sum along the last axis of every row: batch-aware
    CumsumFlat   cumulative sum over the whole buffer as one row: correct per example, not batch-aware
    AddBias      x + bias, elementwise: requires x and bias to have the same number of elements
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import jax

SOURCE = Path(__file__).resolve().with_suffix(".cc")
TARGETS = ("CumsumRows", "CumsumFlat", "AddBias")
CACHE_DIR = Path(tempfile.gettempdir()) / "jaxdiag-ffi-samples"


class CompilerNotFound(RuntimeError):
    """No C++ compiler on PATH (set CXX to point at one)."""


def compiler() -> str | None:
    """The C++ compiler to use: $CXX, else g++, c++ or clang++ from PATH."""
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def _cache_key(include_dir: Path) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    for header in ("api.h", "ffi.h", "c_api.h"):  # a different jaxlib means a different FFI ABI: rebuild
        path = include_dir / "xla" / "ffi" / "api" / header
        digest.update(path.read_bytes() if path.is_file() else header.encode())
    return digest.hexdigest()[:16]


def build() -> Path:
    """The compiled library, built into CACHE_DIR unless an up-to-date one is there already."""
    include_dir = Path(jax.ffi.include_dir())
    library = CACHE_DIR / f"ffi_kernels-{_cache_key(include_dir)}.so"
    if library.is_file():
        return library
    cxx = compiler()
    if cxx is None:
        raise CompilerNotFound(f"no C++ compiler found (tried $CXX, g++, c++, clang++) to build {SOURCE.name}")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    partial = library.with_suffix(f".{os.getpid()}.tmp")  # concurrent builds each write their own file
    command = [cxx, "-shared", "-fPIC", "-std=c++17", "-O2", f"-I{include_dir}", str(SOURCE), "-o", str(partial)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"compiling {SOURCE.name} failed ({' '.join(command)}):\n{result.stderr[-3000:]}")
    os.replace(partial, library)  # atomic: a concurrent reader sees no half-written library
    return library


def register() -> None:
    """Load the library and register every target for the CPU platform (registering twice is harmless)."""
    library = ctypes.cdll.LoadLibrary(str(build()))
    for name in TARGETS:
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, name)), platform="cpu")


register()
