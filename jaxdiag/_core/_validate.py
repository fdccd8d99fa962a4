"""Up-front validation of the CLI's inputs, so that every bad value is one `jaxdiag: error:` line with exit 2
before any check runs: rule selectors (`--select`/`--ignore`, pyproject, inline `# jaxdiag: ignore[...]`),
the output file, the --repro folder, the files --fix rewrites, a folder given as TARGET, and `--app-dir`. No JAX
here: this runs before the engine is imported.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import sys
import tokenize
from pathlib import Path
from typing import Iterable, Iterator

from .. import _rules
from ._errors import UsageError

# The inline suppression syntax `_locate` reads (`# jaxdiag: ignore`, `# jaxdiag: ignore[CODE, ...]`, and
# `# jaxdiag: intended[CODE, ...]`, which may name warnings only).
_INLINE_RE = re.compile(r"#\s*jaxdiag:\s*(ignore|intended)(?:\[([^\]]*)\])?")
# Folders a source walk never enters (virtual environments, caches, VCS metadata).
_SKIPPED_DIRS = {"__pycache__", "node_modules", "build", "dist", "site-packages"}


def known_selector(selector: str) -> bool:
    """A rule code, a deprecated code, or a prefix of a code or of a category (`JXB`, `JXB0`, `JXN`), like ruff's
    codes: the catalog (`_rules.validate_codes`) decides, plus category prefixes that have no rules yet."""
    selector = selector.strip().upper()
    if not selector:
        return False
    return not _rules.validate_codes([selector]) or any(prefix.startswith(selector) for prefix in _rules.CATEGORIES)


def check_selectors(selectors: Iterable[str], where: str) -> None:
    """Raise UsageError naming the first unknown code; `where` says where it was written (`--select`, a file)."""
    for selector in selectors:
        if known_selector(selector):
            continue
        wanted = selector.strip().upper()
        digits = wanted[:3] + wanted[3:].replace("O", "0").replace("I", "1").replace("L", "1")  # JXB01O -> JXB010
        close = [digits] if known_selector(digits) else difflib.get_close_matches(wanted, sorted(_rules.RULES), n=1,
                                                                                  cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(f"{where}: unknown rule code or prefix {selector.strip()!r}{hint} "
                         "(`jaxdiag rules` lists them)")


def check_output(path: str | None) -> None:
    """The report file can be written: not a directory, in an existing, writable directory."""
    if path is None:
        return
    if not path or os.path.isdir(path):
        raise UsageError(f"--output {path!r} is a directory; give a file name such as report.json")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"--output {path!r}: directory {folder!r} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"--output {path!r} is not writable")


def check_repro(folder: str | None) -> None:
    """The --repro folder can be made or written: not an existing file, under a writable existing folder."""
    if folder is None:
        return
    if not folder:
        raise UsageError("--repro needs a folder name, e.g. --repro repro/")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"--repro {folder!r} is a file, not a folder; give a folder for the repro scripts")
    existing = os.path.abspath(folder)
    while not os.path.exists(existing):  # the folders --repro makes start below the nearest existing one
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"--repro {folder!r}: {existing!r} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--repro {folder!r}: folder {existing!r} is not writable")


def check_fixable(files: Iterable[Path]) -> None:
    """--fix rewrites the target's source files in place: each must be writable (checked before any check runs,
    so a read-only checkout is one line, not a run whose fixes cannot land)."""
    for path in files:
        # no write bit is read-only even for root, who may write anyway: the file's owner marked it so
        if path.is_file() and (not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222):
            raise UsageError(f"--fix: {_shown(path)} is not writable (make it writable, or use --diff to print the "
                             "fixes)")


def folder_named(module_part: str, app_dir: str) -> str | None:
    """The folder a TARGET's module part names, when it names one rather than a module: a path (`src/ops`,
    `./pkg`) to a folder, or a name whose folder has no `__init__.py` (no code of its own to hold an attribute).
    A package named as a module (`pkg:attr`, its `__init__.py`) is a module. None when it is not a folder."""
    pathlike = module_part.endswith(".py") or "/" in module_part or os.sep in module_part or \
        not all(part.isidentifier() for part in module_part.split("."))
    relative = module_part if pathlike else module_part.replace(".", os.sep)
    for base in (os.path.abspath(app_dir), os.getcwd()):
        folder = relative if os.path.isabs(relative) else os.path.join(base, relative)
        if os.path.isdir(folder) and (pathlike or not os.path.isfile(os.path.join(folder, "__init__.py"))):
            return module_part
    return None


def check_target(target: str, app_dir: str) -> None:
    """A TARGET whose module part is a folder is one line, exit 2 (its tree is neither walked nor imported)."""
    module_part, sep, _ = target.strip().rpartition(":")
    if sep and module_part and folder_named(module_part, app_dir):
        raise UsageError(f"target {target.strip()!r}: {module_part!r} is a directory; name a module "
                         "(pkg.module:attr) or a file (path/to/file.py:attr)")


def check_app_dir(app_dir: str) -> None:
    if not os.path.isdir(app_dir):
        raise UsageError(f"--app-dir {app_dir!r} is not a directory")


def jaxdiag_comments(path: str | Path) -> list[tuple[int, str]]:
    """(line, text) of every comment of a Python file that says "jaxdiag" (real comments: tokenize, so a docstring
    showing the syntax is not one); none for an unreadable or broken file (reported when it is imported)."""
    try:
        with tokenize.open(path) as handle:
            text = handle.read()
        if "jaxdiag" not in text:  # most files of a library: tokenizing them all took seconds
            return []
        return [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type == tokenize.COMMENT and "jaxdiag" in tok.string]
    except (OSError, UnicodeDecodeError, SyntaxError, tokenize.TokenError):
        return []


def inline_selectors(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, code, `ignore` or `intended`) for every code named in a `# jaxdiag: ignore[...]` or
    `# jaxdiag: intended[...]` comment of a Python file."""
    for line, comment in jaxdiag_comments(path):
        match = _INLINE_RE.search(comment)
        if match and match.group(1) == "intended" and match.group(2) is None:
            yield line, "", "intended"  # an intended marker names what is intended
        elif match and match.group(2) is not None:
            for code in match.group(2).split(","):
                yield line, code.strip(), match.group(1)


