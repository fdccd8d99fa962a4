"""`--format issue`: for each error or warning located outside the user's project (a library in site-packages or in
any folder outside the current directory), a ready-to-file GitHub issue in Markdown: title, what happens and what
was expected, the suspected rule with file:line and its source, how to reproduce, the suggested fix, and the
versions (jax, jaxlib, the library from its installed metadata, Python, platform).

Findings in the user's own project are not issue material: one line says which, and where to see them.

Only formats a `Report` (also one rebuilt from its JSON): no JAX, no checks, no user code. The library and its
version are read from the file's path and the distribution metadata next to it (`importlib.metadata`), never by
importing the library. A plain-JAX script is embedded when the finding carries one (`repro`); otherwise the issue
gives the jaxdiag command whose `--repro DIR` writes it.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import platform
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .. import _rules as rules
from .._core._report import Finding, Report, TargetReport

# What a user of the library expects, by rule category: the "Expected" section (the finding says what happened).
EXPECTED = {
    "batching": "`jax.vmap` of the function gives the same result as applying it to each example and stacking "
                "the results, for every `in_axes`, without an error.",
    "differentiation": "The custom derivative agrees with the derivative of the function itself (JAX's autodiff "
                       "of the primal, or finite differences), and `jax.grad`/`jax.jvp`/`jax.vjp` run without an "
                       "error.",
    "registration": "The primitive works under every JAX transformation it is used with (eager call, `jit`, "
                    "`vmap`, `grad`), with output shapes and dtypes matching its abstract evaluation.",
    "custom_vmap": "The `custom_vmap` rule gives the same result as applying the function to each example.",
    "sharding": "The function gives the same result sharded as unsharded, without gathering its inputs.",
}
# The jaxdiag command that runs a category's checks on one target.
COMMANDS = {"batching": "batching", "custom_vmap": "batching", "registration": "batching",
            "differentiation": "grad", "sharding": "sharding"}
SITE_DIRS = ("site-packages", "dist-packages")
CONTEXT_LINES = 2


@dataclass(frozen=True)
class Library:
    """Where a file outside the project comes from: its top-level package, the folder holding it, and the
    installed distribution (name, version, tracker address) when metadata describes it."""

    package: str
    root: str
    distribution: str = ""
    version: str = ""
    url: str = ""

    @property
    def label(self) -> str:
        name = self.distribution or self.package
        return f"{name} {self.version}" if self.version else name


def render(report: Report) -> str:
    outside: list[tuple[TargetReport, Finding]] = []
    inside: list[Finding] = []
    for target in report.targets:
        for finding in target.findings:
            if finding.severity not in ("error", "warning") or finding.location is None:
                continue
            if is_outside_project(finding.location.path):
                outside.append((target, finding))
            else:
                inside.append(finding)
    parts = [_issue(report, target, finding, n, len(outside)) for n, (target, finding) in enumerate(outside, 1)]
    if not outside:
        parts.append("No error or warning is located outside this project: nothing to file upstream.\n")
    if inside:
        where = ", ".join(f"{f.location} {f.code}" for f in inside if f.location)
        parts.append(f"Not issue material: {len(inside)} finding(s) in your own project ({where}); fix them here "
                     "(`--format text` shows them).\n")
    return "\n---\n\n".join(parts)


def is_outside_project(path: str) -> bool:
    """A file not under the current directory (the project, as for every relative path of a report), or one in an
    installed-packages folder even under it (a `.venv` inside the project)."""
    absolute = os.path.abspath(path)
    root = os.path.abspath(os.getcwd())
    if os.path.commonpath([absolute, root]) != root:
        return True
    return any(part in SITE_DIRS for part in Path(os.path.relpath(absolute, root)).parts)


def library_of(path: str) -> Library:
    """The top-level package holding `path` (the outermost folder with an `__init__.py`; a lone module is its own
    package) and, from the `*.dist-info`/`*.egg-info` metadata beside it or the installed distributions, its name
    and version."""
    file = Path(os.path.abspath(path))
    top = file.with_suffix("") if file.name != "__init__.py" else file.parent
    folder = file.parent
    while (folder / "__init__.py").is_file():
        top, folder = folder, folder.parent
    package = top.name
    found = _distribution_beside(folder, package) or _installed_distribution(package)
    if found is None:
        return Library(package, str(folder))
    return Library(package, str(folder), found.metadata["Name"] or package, found.version, _tracker(found))


def _distribution_beside(folder: Path, package: str) -> metadata.Distribution | None:
    try:
        candidates = sorted(list(folder.glob("*.dist-info")) + list(folder.glob("*.egg-info")))
    except OSError:
        return None
    for info in candidates:
        dist = metadata.PathDistribution(info)
        tops = (dist.read_text("top_level.txt") or "").split()
        listed = {Path(f).parts[0] for f in (dist.files or []) if Path(f).parts}
        if package in tops or package in listed:
            return dist
    return None


def _installed_distribution(package: str) -> metadata.Distribution | None:
    names = _packages_distributions().get(package, [])
    for name in names:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
    return None


@functools.lru_cache(maxsize=1)
def _packages_distributions() -> Mapping[str, list[str]]:
    """Top-level package -> distributions, read once (it scans every installed distribution)."""
    return metadata.packages_distributions()


def _tracker(dist: metadata.Distribution) -> str:
    """The distribution's issue tracker: a Project-URL named like one, else its GitHub/GitLab address + /issues."""
    urls = [value.partition(",")[::2] for value in dist.metadata.get_all("Project-URL") or []]
    for label, url in urls:
        if re.search(r"issue|bug|tracker", label, re.I):
            return url.strip()
    for url in [u for _, u in urls] + [dist.metadata["Home-page"] or ""]:
        match = re.match(r"\s*(https://(?:github|gitlab)\.com/[^/\s]+/[^/\s#?]+)", url)
        if match:
            return match.group(1).removesuffix(".git") + "/issues"
    return ""


