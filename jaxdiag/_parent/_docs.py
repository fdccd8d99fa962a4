"""`jaxdiag rules`: the catalog as a listing, one rule explained with its samples, or Markdown (`docs/rules.md` is
this module's output, checked for staleness by the tests). Reads the catalog only; no JAX."""

from __future__ import annotations

import ast
import difflib
import functools
import sys
from pathlib import Path

from .. import _rules
from .._core._errors import UsageError
from .._core._locate import relative_path

DOC_HEADER = """# Rule catalog

Generated from the catalog (`jaxdiag/_rules/`) by `jaxdiag rules --format markdown > docs/rules.md`; do not edit
by hand (a test fails when this file is stale). `jaxdiag rules CODE` prints the same text in a terminal.

Prefixes: {prefixes}.

Severities: `error` (fails or is wrong under a JAX transformation), `warning` (likely unintended but can be
deliberate), `info` (a note about the run).

## Deliberate semantics

Some warnings describe code that is right under another reading: a custom derivative that clips ({clip}) or is an
estimator where the primal is flat ({flat}, e.g. a score-function gradient of sampling), a JVP rule that treats one
argument as a constant ({ignored}) or one output as a constant ({constant}, an auxiliary output such as residuals), a
custom_vmap rule that returns a batch statistic ({aggregate}). Each message states
both readings. When the deliberate one is right, mark the rule itself: put

    def my_bwd(res, g):  # jaxdiag: intended[{flat}]

on the `def` line the finding points at. The marker is the inline suppression (`# jaxdiag: ignore[...]`) with a
stricter contract: it names codes (no bare form), only warnings (`intended[{wrong}]` is a usage error: a derivative
off by a sign or a constant factor on the interior of the domain, such as `2 x^2` where `3 x^2` is right, is wrong
whatever the intent, and clipping never scales a derivative uniformly), and it silences exactly the findings of those
codes at that rule: a wrong formula elsewhere in the same rule is still reported. A marker that silenced nothing is
reported as {unused}, like any unused suppression. A docstring that states the reading stands for the marker on
{stated}: one sentence of the rule's docstring, or of the target function's, that names a derivative
(derivative, gradient, JVP, VJP, tangent, backward pass) and its deliberate kind (surrogate, straight-through,
pseudo-derivative, score-function or REINFORCE, gradient clipping: "clips the gradient", a rule named
`clip_gradient`, or a derivative attached to a value computed elsewhere: "carrying the eigenvalue derivative", "the
gradient is attached here"), such as "Heaviside step function with piece-wise linear derivative
to use as spike-generation surrogate". On {stated_batch} the same holds for a sentence that names vmap or the batch
and a batch-wide value (its maximum, minimum, sum, mean or a statistic, or "the same for all") or says it ignores the
batch, such as "The identity, except under vmap: the largest value of the batch, the same for all of its elements"
or "As `jnp.all`, but ignores batch dimensions". For a primitive, the docstring of a module-level function that binds
it (its public wrapper) counts too, and so does the docstring of a function that defines the rule inside it (a
factory: "Returns the Heaviside step function with a surrogate derivative"). The comment lines that open the
function's body, or stand right above it, are read as its docstring is.
"""


def _header_codes() -> dict[str, str]:
    """The codes the header names, read from the catalog (no code is written as a string outside it)."""
    return {"clip": _rules.CUSTOM_DERIVATIVE_MISMATCH.code, "flat": _rules.FLAT_PRIMAL_SURROGATE.code,
            "ignored": _rules.JVP_IGNORES_ARGUMENT.code, "constant": _rules.JVP_CONSTANT_OUTPUT.code,
            "aggregate": _rules.VMAP_BATCH_AGGREGATE.code,
            "wrong": _rules.CUSTOM_DERIVATIVE_WRONG.code, "unused": _rules.UNUSED_SUPPRESSION.code,
            "stated": " and ".join(r.code for r in _rules.iter_rules() if r.stated_intent == "derivative"),
            "stated_batch": " and ".join(r.code for r in _rules.iter_rules() if r.stated_intent == "batch")}


