"""Whole-or-nothing file writes: a temporary file in the target's own folder, then `os.replace`.

A reader (another `jaxdiag check`, an editor, the user's test run) sees the old file or the new one, never half of
one, and a crash or a full disk mid-write leaves the old file in place. The temporary file must be in the same
folder: `os.replace` is atomic only within one file system.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, durable: bool = False,
                 keep_mode: bool = True) -> None:
    """Replace `path` by `data` (text is written as UTF-8, newlines untouched).

    `keep_mode`: an existing file keeps its permission bits (the temporary file starts as 0o600, which would make a
    fixed source file private). A symlink is followed, so the file it points to is replaced and the link stays.
    `durable`: flush to disk before the rename, so a power loss cannot leave an empty file (the user's source);
    the result cache skips it, a torn entry there is just a miss."""
    target = os.path.realpath(os.fspath(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = None
    if keep_mode:
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(os.stat(target).st_mode)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.",
                               suffix=".tmp")
    replaced = False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
        replaced = True
    finally:
        if not replaced:  # whatever stopped the write (a full disk, Ctrl-C), no temporary file is left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)