def _issue(report: Report, target: TargetReport, finding: Finding, n: int, total: int) -> str:
    assert finding.location is not None
    loc = finding.location
    lib = library_of(loc.path)
    rule = rules.rule(finding.code)
    try:
        where = os.path.relpath(os.path.abspath(loc.path), lib.root)
    except ValueError:  # another drive on Windows
        where = loc.path
    # the message's headline ("Batch dim out of range: ..."), else the rule's name when it has none that short
    headline = re.split(r":\s|\.\s", finding.message.strip(), maxsplit=1)[0].strip().rstrip(".")
    if len(headline) > 80:
        headline = finding.name.replace("-", " ")
    out = [f"<!-- jaxdiag --format issue {n}/{total}: file at {lib.url or 'the tracker of ' + lib.label} -->",
           f"## {lib.package}: {headline[:1].lower() + headline[1:]} in `{loc.function}`", ""]
    out += ["### What happens", "", finding.message.strip(), ""]
    out += ["### Expected", "", EXPECTED.get(rule.category, rule.summary), ""]
    out += ["### Where", "", f"`{where}:{loc.line}` in `{loc.function}` ({lib.label}). "
            f"jaxdiag's rule {finding.code} `{finding.name}` ({finding.severity}): {rule.summary}", ""]
    excerpt = _excerpt(loc.path, loc.line)
    if excerpt:
        out += ["```python", excerpt, "```", ""]
    out += ["### Reproduce", ""] + _reproduce(target, finding) + [""]
    if finding.fix or finding.diff:
        out += ["### Suggested fix", ""]
        if finding.fix:
            out += [finding.fix.strip(), ""]
        if finding.diff:
            out += ["```diff", finding.diff.rstrip("\n"), "```", ""]
        if finding.fix_verified:
            out += ["(jaxdiag re-ran its checks on a patched copy: the defect is gone and nothing new appears.)", ""]
    out += ["### Versions", "", "| | |", "|---|---|"]
    out += [f"| {name} | {value} |" for name, value in _versions(report, lib)]
    out += ["", f"<sub>Found by [jaxdiag](https://pypi.org/project/jaxdiag/) {report.jaxdiag_version or __version__}"
            f" ({finding.code} {finding.name}).</sub>", ""]
    return "\n".join(out)


def _excerpt(path: str, line: int) -> str:
    """The suspected lines with their numbers, the faulty one marked; empty when the file cannot be read."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    if not 1 <= line <= len(lines):
        return ""
    first, last = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    width = len(str(last))
    return "\n".join(f"{'>' if k == line else ' '} {k:>{width}} | {lines[k - 1]}" for k in range(first, last + 1))


def _reproduce(target: TargetReport, finding: Finding) -> list[str]:
    script = getattr(finding, "repro", "")  # a plain-JAX script the finding carries (no jaxdiag import)
    if script:
        return ["Plain JAX, no jaxdiag; it fails while the defect is there:", "", "```python", script.rstrip(),
                "```"]
    rule = rules.rule(finding.code)
    command = COMMANDS.get(rule.category, "batching")
    subject = target.target.partition(" > ")[0]
    words = ["jaxdiag", command, subject] + [w for spec in target.inputs for w in ("--arg", spec)]
    words += ["--select", finding.code, "--repro", "repro/"]
    nested = target.target.partition(" > ")[2]
    via = f" (through `{subject}`, which calls `{nested}`)" if nested else ""
    inputs = ", ".join([*target.inputs, *target.keywords])  # the keywords: options its own error asked for
    return [f"<!-- reporter: `{subject.partition(':')[0]}` is your code; run the command, then paste the script it "
            "writes here (it imports the library's own module where it can) -->",
            f"Found with jaxdiag on the example inputs {inputs or '(none)'}{via}. This command "
            "reports it and writes a plain-JAX script that fails the same way (`repro/"
            f"{finding.code.lower()}_*.py`, no jaxdiag needed to run it):", "",
            "```console", "pip install jaxdiag", " ".join(shlex.quote(w) for w in words), "```"]


def _versions(report: Report, lib: Library) -> list[tuple[str, str]]:
    rows = [("jax", report.jax_version or _version("jax")), ("jaxlib", _version("jaxlib"))]
    rows.append((lib.distribution or lib.package, lib.version or "unknown (no installed metadata found)"))
    rows += [("Python", platform.python_version()), ("platform", platform.platform()),
             ("jaxdiag", report.jaxdiag_version or __version__)]
    return rows


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"
