"""`python -m jaxdiag ...` in a subprocess with `tests/data` on PYTHONPATH: the record tests run the user's own
example programs, whose modules live there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"


def data_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(DATA)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def jaxdiag(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxdiag", *args], cwd=cwd, env=data_env(), capture_output=True,
                          text=True, timeout=600, check=False)
