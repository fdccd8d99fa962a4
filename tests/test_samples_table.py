"""`jaxdiag check samples/<file>` reports exactly the codes in `tests/expected_codes.py`, at the lines the samples
mark with `# jaxdiag-expect: CODE`, and the table itself says what the samples promise: every `<code>_bad.py`
reports its rule at the catalog's severity, every `_good.py` no error, no warning and not its rule.

Running every sample is the slow tier; the fast tier runs one bad/good pair per rule family."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jax
import pytest
from expected_codes import (
    EXPECTED,
    EXPECTED_BY_JAX,
    WHY_BY_JAX,
    differences,
    expected_for,
    location_differences,
    observed,
    sample_files,
    sample_run,
    SAMPLES,
)

import jaxdiag

ROOT = Path(__file__).resolve().parent.parent
HINT = "if the change is intended, regenerate the table and review its diff: python -m tests.expected_codes --update"


# One bad/good pair per family (and a seed question) stays in the fast tier; the rest is the slow tier.
FAST = {"jxb004_bad.py", "jxb004_good.py", "jxg011_bad.py", "jxg011_good.py", "jxr003_bad.py", "jxr003_good.py",
        "jxv002_bad.py", "jxv002_good.py", "seed_batching_published.py"}


def _params(names):
    """The samples as parameters, those outside FAST marked `slow` (the one marker every tier decision uses)."""
    return [pytest.param(name, marks=[] if name in FAST else [pytest.mark.slow]) for name in names]


@pytest.fixture()
def kernels_for(request):
    """The JXB02x samples call the compiled FFI kernels (skipped without a C++ compiler)."""
    def need(name):
        if name.startswith("jxb02"):
            request.getfixturevalue("ffi_kernels")
    return need


# One test per sample reads one run of it (`sample_run`, once per process): two tests of the same sample could land
# in the two xdist workers and run it twice.
@pytest.mark.parametrize("name", _params(sample_files()))
def test_sample_reports_the_expected_codes_at_the_marked_lines_and_restores_jax(name, kernels_for):
    """The codes of the table; each error and warning at its marked line; JAX's whole state (every config option,
    every rule registry, the patchable classes, the sample's objects: tests/jax_state.py, not jaxdiag's own
    snapshot) as before the run; and the text report at 60 columns with every marked faulty line shown whole."""
    kernels_for(name)
    lines = differences(name, expected_for(name), observed(name))
    assert not lines, "\n".join(lines + [HINT])
    # JXS markers are reported by `jaxdiag sharding` (tests/test_sharding.py checks them there), not by `check`.
    lines = [] if name.startswith("jxs") else location_differences(name)
    assert not lines, "\n".join(lines)
    report, leaks = sample_run(name)
    assert not leaks, f"samples/{name}: the run left JAX's state changed: {leaks}"
    if name.endswith("_bad.py"):
        _fits_60_columns(name, report)
        _docs_table_rows_say_what_this_run_says(name, report)


def _fits_60_columns(name, report):
    """What `COLUMNS=60 jaxdiag check samples/<name> --show-jaxpr` draws (the CLI's own renderer at that width;
    tests/test_terminal_fit.py runs the CLI end to end on a few samples)."""
    from markers import markers
    from terminal_fit import WIDTH, assert_fits, assert_line_visible, render

    out = render(report, WIDTH)
    assert_fits(out)
    shown = {int(m) for m in re.findall(rf"samples/{re.escape(name)}:(\d+) in ", out)}
    marked = {line for lines in markers(SAMPLES / name).values() for line in lines}
    for line in sorted(shown & marked):  # every marked line a finding points at (JAX releases differ in which)
        assert_line_visible(out, SAMPLES / name, line)


def _docs_tables():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_tables
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return docs_tables


def _docs_table_rows_say_what_this_run_says(name, report):
    """docs/jax-vs-jaxdiag.md's row for the rule whose bad sample this is holds what plain JAX says now and the
    first sentence of this run's finding: CI's `scripts/docs_tables.py --check --rows-from-tests` trusts these rows
    rather than run every sample a second time. Compared on the JAX release the table was generated with only
    (JAX's messages change between releases)."""
    tables = _docs_tables()
    block = tables._block(tables.TABLE_DOC.read_text(encoding="utf-8")) or ""
    recorded = tables.VERSION_RE.search(block)
    if recorded is None or recorded.group(1) != jax.__version__:
        return
    rows = tables.doc_rows(block)
    for code in tables.table_codes():
        if jaxdiag.RULES[code].bad_sample != name or code.startswith("JXS"):
            continue
        cells = tables.row_cells(code, name, tables.jaxdiag_cell(code, report.findings))
        wanted = tables.row_line(*cells, f"check samples/{name}")
        assert rows.get(code) == wanted, f"{tables.TABLE_DOC.name}'s row for {code} is stale: " \
            f"run `python scripts/docs_tables.py`\n  doc:  {rows.get(code)}\n  now:  {wanted}"


def test_marker_check_catches_a_moved_finding(monkeypatch):
    """The location check can fail: a finding reported one line away from its marker is caught."""
    import expected_codes

    name = "jxb004_bad.py"
    (code, line), = {(c, ln) for c, sev, _, ln in expected_codes.findings(name) if sev == "error"}
    moved = tuple((c, sev, p, ln + 1 if (c, ln) == (code, line) else ln)
                  for c, sev, p, ln in expected_codes.findings(name))
    monkeypatch.setattr(expected_codes, "findings", lambda n: moved)
    problems = location_differences(name)
    assert any(f":{line + 1}: {code} reported here" in p for p in problems)
    assert any(f":{line}: marker expects {code}" in p for p in problems)


def test_markers_follow_a_release_override():
    """On a release that reports a sample differently, a marker stands for its rule's catalog variant at the same
    line (jax 0.5: JXB023 for JXB020), or for nothing where the release cannot show the defect (JXR008 on 0.5);
    elsewhere the markers are taken as written."""
    from expected_codes import TABLE_JAX, marked_locations
    from markers import markers

    jxb020 = markers("jxb020_bad.py")["JXB020"]
    assert marked_locations("jxb020_bad.py", TABLE_JAX) == {("JXB020", line) for line in jxb020}
    assert marked_locations("jxb020_bad.py", "0.5") == {("JXB023", line) for line in jxb020}
    assert marked_locations("jxr008_bad.py", "0.5") == set()
    assert marked_locations("jxb004_bad.py", "0.5") == marked_locations("jxb004_bad.py", TABLE_JAX) != set()


def test_table_lists_exactly_the_sample_files():
    assert sorted(EXPECTED) == sample_files(), HINT


# The JXS (sharding) samples report their rules under `jaxdiag sharding`, which `check` runs only with
# `sharding = true`: tests/test_sharding.py checks those pairs on a virtual mesh. Under plain `check` the
# custom_partitioning ones note that JAX has no vmap/grad rule for custom_partitioning (pinned in the table).
SAMPLE_PAIRS = sorted(n for n in EXPECTED if re.fullmatch(r"jx[a-rt-z]\d{3}_(bad|good)\.py", n))


@pytest.mark.parametrize("name", SAMPLE_PAIRS)
def test_bad_samples_report_their_rule_and_good_samples_are_clean(name):
    """A bad sample reports its rule at the catalog's severity; a good one reports no error, no warning and not
    its rule. Checked on the table's own JAX release; an older release's
    reviewed deviations (EXPECTED_BY_JAX) are exempt: `batching.not_mapped` still exists on jax 0.5."""
    code, which = name[:6].upper(), name[7:-3]
    entry = EXPECTED[name]
    reported = {c for codes in entry.values() for c in codes}
    problems = set(entry.get("error", [])) | set(entry.get("warning", []))
    if which == "bad":
        severity = jaxdiag.RULES[code].severity
        assert code in entry.get(severity, []), f"samples/{name} should report {code} as {severity} (the " \
                                                f"catalog's severity); reports {entry}"
    else:
        assert not problems and code not in reported, f"samples/{name} should report no error, no warning and " \
                                                      f"not {code}; reports {entry}"


OVERRIDES = sorted((release, name) for release, table in EXPECTED_BY_JAX.items() for name in table)


@pytest.mark.parametrize("release,name", OVERRIDES)
def test_every_release_override_says_why(release, name):
    assert WHY_BY_JAX.get(release, {}).get(name), f"EXPECTED_BY_JAX[{release!r}][{name!r}] differs from the newest " \
                                                  f"JAX's entry: add the reason to WHY_BY_JAX[{release!r}]"


@pytest.mark.parametrize("release,name", [o for o in OVERRIDES if re.fullmatch(r"jx[a-z]\d{3}_bad\.py", o[1])])
def test_a_defect_an_old_release_cannot_show_is_reported_as_skipped(release, name):
    """On an older release a bad sample either still reports its rule (maybe at another severity) or reports
    JXN003 (check-skipped, info) saying why it cannot, or a variant of the rule (the same defect at the severity
    that release warrants, e.g. JXB023 for JXB020 on jax 0.5): never a silent pass."""
    from jaxdiag import _rules as rules

    code, entry = name[:6].upper(), EXPECTED_BY_JAX[release][name]
    reported = {c for codes in entry.values() for c in codes}
    variants = {r.code for r in rules.RULES.values() if r.variant_of == code}
    assert code in reported or reported & variants or rules.CHECK_SKIPPED.code in entry.get("info", []), \
        f"on jax {release}, samples/{name} reports neither {code}, a variant of it, nor {rules.CHECK_SKIPPED.code}: " \
        f"{entry}"
