"""`python -m jaxdiag ...` in a subprocess with `tests/data` on PYTHONPATH: the record tests run the user's own
example programs, whose modules live there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"


def data_env(cwd: Path | None = None) -> dict:
    """The environment with tests/data on PYTHONPATH, after the `src/` of a `project` in `cwd` (its copies win)."""
    env = dict(os.environ)
    first = [str(cwd / "src")] if cwd is not None and (cwd / "src").is_dir() else []
    env["PYTHONPATH"] = os.pathsep.join(first + [str(DATA)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def jaxdiag(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxdiag", *args], cwd=cwd, env=data_env(cwd), capture_output=True,
                          text=True, timeout=600, check=False)


def project(folder: Path, *names: str) -> Path:
    """`folder` as a user's project with copies of the data packages and modules `names` in its `src/`: a recording
    names only the modules under the project it belongs to (docs/json.md). `jaxdiag` and `data_env` put that
    `src/` first on PYTHONPATH, so the copies shadow tests/data's, and `check NAME` names modules, not folders."""
    import shutil

    src = folder / "src"
    src.mkdir(exist_ok=True)
    for name in names:
        source = DATA / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, src / name)
    return folder
