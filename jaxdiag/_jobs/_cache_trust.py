"""Where the `jaxdiag check` result cache may live, and the secret that signs its entries (`_cache`).

A folder another user owns, or one its group or others can write, is never used: whoever can write there could plant
a passing verdict. A digest anyone can recompute proves only that an entry was not damaged by accident; keyed with a
secret that never leaves this user's cache folder, it proves the entry was written by jaxdiag for this user, so a
cache folder committed to a repository, restored from another machine or edited by hand cannot mark a target
verified.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .._core._atomic import write_atomic

# An entry larger than this is not one jaxdiag wrote (a report is a few kB): not read, a miss.
MAX_ENTRY_BYTES = 64 * 1024 * 1024


def user_cache_dir() -> Path | None:
    """The per-user cache folder (XDG base directories: a relative `$XDG_CACHE_HOME` is invalid and ignored); None
    when there is no home folder to put it in (never a relative path, which would be the working folder)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "jaxdiag"
    home = os.path.expanduser("~")  # "~" itself when it cannot tell
    return Path(home) / ".cache" / "jaxdiag" if os.path.isabs(home) else None


def untrusted(root: Path) -> str | None:
    """Why an existing cache folder must not be used (None: it may): another user's folder, or one its group or
    others can write, could hold entries they planted. A folder that does not exist yet is no reason."""
    try:
        info = os.stat(root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    if os.name != "posix":  # Windows: ACLs, not these bits, say who may write (st_mode shows 0o777 for any folder)
        return None
    if info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}"
    if info.st_mode & stat.S_IWOTH:
        return "writable by others"
    if info.st_mode & stat.S_IWGRP:
        return "writable by group"
    return None


def ensure_root(root: Path) -> str | None:
    """Create the cache folder if needed (private: 0o700) with a `.gitignore` of `*` in it, as pytest's and ruff's
    caches do, so it is never committed by accident. Returns why the folder must not be used (`untrusted`), None
    when it may; raises OSError when it cannot be created (a read-only checkout)."""
    refused = untrusted(root)
    if refused is not None:
        return refused
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    refused = untrusted(root)  # created by someone else between the two looks
    if refused is not None:
        return refused
    ignore = root / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, "# Created by jaxdiag: the `jaxdiag check` result cache.\n*\n", keep_mode=False)
    return None


def read_private_file(path: Path) -> bytes | None:
    """The bytes of a regular file this user owns and only this user can write; None for anything else (missing,
    a folder, a link, a FIFO, another user's file, too large), without blocking or following links."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            return None
        if os.name == "posix" and (info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or info.st_uid != os.getuid()):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


_SECRET_BYTES = 32
_EPHEMERAL_SECRET = os.urandom(_SECRET_BYTES)  # when there is no private place to keep one


def signing_secret() -> bytes:
    """This user's cache-signing secret: `key` in the per-user cache folder, made on first use (random, 0o600, in a
    private folder). A folder that cannot hold it privately (none, another user's, group-writable, read-only) gives
    the process's own secret instead: entries then never outlive the process, which costs re-checks, never trust."""
    folder = user_cache_dir()
    if folder is None:
        return _EPHEMERAL_SECRET
    path = folder / "key"
    try:
        if ensure_root(folder) is not None:
            return _EPHEMERAL_SECRET
        stored = read_private_file(path)
        if stored is None:
            stored = _create_secret(path)
    except OSError:
        return _EPHEMERAL_SECRET
    return stored if stored is not None and len(stored) == _SECRET_BYTES else _EPHEMERAL_SECRET


def _create_secret(path: Path) -> bytes | None:
    """Write a new secret where none is; two processes racing both end up with the one that landed first (a
    finished file is linked into place, so no reader sees a half-written one)."""
    temporary = path.with_name(f".key-{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(_SECRET_BYTES))
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
    finally:
        temporary.unlink(missing_ok=True)
    return read_private_file(path)
