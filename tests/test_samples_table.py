"""`jaxdiag check samples/<file>` reports exactly the codes in `tests/expected_codes.py`, and the table itself says
what the samples promise: every `<code>_bad.py` reports its rule as an error or warning, every `_good.py` none."""

from __future__ import annotations

import re

import pytest
from expected_codes import EXPECTED, EXPECTED_BY_JAX, WHY_BY_JAX, differences, expected_for, observed, sample_files

HINT = "if the change is intended, regenerate the table and review its diff: python -m tests.expected_codes --update"


@pytest.mark.parametrize("name", sample_files())
def test_sample_reports_exactly_the_expected_codes(name):
    lines = differences(name, expected_for(name), observed(name))
    assert not lines, "\n".join(lines + [HINT])


def test_table_lists_exactly_the_sample_files():
    assert sorted(EXPECTED) == sample_files(), HINT


# The JXS (sharding) samples report their rules under `jaxdiag sharding`, which `check` runs only with
# `sharding = true`: tests/test_sharding.py checks those pairs on a virtual mesh. Under plain `check` the
# custom_partitioning ones report JAX's missing vmap/grad support for custom_partitioning, pinned in the table.
@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if re.fullmatch(r"jx[a-rt-z]\d{3}_(bad|good)\.py", n)))
def test_bad_samples_report_their_rule_and_good_samples_are_clean(name):
    """A bad sample reports its rule (at the severity `check` gives it: a missing JVP rule is only a note); a good
    one reports no error, no warning and not its rule. Checked on the table's own JAX release; an older release's
    reviewed deviations (EXPECTED_BY_JAX) are exempt: `batching.not_mapped` still exists on jax 0.5."""
    code, which = name[:6].upper(), name[7:-3]
    entry = EXPECTED[name]
    reported = {c for codes in entry.values() for c in codes}
    problems = set(entry.get("error", [])) | set(entry.get("warning", []))
    if which == "bad":
        assert code in reported, f"samples/{name} should report {code}; reports {entry}"
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
