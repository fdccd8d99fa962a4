"""What `--diff`, `--fix` and `--repro DIR` do with a finished report (the CLI calls `deliver`; no checks here).

- `--diff` (text format): stdout is the patch of every verified fix and nothing else (empty when there is none), so
  `jaxdiag ... --diff > fix.patch && git apply fix.patch` works; a summary goes to stderr, and the CLI draws the text
  report on stderr too (`_cli._emit`, at the terminal's width), as `ruff format --diff` splits them. Other formats
  carry each verified fix in the finding's `diff` field.
- `--fix`: writes the verified fixes (like `ruff --fix`); the fixed findings leave the report, since re-running the
  checks on the edited code showed them gone.
- `--repro DIR`: one plain-JAX script per error or warning, written only once it has been run and seen to fail on
  the module as it is (and to pass on the fixed copy when the finding has a verified fix); for each finding without
  a script, stderr says why.
"""

from __future__ import annotations

import sys

from .._core._report import Report


def deliver(report: Report, fmt: str, output: str | None, diff: bool = False, fix: bool = False,
            repro: str | None = None) -> bool:
    """Carry out the options; True when the output is complete (the caller only exits), False to render."""
    from .. import _fixes

    if repro:
        from .._evidence import _repro

        written, skipped = _repro.write_verified(report, repro, _fixes.fixed_sources)
        _say(f"wrote {len(written)} repro script(s) to {repro}, each run first: it fails on the module as it is"
             " (and passes once a verified fix is applied)")
        for finding, reason in skipped:
            where = f" at {_rel(finding.location.path)}:{finding.location.line}" if finding.location else ""
            _say(f"no repro script for {finding.code}{where}: {reason}")
    fixes = _fixes.verified_fixes(report)
    unverified = [f for f in report.findings if f.fix_verified is False]
    patch = _fixes.combined_diff(fixes) if (diff or fix) and fixes else ""
    if fix and fixes:
        paths = _fixes.write_fixes(fixes)
        fixed = {id(f) for t in report.targets for f in t.findings if f.verified_fix is not None}
        for target in report.targets:
            target.findings = [f for f in target.findings if id(f) not in fixed]
        _say(f"fixed {len(fixed)} finding(s) in {len(paths)} file(s): {', '.join(_rel(p) for p in paths)}")
    if unverified:
        _say(f"{len(unverified)} finding(s) have a fix jaxdiag could not verify; it stays text in the report")
    if diff and fmt == "text":
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(patch)
        else:
            sys.stdout.write(patch)
            sys.stdout.flush()
        _say(f"{len(fixes)} verified fix(es)" + ("" if patch else "; nothing to apply"))
        return True
    return False


def _say(text: str) -> None:
    sys.stderr.write(f"jaxdiag: {text}\n")


def _rel(path: str) -> str:
    from .._core._locate import relative_path

    return relative_path(path)
