"""A plain module, not a package: `__path__` is its own global, the folder it reads templates from."""

from pathlib import Path

__path__ = Path(__file__).parent


def template(name: str) -> Path:
    return __path__ / name
