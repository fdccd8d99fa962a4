"""The text report fits the terminal (COLUMNS=60 here): text wraps between words, the faulty source line is never
cut (broken between tokens, continuation rows marked `…`), `<--` markers of --show-jaxpr never wrap, error text is
never cut mid-sentence; and `--diff` prints the report on stderr beside the patch on stdout."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from clirun import Runner
from markers import SAMPLES, markers
from rich.console import Console

from jaxdiag._parent._cli import app
from jaxdiag._run._exposure import first_sentences
from jaxdiag._render.text import THEME, break_code, draw
from jaxdiag._core._report import Finding, Location, Report, TargetReport

WIDTH = 60
BORDER = re.compile(r"^[│╭╰]\s?|\s?[│╮╯]$")
MARKER_ROW = re.compile(r"<-- (\S+:\d+( \([^()]*\))?|[\w.]+)$")


def _rows(text: str) -> list[str]:
    return [BORDER.sub("", row.rstrip()) for row in text.splitlines()]


def _render(report: Report, width: int = WIDTH) -> str:
    buffer = io.StringIO()
    draw(report, Console(file=buffer, theme=THEME, width=width, no_color=True, color_system=None,
                         force_terminal=False))
    return buffer.getvalue()


def assert_fits(text: str, width: int = WIDTH) -> None:
    too_wide = [row for row in text.splitlines() if len(row) > width]
    assert not too_wide, f"rows wider than {width}:\n" + "\n".join(too_wide)
    for row in _rows(text):
        if "<--" in row:
            assert MARKER_ROW.search(row.strip()), f"a `<--` marker wrapped or was cut: {row!r}"


def faulty_line_shown(text: str, line: int) -> list[str]:
    """The rendered source line `line` of every excerpt that marks it, its continuation rows joined (gutter and
    ellipses dropped)."""
    rows, shown = _rows(text), []
    for i, row in enumerate(rows):
        match = re.match(rf"\s*❱ +{line} (.*)$", row)
        if not match:
            continue
        parts = [match.group(1)]
        for follow in rows[i + 1:]:
            cont = re.match(r"\s*… (.*)$", follow)
            if not cont:
                break
            parts.append(cont.group(1))
        shown.append(" ".join(parts))
    return shown


def assert_line_visible(text: str, path: Path, line: int) -> None:
    source = path.read_text(encoding="utf-8").splitlines()[line - 1]
    shown = faulty_line_shown(text, line)
    assert shown, f"{path.name}:{line} is not shown as the faulty line:\n{text}"
    for rendered in shown:
        assert "".join(rendered.split()) == "".join(source.split()), (
            f"{path.name}:{line}: the faulty line is not shown whole\nsource:   {source.strip()}\nrendered: {rendered}")


# --- fast: one representative report, rendered without running a check -------------------------------------------

def test_the_faulty_ffi_call_keeps_vmap_method_visible_at_60_columns():
    """The issue's example: `vmap_method="expand_dims"` sits past column 80 of the line."""
    path = SAMPLES / "jxb021_bad.py"
    line = next(n for n in markers(path)["JXB021"] if "expand_dims" in path.read_text().splitlines()[n - 1])
    jaxpr = ("jax.make_jaxpr(jax.vmap(cumsum_rows_expand, in_axes=0)):\n{ lambda ; a:f32[5,3]. let\n"
             "    b:f32[5,3] = ffi_call[custom_call_api_version=4 target_name=CumsumFlat vmap_method=expand_dims] a"
             f"   <-- samples/jxb021_bad.py:{line} (cumsum_rows_expand)\n  in (b,) }}")
    finding = Finding("JXB021", "ffi-vmap-method-mixes-examples", "error",
                      "Examples mixed: `jax.vmap(cumsum_rows_expand, in_axes=0)` with batch size 5 differs from "
                      "the per-example results.", 'Declare `vmap_method="sequential"`.',
                      Location(f"samples/{path.name}", line, "cumsum_rows_expand"), jaxpr=jaxpr)
    text = _render(Report([TargetReport(f"samples/{path.name}:cumsum_rows_expand", "function", ["f32[3]"],
                                        findings=[finding])]))
    assert_fits(text)
    assert_line_visible(text, path, line)
    assert 'vmap_method="expand_dims")(x)' in "".join(faulty_line_shown(text, line)[0].split())
    # the long equation wraps between words; its marker has a row of its own, whole
    assert any(row.strip() == f"<-- samples/jxb021_bad.py:{line} (cumsum_rows_expand)" for row in _rows(text))


