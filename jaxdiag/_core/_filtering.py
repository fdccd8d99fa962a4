"""The one place findings are filtered: `--select`/`--ignore`, per-target ignores and inline suppressions.

Checks and the engine always see every finding: control flow never depends on what the user suppressed, so
suppressing a code never skips a later check. Filtering happens once, at the end of a run, here; the single-target
commands (`batching`, `grad`, the Python API) and `jaxdiag check` use the same `Filter`. Per-target ignores are
matched by glob against every name configuration may use for a target. Blocking problems (an import failure,
jaxdiag's own internal error) are not findings: nothing here can hide them.

Order, for every finding: inline `# jaxdiag: ignore[...]` comments first (so a comment is recorded as used even
when `--select` would also have dropped the finding; otherwise `--select JXB` would make every JXG comment look
unused), then per-target ignores, then `--select`/`--ignore`.
"""

from __future__ import annotations

import fnmatch
import linecache
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from . import _locate, _provenance
from .. import _rules as rules
from ._errors import UsageError
from ._validate import check_intended, jaxdiag_comments
from ._report import Finding, Location, Report, TargetReport

_NAME_RE = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)|^\s*(\w+)\s*(?::[^=]*)?=")

InlineUse = tuple[str, int, str]  # (absolute path, line, selector as written)


def check_codes(codes: Sequence[str], where: str) -> list[str]:
    """`codes` upper-cased; a code that names no rule is a usage error (exit 2) naming `where` it was written."""
    unknown = rules.validate_codes(codes)
    if unknown:
        raise UsageError(f"unknown rule code{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))} in {where} "
                         "(see `jaxdiag rules` for the codes and prefixes)")
    return [c.strip().upper() for c in codes if c.strip()]


