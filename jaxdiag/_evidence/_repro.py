"""`--repro DIR`: one standalone script per error or warning, using plain JAX and NumPy only (no jaxdiag import).

Each script imports the user's module (or another one named on its command line, to try a fixed version), draws
the example inputs with a fixed seed, applies the transformation that exposed the defect (`_exposure`) and checks
the result against a reference it computes itself: the per-example loop for vmap, central finite differences for
derivatives, eager execution for jit. It fails with an assertion naming expected and actual (shape, dtype or
value), or with JAX's own error; it exits 0 once the defect is gone.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import textwrap
from typing import Any, Callable

import numpy as np

from .._loading import _inputs
from .. import _rules as rules
from ._exposure import Exposure, exposure_for
from ._repro_templates import CHECKS, NO_PREFLIGHT, PREFLIGHT, PRELUDE
from .._core._errors import UsageError
from .._core._report import Finding, Report, TargetReport


# A finding -> {path: the file's text with the finding's verified fix applied}, or None without one (`_fixes`).
FixedSources = Callable[[Finding], "dict[str, str] | None"]


def write_all(report: Report, folder: str, fixed: FixedSources | None = None) -> list[str]:
    """Write a verified script per error/warning of `report` into `folder`; returns the paths written."""
    return write_verified(report, folder, fixed)[0]


def write_verified(report: Report, folder: str, fixed: FixedSources | None = None
                   ) -> tuple[list[str], list[tuple[Finding, str]]]:
    """Write a script per error/warning of `report` into `folder`, each verified first (`verify_script`): it fails
    on the module as it is and, for a finding with a verified fix (`fixed`), passes on the fixed copy. Returns the
    paths written and, for every finding left without a script, why."""
    written: list[str] = []
    skipped: list[tuple[Finding, str]] = []
    used: set[str] = set()
    for target in report.targets:
        subject = getattr(target, "subject", None)
        for finding in target.findings:
            if finding.severity == "info":
                continue
            text = script(target, subject, finding) if subject is not None else None
            if text is None:
                skipped.append((finding, "no plain-JAX form of this check (the target cannot be named from its "
                                         "module, or an argument has no Python literal)"))
                continue
            reason = verify_script(text, module_path(text), fixed(finding) if fixed is not None else None)
            if reason is not None:
                skipped.append((finding, reason))
                continue
            base = f"{finding.code.lower()}_{_slug(subject)}"
            name, n = f"{base}.py", 2
            while name in used:
                name, n = f"{base}_{n}.py", n + 1
            used.add(name)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            written.append(path)
    return written, skipped


# ---------------------------------------------------------------------------------------------------------------
# Verifying a script before it is written: run it (a fresh interpreter, plain Python) on the module as it is, and
# on the fixed copy when the finding has a verified fix
# ---------------------------------------------------------------------------------------------------------------

# The command prefix that runs a script: `python` (tests that register FFI kernels in their own process put a
# registering `-c` wrapper here, as a user's program registers its kernels before calling them).
SCRIPT_PREFIX: list[str] = []
SCRIPT_TIMEOUT = 180.0
# A failure that is the script's own, not the defect's: the module or a name in it cannot be loaded standalone.
_NOT_THE_DEFECT = re.compile(r"^(ModuleNotFoundError|ImportError|SyntaxError|FileNotFoundError|NameError)\b")
_runs: dict[tuple[str, str, str], tuple[int, str]] = {}


def module_path(text: str) -> str:
    match = re.search(r"^MODULE = sys\.argv\[1\] if len\(sys\.argv\) > 1 else (.+)$", text, re.MULTILINE)
    return str(ast.literal_eval(match.group(1))) if match else ""


def run_script(text: str, module: str, source: str | None = None) -> tuple[int, str]:
    """(exit code, stderr) of the script `text` run on `module` (a file path); with `source`, on a scratch copy of
    that file holding `source` instead (same file name, in a private temporary folder). -1 on a timeout."""
    import hashlib
    import subprocess
    import sys
    import tempfile

    digest = hashlib.sha256((source if source is not None else _file_text(module)).encode()).hexdigest()
    key = (text, module, digest)
    if key in _runs:
        return _runs[key]
    with tempfile.TemporaryDirectory(prefix="jaxdiag-repro-") as scratch:
        script_path = os.path.join(scratch, "repro.py")
        with open(script_path, "w", encoding="utf-8") as handle:
            handle.write(text)
        args = []
        if source is not None:
            copy = os.path.join(scratch, "fixed", os.path.basename(module))
            os.makedirs(os.path.dirname(copy))
            with open(copy, "w", encoding="utf-8") as handle:
                handle.write(source)
            args = [copy]
        try:
            done = subprocess.run([sys.executable, *SCRIPT_PREFIX, script_path, *args], capture_output=True,
                                  text=True, timeout=SCRIPT_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
            result = (done.returncode, done.stderr)
        except subprocess.TimeoutExpired:
            result = (-1, f"no result within {SCRIPT_TIMEOUT:.0f} s")
    _runs[key] = result
    return result


def _file_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def _last_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def fails_as_the_defect(code: int, stderr: str) -> str | None:
    """None when a run failed the way a repro must (an assertion or JAX's own error, with its traceback); else
    what happened instead."""
    if code == -1:
        return stderr
    if code == 0:
        return "it passes on the module as it is"
    last = _last_line(stderr)
    if "Traceback (most recent call last)" not in stderr:
        return f"it exits {code} without a Python error ({last[:160]})"
    if _NOT_THE_DEFECT.match(last):
        return f"it cannot load the module standalone ({last[:160]})"
    return None


def verify_script(text: str, module: str, fixed: dict[str, str] | None = None) -> str | None:
    """None when the script fails on `module` as it is and, given the fixed sources, passes on the fixed copy of
    `module`; else why it is not a trustworthy repro."""
    if not module or not os.path.isfile(module):
        return "the module's file cannot be found"
    wrong = fails_as_the_defect(*run_script(text, module))
    if wrong is not None:
        return f"the script does not reproduce the finding: {wrong}"
    if fixed is not None and os.path.realpath(module) in {os.path.realpath(p) for p in fixed}:
        source = next(v for p, v in fixed.items() if os.path.realpath(p) == os.path.realpath(module))
        code, stderr = run_script(text, module, source)
        if code != 0:
            return f"the script still fails once the verified fix is applied ({_last_line(stderr)[:160]})"
    return None


def passes_on(text: str, module: str, source: str) -> str | None:
    """None when the script passes on a scratch copy of `module` holding `source` (a fixed module); else why not."""
    code, stderr = run_script(text, module, source)
    return None if code == 0 else _last_line(stderr)[:200]


def _slug(subject: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", subject.label.rpartition(":")[2]).strip("_").lower() or "target"


# ---------------------------------------------------------------------------------------------------------------
# How the script gets at the target
# ---------------------------------------------------------------------------------------------------------------


def _module_and_attr(subject: Any) -> tuple[Any, str, Any] | None:
    """(module, attribute path, the subject to reproduce) — the subject itself when the module names it, else its
    parent function (a primitive found inside a function)."""
    import sys

    for candidate in (subject, subject.parent):
        if candidate is None:
            continue
        module = sys.modules.get(candidate.module) if candidate.module else None
        label_attr = candidate.label.partition(" > ")[0].rpartition(":")[2]
        if module is not None and candidate is subject and " > " not in candidate.label and label_attr \
                and _resolve(module, label_attr) is not None:
            return module, label_attr, candidate
        for mod in _modules_of(candidate):
            for name, value in vars(mod).items():
                if value is candidate.obj or getattr(value, "__wrapped__", None) is candidate.obj:
                    return mod, name, candidate
    return None


def _modules_of(subject: Any) -> list[Any]:
    import inspect
    import sys

    mods = []
    if subject.module and subject.module in sys.modules:
        mods.append(sys.modules[subject.module])
    root = subject
    while root.parent is not None:
        root = root.parent
    if root.module and root.module in sys.modules:
        mods.append(sys.modules[root.module])
    fn = getattr(subject.obj, "fun", None) or subject.obj
    mod = inspect.getmodule(fn)
    if mod is not None:
        mods.append(mod)
    return list(dict.fromkeys(mods))


def _resolve(module: Any, attr: str) -> Any:
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _literal(value: Any) -> str | None:
    """Python source for a bind parameter or static argument, or None when it has none."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return f"np.dtype({np.dtype(value).name!r})"
    if isinstance(value, (tuple, list)):
        items = [_literal(v) for v in value]
        if any(i is None for i in items):
            return None
        body = ", ".join(items)  # type: ignore[arg-type]
        return f"({body},)" if isinstance(value, tuple) and len(items) == 1 else (
            f"({body})" if isinstance(value, tuple) else f"[{body}]")
    if isinstance(value, dict):
        pairs = [(_literal(k), _literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return None


# ---------------------------------------------------------------------------------------------------------------
# The script
# ---------------------------------------------------------------------------------------------------------------


def script(target: TargetReport, subject: Any, finding: Finding) -> str | None:
    found = _module_and_attr(subject)
    if found is None:
        return None
    module, attr, chosen = found
    kind = chosen.kind
    wrapper = finding.location.function if finding.location is not None else ""
    if finding.code in _AT_WRAPPER and callable(getattr(module, wrapper, None)):
        attr, kind = wrapper, "function"  # the defect is the wrapper's return type: call the wrapper
    params = {k: _literal(v) for k, v in chosen.params.items()} if kind == "primitive" else {}
    statics = {i: _literal(v) for i, v in chosen.static_args.items()}
    if any(v is None for v in [*params.values(), *statics.values()]):
        return None
    module_file = os.path.abspath(getattr(module, "__file__", "") or "")
    if not module_file:
        return None
    exposure = exposure_for(finding, chosen.kind) if chosen is subject else Exposure("call")
    if finding.code == rules.PLATFORM_LOWERING_MISSING.code:
        exposure = Exposure("lower")
    if finding.code == rules.FFI_LEGACY_VECTORIZED.code:
        exposure = Exposure("legacy")
    if any(f.code == rules.VALUES_NOT_COMPARED.code for f in target.findings):
        # checked abstractly (the kernel cannot run on this platform): so is the script, shapes and dtypes only
        if exposure.mode != "vmap":
            return None
        exposure = dataclasses.replace(exposure, mode="abstract_vmap")
    specs = [(np.dtype(s.dtype).name, tuple(s.shape), _inputs.in_run_domain(s.domain, chosen.domain))
             for s in chosen.specs]
    first = finding.message.split(". ")[0].strip().rstrip(".")
    platform = _platform_of(finding) if exposure.mode == "lower" else ""
    header = (f'"""Reproduces {finding.code} ({finding.name}) found by jaxdiag in {target.target}.\n\n'
              + textwrap.fill(first + ".", 100) + "\n\n"
              + f"Exposed by: {exposure.describe(attr)}. Plain JAX and NumPy, no jaxdiag.\n"
              + "Run: python THIS_FILE [MODULE]  (MODULE: a file or module name to check instead, e.g. a fixed "
                "copy).\nExits 0 once the defect is gone; fails with an AssertionError or JAX's own error while "
                "it is there.\n\"\"\"\n")
    call = _call_text(kind, params, statics, list(chosen.specs))
    if chosen.original is not None and chosen.arg_texts is not None and kind != "primitive":
        structured = _structured_call(chosen.arg_texts)  # pytree arguments: called with the user's structure
        if structured is None:
            return None
        call = structured
    literals = {name: _literal(value) for name, value in getattr(chosen, "keywords", {}).items()}
    keywords = {name: text for name, text in literals.items() if text is not None}
    if len(keywords) < len(literals):
        return None
    if keywords and kind != "primitive":  # options the target's own error asked for (`_run._asked_options`)
        call = with_keywords(call, keywords)
    on_axis = getattr(chosen.obj, "__jaxdiag_repro_call__", None)  # a view on a named axis (`_run._named_axis`)
    if chosen.named_axis and on_axis is not None:  # its collectives run on the axis's devices, as jaxdiag ran them
        call, specs = on_axis(chosen, call, specs)
    if finding.code in _DEPRECATIONS:
        call_prelude = ("import warnings\n"
                        "warnings.simplefilter('error', DeprecationWarning)  # the finding is a deprecation\n")
    else:
        call_prelude = ""
    if any(_inputs.needs_x64(s) for s in chosen.specs):
        # a 64-bit spec is checked with x64 on (only there); so is the script, before anything is traced.
        call_prelude += "import jax\njax.config.update('jax_enable_x64', True)  # the inputs are 64-bit\n"
    body = PRELUDE.format(module_file=module_file, module_name=module.__name__, root=os.getcwd(), attr=attr,
                           specs=repr(specs), call=call)
    # jaxdiag's own domain table (one copy, its source), and the index values a finding names
    body += (f"\n\n{_shared_source(_inputs.draw_real)}\n\n\n"
             f"EDGES = {edge_values(finding.message)!r}  # index arguments drawn only at the out-of-range values "
             "that show the defect\n")
    check = CHECKS[exposure.mode].format(in_axes=repr(exposure.in_axes), out_axes=repr(exposure.out_axes),
                                          batch=exposure.batch, platform=repr(platform), code=finding.code)
    preflight = PREFLIGHT if exposure.mode not in NO_PREFLIGHT else ""
    return header + call_prelude + body + preflight + check


def with_keywords(call: str, keywords: dict[Any, str]) -> str:
    """`TARGET(args[0])` -> `TARGET(args[0], steps=4)`; `TARGET()` -> `TARGET(steps=4)`."""
    head = call[:-1]
    options = ", ".join(f"{name}={text}" for name, text in keywords.items())
    return f"{head}{'' if head.endswith('(') else ', '}{options})"


# Findings about a wrapper function around the subject (JXB011: it returns the primitive's list of outputs).
_AT_WRAPPER = {rules.OUT_AXES_TUPLE_FOR_LIST.code}
# Findings about deprecated behaviour: the script turns JAX's DeprecationWarning into the failure.
_DEPRECATIONS = {rules.FFI_VMAP_METHOD_FALLBACK.code}


_EDGE_VALUES = re.compile(r"out-of-range index values \(([^)]*)\)")


def edge_values(message: str) -> dict[int, list[int]]:
    """{argument: the index values that show the defect} when the finding names them (the index-range probe): the
    script draws those, since in-range random indices would pass."""
    found = _EDGE_VALUES.search(message)
    if not found:
        return {}
    out: dict[int, list[int]] = {}
    for arg, values in re.findall(r"argument (\d+) = ([-\d, ]+)", found.group(1)):
        out[int(arg)] = [int(v) for v in values.replace(" ", "").split(",") if v]
    return out


def _shared_source(fn: Any) -> str:
    """The source of a NumPy-only function jaxdiag itself draws with, for the script (one table, never a copy)."""
    import inspect

    return textwrap.dedent(inspect.getsource(fn)).strip()


def _platform_of(finding: Finding) -> str:
    match = re.search(r"\b(cuda|rocm|tpu)\b", finding.message)
    return match.group(1) if match else "cuda"


def _call_text(kind: str, params: dict[str, str | None], statics: dict[int, str | None], specs: list[Any]) -> str:
    """`def f(*args)`: the target applied to the array arguments, static ones put back in place."""
    total = len(specs) + len(statics)
    pieces, k = [], 0
    for i in range(total):
        if i in statics:
            pieces.append(str(statics[i]))
        else:
            pieces.append(_key_or_array(f"args[{k}]", specs[k]))
            k += 1
    args = ", ".join(pieces)
    if kind == "primitive":
        kw = ", ".join(f"{name}={value}" for name, value in params.items())
        return f"TARGET.bind({args}{', ' + kw if kw else ''})"
    return f"TARGET({args})"


def _key_or_array(name: str, spec: Any) -> str:
    """The argument as the target receives it: a typed PRNG key is drawn as its raw key data and wrapped."""
    return name if spec.key is None else f"jax.random.wrap_key_data({name}, impl={spec.key!r})"


class _NoPlainForm(Exception):
    """An argument the script cannot write as plain Python (a PRNG key, a static value without a literal)."""


def _structured_call(arg_texts: list[str]) -> str | None:
    """`TARGET({'w': args[0], 'b': args[1]}, args[2])`: the target called with its arguments' own pytree structure,
    the array leaves taken from the flat `args` in JAX's flattening order (dict keys sorted)."""
    count = 0

    def render(node: Any) -> str:
        nonlocal count
        if isinstance(node, _inputs.ArgSpec):
            count += 1
            return _key_or_array(f"args[{count - 1}]", node)
        if isinstance(node, _inputs.Static):
            text = _literal(node.value)
            if text is None:
                raise _NoPlainForm
            return text
        if isinstance(node, dict):
            return "{" + ", ".join(f"{_literal(k)}: {render(node[k])}" for k in sorted(node)) + "}"
        if isinstance(node, (list, tuple)):
            items = [render(v) for v in node]
            if isinstance(node, list):
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        raise _NoPlainForm

    try:
        return "TARGET(" + ", ".join(render(_inputs.parse_arg(t)) for t in arg_texts) + ")"
    except (_NoPlainForm, UsageError, ValueError, TypeError):
        return None
