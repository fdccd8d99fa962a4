"""A variant rule is one declaration, `variant(parent, ...)`: it inherits the parent's text, and every selector or
suppression naming the parent covers it (mypy's `sub_code_of`). The catalog holds each template once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jaxdiag import _rules as rules
from jaxdiag._core._filtering import Filter, suppressed_inline
from jaxdiag._core._report import Finding, Location

CATALOG = Path(rules.__file__).resolve().parent
VARIANTS = [r for r in rules.iter_rules() if r.variant_of]


def _finding(rule: rules.Rule, location: Location | None = None) -> Finding:
    return Finding(rule.code, rule.name, rule.severity, "message", "fix", location)


def test_there_are_variants_and_each_says_what_differs():
    assert {"JXR012", "JXR013", "JXR014", "JXB023"} <= {r.code for r in VARIANTS}
    for r in VARIANTS:
        assert r.differs and rules.RULES[r.variant_of].severity != r.severity, r.code


@pytest.mark.parametrize("rule", VARIANTS, ids=[r.code for r in VARIANTS])
def test_ignoring_the_parent_ignores_the_variant(rule):
    parent = rules.RULES[rule.variant_of]
    for selector in (parent.code, parent.code[:4]):
        assert Filter(ignore=[selector]).deselected(_finding(rule)), selector
    assert not Filter(select=[parent.code]).deselected(_finding(rule))
    assert Filter(ignore=[rule.code]).deselected(_finding(rule))
    assert not Filter(ignore=[rule.code]).deselected(_finding(parent)), "a variant's selector never covers its parent"


def test_an_inline_suppression_of_the_parent_covers_the_variant(tmp_path):
    source = tmp_path / "ops.py"
    source.write_text("def my_transpose(ct, x):  # jaxdiag: ignore[JXR007]\n    return [ct]\n")
    used: set = set()
    location = Location(str(source), 1, "my_transpose")
    assert suppressed_inline(_finding(rules.GRAD_WITHOUT_TRANSPOSE_RULE, location), (), used)
    assert used, "the comment is recorded as used (no unused-suppression note)"
    assert not suppressed_inline(_finding(rules.MISSING_BATCHING_RULE, location), (), set())


def test_a_variant_inherits_what_it_does_not_change():
    jxr014, jxr007 = rules.GRAD_WITHOUT_TRANSPOSE_RULE, rules.MISSING_TRANSPOSE_RULE
    assert (jxr014.message, jxr014.fix, jxr014.what, jxr014.bad_sample) == \
        (jxr007.message, jxr007.fix, jxr007.what, jxr007.bad_sample)
    assert jxr014.summary != jxr007.summary and jxr014.severity == "error"
    with pytest.raises(AssertionError):
        rules.variant(jxr007, "JXR990", "bad-variant", "error", differs="x", variant_of="JXR001")


def test_each_message_and_fix_template_is_written_once_in_the_catalog():
    """A template copied verbatim into a second rule (instead of inherited through `variant`) fails here."""
    seen: dict[str, str] = {}
    copies = []
    for path in sorted(CATALOG.glob("_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg in ("message", "fix", "summary", "what", "why"):
                try:
                    text = ast.literal_eval(node.value)
                except ValueError:
                    continue
                if not isinstance(text, str) or text.strip() in ("{fix}", "{evidence}", "{action}"):
                    continue  # a bare slot is not wording
                where = f"{path.name}:{node.lineno}"
                if text in seen:
                    copies.append(f"{where} repeats {seen[text]}")
                seen.setdefault(text, where)
    assert not copies, copies


def test_one_removed_api_table():
    """The advice for removed JAX attributes lives in `_compat.REMOVED_IN_NEWER_JAX` only: no other module of the
    package holds a dict keyed by a removed attribute."""
    from jaxdiag import _compat

    package = CATALOG.parent
    advised = {attr for attrs in _compat.REMOVED_IN_NEWER_JAX.values() for attr, advice in attrs.items() if advice}
    tables = []
    for path in package.rglob("*.py"):
        if path.name == "_removed.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            keys = {k.value for k in getattr(node, "keys", []) if isinstance(k, ast.Constant)}
            advice_like = [v for v in getattr(node, "values", [])
                           if isinstance(v, ast.Constant) and "`" in str(v.value)]
            # one key can be a coincidence ("vjp"), and a name map without advice is another table's business
            if isinstance(node, ast.Dict) and len(keys & advised) >= 2 and advice_like:
                tables.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not tables, tables
    assert "d is None" in _compat.removed_api_advice("jax.interpreters.batching", "not_mapped")