def test_breaks_fall_between_tokens_preferably_after_commas():
    line = '    y = f(alpha_value, "a string, with spaces", beta_value)  # a trailing note'
    pieces = [line[a:b] for a, b in break_code(line, 34, 8)]
    assert len(pieces) > 1
    assert "".join("".join(pieces).split()) == "".join(line.split())  # nothing lost
    assert any('"a string, with spaces"' in piece for piece in pieces), pieces  # never inside a string literal
    assert pieces[0].rstrip().endswith(","), pieces
    assert len(pieces[0]) <= 34 and all(len(piece.rstrip()) <= 34 - 8 for piece in pieces[1:]), pieces
    # a string literal wider than a row is broken between its words, never inside one
    narrow = [line[a:b] for a, b in break_code(line, 30, 8)]
    assert "".join("".join(narrow).split()) == "".join(line.split())
    assert all(len(piece.rstrip()) <= 30 - 8 for piece in narrow[1:]), narrow
    words = set(re.findall(r"[\w.]+", line))
    assert all(w in words for piece in narrow for w in re.findall(r"[\w.]+", piece)), narrow


def test_error_text_is_cut_between_sentences_only():
    text = "First sentence is here. " + "Second one is long " * 20 + "and ends. Third."
    assert first_sentences(text) == "First sentence is here. [...]"
    long_first = "word " * 80 + "end."
    assert first_sentences(long_first) == long_first.strip()  # never cut inside the first sentence
    assert first_sentences("Short. Also short.\nsecond line") == "Short. Also short."


def test_diff_prints_the_report_on_stderr_and_only_the_patch_on_stdout(capsys):
    """What the child's `--diff` printed is replayed (the patch on stdout), and the CLI draws the report on stderr,
    without the diffs: stdout stays exactly the patch."""
    import typer

    from jaxdiag._parent._cli import _emit
    from jaxdiag._parent._supervisor import Answer

    patch = "diff --git a/nowhere.py b/nowhere.py\n--- a/nowhere.py\n+++ b/nowhere.py\n@@ -3 +3 @@\n-x\n+y\n"
    finding = Finding("JXB001", "batch-dim-out-of-range", "error", "Batch dim out of range: wrong.", "Return 0.",
                      Location("nowhere.py", 3, "rule"), diff=patch, fix_verified=True)
    report = Report([TargetReport("nowhere.py:p", "primitive", ["f32[3]"], findings=[finding])])
    answer = Answer(report, views_stdout=patch, views_stderr="jaxdiag: 1 verified fix(es)\n", views_done=True)
    with pytest.raises(typer.Exit) as exit_:
        _emit(answer, "text", None, exit_zero=False)
    out, err = capsys.readouterr()
    assert exit_.value.exit_code == 1
    assert out == patch
    assert "JXB001 batch-dim-out-of-range" in err and "1 target checked: 1 error" in err
    assert "1 verified fix(es)" in err and "diff --git" not in err


# --- slow: the CLI on every marked bad sample, and --diff end to end ----------------------------------------------

MARKED = sorted(p.name for p in SAMPLES.glob("*_bad.py") if markers(p))


@pytest.mark.slow  # one `jaxdiag check --show-jaxpr` per sample (~3 s each)
@pytest.mark.parametrize("name", MARKED)
def test_every_marked_sample_fits_60_columns(name, monkeypatch):
    if name.startswith("jxb02"):
        import ffi_build

        ffi_build.register()
    monkeypatch.chdir(SAMPLES.parent)
    result = Runner().invoke(app, ["check", f"samples/{name}", "--show-jaxpr", "--keep-going", "-j", "1"],
                             env={"COLUMNS": str(WIDTH)})
    assert result.exit_code in (0, 1, 2, 5), result.output  # 5: a target of the sample is not verified
    panels = [row for row in result.stdout.splitlines() if row.startswith("╭")]
    assert all(len(row) == WIDTH for row in panels)  # a panel spans the terminal: COLUMNS is what was used
    assert_fits(result.stdout)
    shown = {int(m) for m in re.findall(rf"samples/{re.escape(name)}:(\d+) in ", result.stdout)}
    marked = {line for lines in markers(SAMPLES / name).values() for line in lines}
    for line in sorted(shown & marked):  # every marked line a finding points at (JAX releases differ in which)
        assert_line_visible(result.stdout, SAMPLES / name, line)


@pytest.mark.slow  # a check run (~4 s)
def test_cli_diff_prints_the_patch_on_stdout_and_the_report_on_stderr(monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    result = Runner().invoke(app, ["check", "samples/jxb004_bad.py", "--diff"], env={"COLUMNS": "100"})
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("diff --git a/samples/jxb004_bad.py b/samples/jxb004_bad.py\n")
    assert "JXB004" not in result.stdout.replace("jaxdiag-expect: JXB004", "")  # only the patch
    assert "JXB004 batch-axis-size-mismatch [error]" in result.stderr
    assert "diff --git" not in result.stderr  # the patch is not repeated inside the report
    assert "1 target checked: 1 error" in result.stderr and "1 verified fix(es)" in result.stderr