def check_inline_suppressions(files: Iterable[Path]) -> None:
    for path in files:
        for line, code, keyword in inline_selectors(path):
            if not code or not known_selector(code):
                check_selectors([code or "''"], f"{_shown(path)}:{line}: # jaxdiag: {keyword}[...]")
            if keyword == "intended":
                check_intended(code, f"{_shown(path)}:{line}")


def check_intended(code: str, where: str) -> None:
    """`# jaxdiag: intended[CODE]` names one warning rule: a deliberate reading exists only for a warning (an
    estimator, a hyperparameter, a clip); an error is wrong whatever the intent."""
    rule = _rules.RULES.get(code.strip().upper())
    if rule is None or rule.severity != "warning":
        what = f"{rule.code} is {'an' if rule.severity == 'error' else 'a'} {rule.severity}" if rule else \
            f"{code.strip()!r} is not one rule"
        raise UsageError(f"{where}: # jaxdiag: intended[{code.strip()}]: {what}; `intended` names warnings whose "
                         "deliberate reading is the right one (use `# jaxdiag: ignore[...]` to hide anything else)")


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def source_files(items: Iterable[str], app_dir: str) -> list[Path]:
    """The Python files named by TARGET module parts, file paths, folders or module names, as far as they can be
    found without importing the user's code (a package is walked as a folder). Anything not found here is left
    to the loader, which reports it."""
    found: list[Path] = []
    for item in items:
        if not item.strip():
            continue
        path = Path(item) if os.path.isabs(item) else Path(app_dir) / item
        if not path.exists() and Path(item).exists():
            path = Path(item)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(_walk(path))
        elif all(part.isidentifier() for part in item.split(".")):
            found.extend(_module_files(item, app_dir))
    return list(dict.fromkeys(p.resolve() for p in found))


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        yield from (Path(root) / f for f in sorted(files) if f.endswith(".py"))


def _module_files(name: str, app_dir: str) -> list[Path]:
    """The file (or package folder) of a dotted module name, looked up on --app-dir and sys.path without importing
    anything: validation must not run the user's code (the loader does, once)."""
    parts = name.split(".")
    for base in [os.path.abspath(app_dir), *sys.path]:
        if not base or not os.path.isdir(base):
            continue
        folder = Path(base).joinpath(*parts)
        if (folder / "__init__.py").is_file():
            return list(_walk(folder))
        module = folder.with_suffix(".py")
        if module.is_file():
            return [module]
    return []