def select_rules(code_or_prefix: str | None) -> list[_rules.Rule]:
    """Every rule, the rules whose code starts with a prefix (`JXB`, `JXB00`), or one rule; UsageError if none."""
    rules = _rules.iter_rules()
    if code_or_prefix is None:
        return rules
    wanted = code_or_prefix.strip().upper()
    chosen = [r for r in rules if r.code.startswith(wanted)] if wanted else []
    if chosen or (wanted and any(p.startswith(wanted) for p in _rules.CATEGORIES)):
        return chosen
    close = difflib.get_close_matches(wanted, [r.code for r in rules], n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    prefixes = ", ".join(sorted(_rules.CATEGORIES))
    raise UsageError(f"unknown rule code or prefix {code_or_prefix!r}{hint} (prefixes: {prefixes}; "
                     "`jaxdiag rules` lists every code)")


def table(rules: list[_rules.Rule]) -> None:
    """One plain line per rule: greppable, never wrapped or cut."""
    width = max((len(r.name) for r in rules), default=0)
    for r in rules:
        sys.stdout.write(f"{r.code}  {r.name:<{width}}  {r.severity:<7}  {r.summary}\n")
    if not rules:
        sys.stdout.write("no rules with this prefix yet\n")


def explain(rule: _rules.Rule) -> None:
    """The rule's documentation and its bad and good samples, each sample line printed whole."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.syntax import Syntax

    console = Console(highlight=False)
    console.print(f"[bold]{rule.code} {rule.name}[/bold] ({rule.severity}, {rule.category}{_draws(rule)})")
    console.print(rule.summary)
    if rule.variant_of:
        console.print(variant_line(rule))
    console.print(Markdown(rule.explanation + _decision_section(rule)))
    for which, heading in (("bad", "Example"), ("good", "Use instead:")):
        path, text = rule.sample_path(which), rule.sample_text(which)
        if path is None or text is None:
            continue
        console.print(f"\n[bold]{heading}[/bold] ({relative_path(str(path))})")
        if console.is_terminal:
            console.print(Syntax(text, "python", line_numbers=True, word_wrap=True, theme="ansi_dark",
                                 background_color="default"))
        else:  # a pipe or a file: plain numbered lines, never cut at the console width
            lines = text.splitlines()
            digits = len(str(len(lines)))
            sys.stdout.flush()
            console.file.write("".join(f"{i:>{digits}} {line}\n" for i, line in enumerate(lines, 1)))


def _decision_section(rule: _rules.Rule, heading: str = "##") -> str:
    """What a fix that stays text leaves to the user (`Rule.decision`); empty for a rule whose fix is computed."""
    if not rule.decision:
        return ""
    return f"\n{heading} Fix\n\nThe fix stays text where it needs a design decision: {rule.decision}.\n"


def _draws(rule: _rules.Rule, sep: str = ", ") -> str:
    """Whether a finding of the rule can depend on the drawn inputs (then it is re-tried on fresh draws)."""
    if rule.is_note:
        return ""
    return f"{sep}structural: the same on every draw" if not rule.depends_on_values else f"{sep}re-tried on fresh draws"


def variant_line(rule: _rules.Rule) -> str:
    """What a variant is and how selectors treat it (empty for a rule that is no variant)."""
    if not rule.variant_of:
        return ""
    parent = _rules.RULES[rule.variant_of]
    return (f"Variant of {parent.code} {parent.name} ({parent.severity}): {rule.differs} Selecting, ignoring or "
            f"suppressing {parent.code} covers {rule.code} too.")


def _anchor(rule: _rules.Rule) -> str:
    return f"{rule.code} {rule.name}".lower().replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rules_markdown(rules: list[_rules.Rule]) -> str:
    prefixes = ", ".join(f"`{p}` {name}" for p, name in sorted(_rules.CATEGORIES.items()))
    parts = [DOC_HEADER.format(prefixes=prefixes, **_header_codes()), "| code | name | severity | summary |",
             "| --- | --- | --- | --- |"]
    parts += [f"| [{r.code}](#{_anchor(r)}) | {r.name} | {r.severity} | {_cell(r.summary)} |" for r in rules]
    for r in rules:
        badge = f"**{r.severity}** · {r.category}{_draws(r, ' · ')}"
        parts += ["", f"## {r.code} {r.name}", "", badge, "", r.summary, ""]
        if r.variant_of:
            parts += [variant_line(r).replace(r.variant_of, f"[{r.variant_of}](#{_anchor(_rules.RULES[r.variant_of])})",
                                              1), ""]
        parts += [f"Emitted by: {emitted_by(r)}.", ""]
        parts += ["### What it does", "", r.what, "", "### Why is this bad?", "", r.why]
        if r.decision:
            parts += _decision_section(r, "###").rstrip("\n").split("\n")
        for which, heading in (("bad", "Example"), ("good", "Use instead")):
            path, text = r.sample_path(which), r.sample_text(which)
            if path is None or text is None:
                continue
            parts += ["", f"### {heading}", "", f"`samples/{Path(path).name}`:", "", "```python",
                      text.rstrip("\n"), "```"]
    return "\n".join(parts) + "\n"


OPTIONS_BEGIN = "<!-- table:options (generated from jaxdiag/_core/_commands.py) -->"
OPTIONS_END = "<!-- /table:options -->"


def options_table() -> str:
    """docs/cli.md's options table, generated from the registry of commands: one row per option, the commands that
    take it named where not every diagnose command does."""
    from .._core._commands import COMMANDS, documented_options

    rows = ["| option | meaning |", "|---|---|"]
    for opt, having in documented_options():
        metavar = f" {opt.metavar}".replace("|", "\\|") if opt.metavar else ""
        flags = sorted(opt.flags, key=lambda f: (f.startswith("--"), f))
        which = "" if len(having) == len(COMMANDS) else "(" + ", ".join(f"`{c}`" for c in having) + ") "
        rows.append(f"| {', '.join(f'`{f}{metavar}`' for f in flags)} | {which}{opt.doc or opt.help} |")
    return "\n".join(rows)


def with_options_table(doc: str) -> str:
    """`doc` (docs/cli.md's text) with its options block replaced by the generated table."""
    start, end = doc.index(OPTIONS_BEGIN), doc.index(OPTIONS_END)
    return doc[:start] + f"{OPTIONS_BEGIN}\n{options_table()}\n" + doc[end:]


PACKAGE = Path(_rules.__file__).resolve().parent.parent  # the jaxdiag package, read as source (never imported)


def _rule_names(tree: ast.AST) -> set[str]:
    """The catalog constants a module names (`rules.X`, `_rules.X`)."""
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id in ("rules", "_rules")}


def _emitted_names(tree: ast.AST) -> set[str]:
    """The catalog constants a module builds findings of: `rules.X.finding(...)`, through a conditional or a local
    name bound to one (`missing = rules.A if c else rules.B; missing.finding(...)`)."""
    out: set[str] = set()
    for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        bound = {n.targets[0].id: n.value for n in ast.walk(function) if isinstance(n, ast.Assign)
                 and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "finding":
                receiver = node.func.value
                receiver = bound.get(receiver.id, receiver) if isinstance(receiver, ast.Name) else receiver
                out |= _rule_names(receiver)
    return out


def _check_names(tree: ast.AST) -> list[str]:
    """The names of the checks a module declares (`@check("name", ...)`)."""
    return [str(d.args[0].value) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for d in n.decorator_list
            if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "check" and d.args
            and isinstance(d.args[0], ast.Constant)]


@functools.lru_cache(maxsize=None)
def _emitters() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """rule code -> [(a module or check package of jaxdiag that names it, the checks declared there)]: a check
    package (`_checks/_custom_vjp/`) is one unit, as its helpers emit for its checks."""
    units: dict[str, tuple[set[str], set[str], list[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == "_rules" or "__pycache__" in parts:
            continue
        in_check_package = parts[0] == "_checks" and len(parts) > 2 and not parts[1].endswith(".py")
        unit = "/".join(parts[:2]) + "/" if in_check_package else "/".join(parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        emitted, named, checks = units.setdefault(unit, (set(), set(), []))
        emitted |= _emitted_names(tree)
        named |= _rule_names(tree)
        checks += _check_names(tree)
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for unit, (emitted, _, checks) in units.items():
        for rule in _rules_named(emitted):
            out.setdefault(rule.code, []).append((unit, tuple(sorted(checks))))
    # a rule no site builds directly (re-emitted under its variant's code, a `**fields` site): where it is named
    for unit, (_, named, checks) in units.items():
        for rule in _rules_named(named):
            if rule.code not in out or out[rule.code][0][0].startswith("named:"):
                out.setdefault(rule.code, []).append(("named:" + unit, tuple(sorted(checks))))
    return out


def _rules_named(names: set[str]) -> list[_rules.Rule]:
    found = [getattr(_rules, name, None) for name in sorted(names)]
    return [r for r in found if isinstance(r, _rules.Rule)]


def emitted_by(rule: _rules.Rule) -> str:
    """Where `rule` is emitted: the checks (with their module or package), or the module that emits it."""
    places = _emitters().get(rule.code, [])
    if not places:
        return "no check or module (a deprecated code, or a variant only the parent's emitter picks)"
    texts = []
    for unit, checks in places:
        named = ", ".join(f"`{c}`" for c in checks)
        unit = unit.removeprefix("named:")
        texts.append(f"{'check ' if len(checks) == 1 else 'checks '}{named} (`{unit}`)" if checks else f"`{unit}`")
    chosen = " (the rule chosen at run time)" if places[0][0].startswith("named:") else ""
    return "; ".join(texts) + chosen
