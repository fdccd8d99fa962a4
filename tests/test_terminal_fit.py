"""The text report fits the terminal (COLUMNS=60 here): text wraps between words, the faulty source line is never
cut (broken between tokens, continuation rows marked `…`), `<--` markers of --show-jaxpr never wrap, error text is
never cut mid-sentence; and `--diff` prints the report on stderr beside the patch on stdout."""

from __future__ import annotations

import re

import pytest
from clirun import Runner
from markers import SAMPLES, markers
from terminal_fit import WIDTH, assert_fits, assert_line_visible, faulty_line_shown, render, rows

from jaxdiag._parent._cli import app
from jaxdiag._evidence._exposure import first_sentences
from jaxdiag._render.text import break_code
from jaxdiag._core._report import Finding, Location, Report, TargetReport

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
    text = render(Report([TargetReport(f"samples/{path.name}:cumsum_rows_expand", "function", ["f32[3]"],
                                        findings=[finding])]))
    assert_fits(text)
    assert_line_visible(text, path, line)
    assert 'vmap_method="expand_dims")(x)' in "".join(faulty_line_shown(text, line)[0].split())
    # the long equation wraps between words; its marker has a row of its own, whole
    assert any(row.strip() == f"<-- samples/jxb021_bad.py:{line} (cumsum_rows_expand)" for row in rows(text))


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


# --- slow: the CLI end to end on a few marked bad samples, and --diff ---------------------------------------------
# Every marked bad sample's report is drawn at 60 columns by the sample table (tests/test_samples_table.py) from its
# one run of the sample; here the CLI itself, with COLUMNS=60, on samples whose faulty token sits far right (an
# ffi_call's vmap_method), in a batching rule and in a JVP rule.

END_TO_END = ["jxb004_bad.py", "jxb021_bad.py", "jxg011_bad.py"]


@pytest.mark.slow  # one `jaxdiag check --show-jaxpr` per sample (~3 s each)
@pytest.mark.parametrize("name", END_TO_END)
def test_marked_samples_fit_60_columns_through_the_cli(name, monkeypatch):
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


def test_a_failing_callback_is_named_by_its_own_error_not_the_traceback_header():
    """XLA reports a callback's exception with the Python traceback as text: the finding quotes the callback's
    error (the last line), not "Traceback (most recent call last):"."""
    import jax
    import numpy as np

    from jaxdiag._checks._gradref._source import short_message

    def host(x):
        raise TypeError("n must be a non-negative integer")

    shape = jax.ShapeDtypeStruct((3,), np.float32)
    try:
        jax.block_until_ready(jax.jit(lambda x: jax.pure_callback(host, shape, x))(np.ones(3, np.float32)))
    except Exception as exc:  # noqa: BLE001 - whatever this JAX wraps it in
        text = short_message(exc)
    else:
        raise AssertionError("the callback did not fail")
    assert "Traceback" not in text and text.endswith("TypeError: n must be a non-negative integer"), text
