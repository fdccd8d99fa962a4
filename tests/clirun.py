"""One CLI runner for the tests on every supported click/typer: stdout and stderr always captured apart (click
< 8.2 mixes them unless asked), and `output` is both."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class Runner:
    def __init__(self) -> None:
        try:
            self._runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2
        except TypeError:
            self._runner = CliRunner()

    def invoke(self, app: Any, args: Any = None, **kwargs: Any) -> Result:
        result = self._runner.invoke(app, args, **kwargs)
        return Result(result.exit_code, result.stdout, result.stderr, result.exception)


def flat(text: str) -> str:
    """Report text without panel borders and with every run of whitespace one space: assertions on it do not depend
    on where the terminal width wrapped a line."""
    for border in "│╭╮╰╯─":
        text = text.replace(border, " ")
    return " ".join(text.split())


def check_json(target: str, app_dir: Any) -> tuple[int, dict]:
    """`jaxdiag check TARGET --app-dir APP_DIR --format json --no-cache`: (exit code, the JSON report); a run that
    is neither clean, nor findings, nor unverified targets fails the test."""
    import json

    from jaxdiag._parent._cli import app

    result = Runner().invoke(app, ["check", target, "--app-dir", str(app_dir), "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1, 5), result.output
    return result.exit_code, json.loads(result.stdout)


def missing_vmap_method_code() -> str:
    """What a `pure_callback` without `vmap_method` is: JXB020 where `jax.vmap` raises there, JXB023 on JAX before
    0.6, which still fell back to a sequential loop (with a DeprecationWarning)."""
    from jaxdiag import _compat, _rules

    rule = _rules.FFI_VMAP_METHOD_MISSING if _compat.vmap_method_none_raises() else _rules.FFI_VMAP_METHOD_FALLBACK
    return rule.code


def errors_and_warnings(target: dict) -> list[dict]:
    """A JSON target's findings that make a run fail (notes aside)."""
    return [f for f in target["findings"] if f["severity"] in ("error", "warning")]


def only_target(data: dict) -> dict:
    """The one target of a JSON report that is not a module."""
    (target,) = [t for t in data["targets"] if t["kind"] != "module"]
    return target


def check_once_per_request(monkeypatch: Any, project: Path) -> None:
    """`jaxdiag check` invoked in this process checks once per request and per content of `project` (the files it
    reads): invocations that differ only in what the CLI does with the report here (`--format`, `--output`,
    `--exit-zero`) render the same report instead of checking the same package again. A request or a file that
    differs (a pyproject.toml written in between) runs the checks again."""
    from jaxdiag._jobs import _child

    command = _child.COMMANDS["check"]
    payloads: dict[str, dict] = {}

    def run(job: Any, send: Any) -> dict:
        files = sorted((str(p), p.read_bytes()) for p in Path(project).rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts)
        views = {k: v for k, v in job.views.items() if k not in ("format", "output")}
        key = repr((sorted(job.request.items()), views, files))
        if key not in payloads:
            payloads[key] = command(job, send)
        return copy.deepcopy(payloads[key])

    monkeypatch.setitem(_child.COMMANDS, "check", run)