class Filter:
    """One run's filtering settings and what they suppressed (for the unused-suppression notes)."""

    def __init__(self, select: Sequence[str] = (), ignore: Sequence[str] = (),
                 per_target_ignores: Mapping[str, Sequence[str]] | None = None,
                 allow_unchecked: Mapping[str, str] | None = None) -> None:
        select = check_codes(select, "--select")
        ignore = check_codes(ignore, "--ignore")
        per_target = {k: check_codes(v, f"per-target-ignores[{k!r}]") for k, v in (per_target_ignores or {}).items()}
        self.select, used = rules.normalize_codes(select)
        self.ignore, used_ignore = rules.normalize_codes(ignore)
        self.per_target = per_target
        self.deprecated_used: list[str] = list(dict.fromkeys(used + used_ignore + [
            c for codes in per_target.values() for c in rules.normalize_codes(codes)[1]]))
        self.used_inline: set[InlineUse] = set()
        self.used_config: set[tuple[str, str]] = set()
        self.matched_keys: set[str] = set()
        self.allow_unchecked = dict(allow_unchecked or {})  # glob -> the reason the user gave

    # -- applying ----------------------------------------------------------------------------------------------

    def apply(self, report: Report) -> Report:
        """Grade findings by their inputs' provenance (`_provenance`), then filter every target's findings in
        place (and sort them); returns the report. Coverage is judged first, on the unfiltered findings: `--ignore
        JXN` hides the note that a target had no inputs, never the fact. Blocking rules (a crash, an exit, a time
        limit) are never filtered."""
        _provenance.grade(report)
        for target in report.targets:
            mark_coverage(target)
            if target.unverified and not target.allowed:
                target.allowed = self._allowed(target)
            if target.kind in ("module", "config"):
                target.findings = [f for f in target.findings if _blocking(f) or not self._run_note_silenced(f)]
            else:
                target.findings = [f for f in target.findings if _blocking(f) or not self._suppressed(f, target)]
            target.findings.sort(key=Finding.sort_key)
        return report

    def _allowed(self, target: TargetReport) -> str:
        """The reason of the first `allow-unchecked` entry naming this target (by glob), else ""."""
        keys = [target.target, *target.config_keys]
        return next((reason for pattern, reason in self.allow_unchecked.items()
                     if any(fnmatch.fnmatchcase(key, pattern) for key in keys)), "")

    def _suppressed(self, finding: Finding, target: TargetReport) -> bool:
        if suppressed_inline(finding, target.anchors, self.used_inline):
            return True
        if _stated_intended(finding, target):
            return True
        hits = [(pattern, code) for pattern, code in self._per_target_codes(target.config_keys)
                if rules.matches(finding.code, [code])]
        if hits:
            self.used_config.update(hits)
            return True
        return self.deselected(finding)

    def _run_note_silenced(self, finding: Finding) -> bool:
        """Notes about a module or the configuration. An unused-suppression note is silenced only by a comment
        naming its code (a bare `# jaxdiag: ignore` must not hide the report that it is itself unused)."""
        if finding.code == rules.UNUSED_SUPPRESSION.code:
            named, _ = rules.normalize_codes(sorted((_locate.inline_ignores(finding.location) or set()) - {"*"}))
            silenced = rules.UNUSED_SUPPRESSION.code in named
        else:
            silenced = suppressed_inline(finding, (), self.used_inline)
        return silenced or self.deselected(finding)

    def deselected(self, finding: Finding) -> bool:
        return bool((self.select and not rules.matches(finding.code, self.select))
                    or (self.ignore and rules.matches(finding.code, self.ignore)))

    def _per_target_codes(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for pattern, codes in self.per_target.items():
            if any(fnmatch.fnmatchcase(key, pattern) for key in keys):
                self.matched_keys.add(pattern)
                out.extend((pattern, c) for c in codes)
        return out

    # -- notes about the filtering itself -----------------------------------------------------------------------

    def deprecation_notes(self, location: Location | None = None) -> list[Finding]:
        """One JXN006 note per deprecated code the settings used."""
        return [deprecation_note(code, location) for code in self.deprecated_used]

    def unused_config(self, source: str, report_stale_keys: bool) -> list[Finding]:
        """Per-target-ignores entries that suppressed nothing (and, when `report_stale_keys`, keys that matched no
        target at all)."""
        out = []
        for pattern, codes in self.per_target.items():
            location = config_key_location(source, pattern)
            if pattern not in self.matched_keys:
                if report_stale_keys:
                    out.append(rules.UNUSED_SUPPRESSION.finding(
                        suppression=f"per-target-ignores key {pattern!r}",
                        where=" (it matches no target found in the configured paths)",
                        action="Use a key of the form `package.module:attr` or `path/file.py:attr` (globs allowed, "
                               "e.g. `pkg.mod:*`), as printed in the report, or remove it.",
                        location=location))
                continue
            unused = [c for c in codes if (pattern, c) not in self.used_config]
            if unused:
                out.append(rules.UNUSED_SUPPRESSION.finding(
                    suppression=f"per-target-ignores[{pattern!r}] entry {', '.join(unused)}", where="",
                    action=f"Remove {', '.join(unused)} from per-target-ignores[{pattern!r}] in pyproject.toml.",
                    location=location))
        return out


def _blocking(finding: Finding) -> bool:
    known = rules.RULES.get(finding.code)
    return bool(known and known.blocking)


def _stated_intended(finding: Finding, target: TargetReport) -> bool:
    """A finding of a rule whose deliberate reading the code's documentation may state (`Rule.stated_intent`: a
    surrogate derivative, a batch-wide statistic) on a rule whose docstring or leading comment, or its target
    function's, or (for a primitive) a binding wrapper's, states it: as `# jaxdiag: intended[...]` there
    (`_documented`; the catalog's texts are loaded once a finding exists)."""
    known = rules.RULES.get(finding.code)
    if known is None or not known.stated_intent:
        return False
    from ._documented import binding_functions, stated_deliberate

    wrappers = [w for a in target.anchors for w in binding_functions(a)] if target.kind == "primitive" else []
    return stated_deliberate([finding.location, *target.anchors, *wrappers], known.stated_intent) is not None


def mark_coverage(target: TargetReport) -> None:
    """Why `target` was not verified, from its unfiltered findings, problems and checks ("" when it was): a
    finding whose rule leaves its target unverified (a crash, a time limit, no inputs), an internal error, an
    import failure, or (for a target) no check that ran to a verdict on what the rule computes (a source scan's
    pass is none: a rule whose every other check skipped was verified by nothing)."""
    if target.unverified:
        return
    for finding in target.findings:
        known = rules.RULES.get(finding.code)
        if known is not None and known.leaves_unverified:
            target.unverified = known.leaves_unverified
            return
    if target.internal_errors:
        target.unverified = "internal-error"
    elif any(p.kind == "import-failed" for p in target.problems):
        target.unverified = "import-failed"
    elif target.counted and not any(c.status == "failed" or (c.status == "passed" and not c.static)
                                    for c in target.checks):
        target.unverified = "no-check-ran"


def deprecation_note(code: str, location: Location | None = None) -> Finding:
    new = rules.DEPRECATED.get(code) if code in rules.DEPRECATED else rules.DEPRECATED_PREFIXES.get(code)
    if new is None:
        return rules.DEPRECATED_CODE.finding(
            old=code, meaning=": import failures are no longer a rule, they always fail the run and cannot be "
                              "ignored", action=f"Remove {code}.", location=location)
    return rules.DEPRECATED_CODE.finding(old=code, meaning=f" for {new}", action=f"Write {new} instead of {code}.",
                                         location=location)


def suppressed_inline(finding: Finding, anchors: Sequence[Location] = (), used: set[InlineUse] | None = None
                      ) -> bool:
    """True when `# jaxdiag: ignore[...]` on the finding's line, or on an anchor line, names its code.

    Anchors are the target's own line (`my_p = Primitive("my")`, the `def` of a custom_vjp function): findings
    located at one of its rules can be silenced there too. The comment that matched is recorded in `used`.
    """
    lines = [finding.location, *anchors]
    for loc in dict.fromkeys(loc for loc in lines if loc is not None):
        inline = _locate.inline_ignores(loc)
        if not inline:
            continue
        hit = "*" if "*" in inline else next((c for c in sorted(inline) if rules.matches(finding.code, [c])), None)
        if hit is None:
            continue
        if used is not None:
            used.add((os.path.abspath(loc.path), loc.line, hit))
        return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# Inline comments: validation before a run, unused ones after it
# ---------------------------------------------------------------------------------------------------------------


def suppression_lines(path: str) -> Iterator[int]:
    """Lines holding a real `# jaxdiag: ignore` comment (tokenize: not text inside strings)."""
    for line, _ in jaxdiag_comments(path):
        yield line


def validate_inline(path: str) -> None:
    """A `# jaxdiag: ignore[CODE]` naming no rule is a usage error (exit 2), reported before any check runs."""
    label = _posix(_locate.relative_path(path))
    for line in suppression_lines(path):
        location = Location(path, line, "")
        codes = _locate.inline_ignores(location) or set()
        keyword = _locate.inline_keyword(location)
        check_codes(sorted(codes - {"*"}), f"`# jaxdiag: {keyword}[...]` at {label}:{line}")
        if keyword == "intended":
            for code in sorted(codes):
                check_intended(code, f"{label}:{line}")


def unused_inline(path: str, used: set[InlineUse], unchecked: set[tuple[str, int]]) -> list[Finding]:
    """JXN005 notes for the comments in `path` that suppressed nothing (lines of targets that were not fully
    checked are skipped: nothing can be said about them)."""
    full = os.path.abspath(path)
    out = []
    for line in suppression_lines(path):
        if (full, line) in unchecked:
            continue
        location = Location(_posix(_locate.relative_path(path)), line, "")
        codes = _locate.inline_ignores(location)
        if not codes:
            continue
        unused = sorted(c for c in codes if (full, line, c) not in used)
        if not unused:
            continue
        match = _NAME_RE.match(linecache.getline(path, line))
        name = (match.group(1) or match.group(2)) if match else "<module>"
        location = Location(location.path, line, name)
        if "*" in unused:
            suppression, action = "`# jaxdiag: ignore`", "Remove the comment."
        else:
            listed = ", ".join(unused)
            suppression = f"`# jaxdiag: {_locate.inline_keyword(location)}[{listed}]`"
            action = "Remove the comment." if len(unused) == len(codes) else f"Remove {listed} from the comment."
        out.append(rules.UNUSED_SUPPRESSION.finding(suppression=suppression, where=" on this line", action=action,
                                                    location=location))
    return out


def config_key_location(source: str, key: str) -> Location:
    """The pyproject.toml line that names a per-target-ignores key (line 1 when it cannot be found)."""
    label = _posix(_locate.relative_path(source))
    try:
        lines = Path(source).read_text(encoding="utf-8").splitlines()
    except OSError:
        return Location(label, 1, "per-target-ignores")
    inside = False
    for number, text in enumerate(lines, start=1):
        if "per-target-ignores" in text:
            inside = True
        if inside and (f'"{key}"' in text or f"'{key}'" in text or text.strip().startswith(f"{key} ")):
            return Location(label, number, "per-target-ignores")
    return Location(label, 1, "per-target-ignores")


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")
