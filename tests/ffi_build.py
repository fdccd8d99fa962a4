"""Compile `samples/ffi_kernels.cc` with the system C++ compiler and register its XLA FFI targets, for the tests
of the JXB020-JXB022 samples (the samples call the targets by name and never build anything themselves).

The library is built into `build/ffi-kernels/` under the repository, a folder only the current user can write
(mode 0700; a temp folder of our own when that is not possible), keyed by a hash of the kernel source and of the
installed JAX FFI headers, so only the first run compiles (about 2 s with g++ -O2).

    CumsumRows   cumulative sum along the last axis of every row: batch-aware
    CumsumFlat   cumulative sum over the whole buffer as one row: correct per example, not batch-aware
    AddBias      x + bias, elementwise: requires x and bias to have the same number of elements

`python tests/ffi_build.py` builds and prints the library's path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "samples" / "ffi_kernels.cc"
TARGETS = ("CumsumRows", "CumsumFlat", "AddBias")
_registered = False


class CompilerNotFound(RuntimeError):
    """No C++ compiler on PATH (set CXX to point at one)."""


def compiler() -> str | None:
    """The C++ compiler to use: $CXX, else g++, c++ or clang++ from PATH."""
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def build_dir() -> Path:
    """A folder only this user can write: build/ffi-kernels, else a fresh private temp folder."""
    folder = ROOT / "build" / "ffi-kernels"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = folder.stat()
        if info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return folder
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="jaxdiag-ffi-"))


def _cache_key(include_dir: Path) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    for header in ("api.h", "ffi.h", "c_api.h"):  # a different jaxlib means a different FFI ABI: rebuild
        path = include_dir / "xla" / "ffi" / "api" / header
        digest.update(path.read_bytes() if path.is_file() else header.encode())
    return digest.hexdigest()[:16]


def build() -> Path:
    """The compiled library, built unless an up-to-date one is there already."""
    include_dir = Path(jax.ffi.include_dir())
    folder = build_dir()
    library = folder / f"ffi_kernels-{_cache_key(include_dir)}.so"
    if library.is_file():
        return library
    cxx = compiler()
    if cxx is None:
        raise CompilerNotFound(f"no C++ compiler found (tried $CXX, g++, c++, clang++) to build {SOURCE.name}")
    partial = library.with_suffix(f".{os.getpid()}.tmp")  # concurrent builds each write their own file
    command = [cxx, "-shared", "-fPIC", "-std=c++17", "-O2", f"-I{include_dir}", str(SOURCE), "-o", str(partial)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"compiling {SOURCE.name} failed ({' '.join(command)}):\n{result.stderr[-3000:]}")
    os.replace(partial, library)  # atomic: a concurrent reader sees no half-written library
    return library


def register() -> None:
    """Load the library and register every target for the CPU platform, once per process."""
    global _registered
    if _registered:
        return
    library = ctypes.cdll.LoadLibrary(str(build()))
    for name in TARGETS:
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, name)), platform="cpu")
    _registered = True


if __name__ == "__main__":
    print(build())
