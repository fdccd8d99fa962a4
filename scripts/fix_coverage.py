"""How many bad samples get a verified diff and a verified repro script (the figures in docs/fixes.md).

For every `samples/jx*_bad.py` that reports an error or warning under `jaxdiag check`, on a scratch copy:

- **diff**: every error/warning carries a verified fix, and the sample patched with them checks clean;
- **repro**: one script per error/warning, each failing on the sample as it is and, where the sample has a
  verified diff, passing on the patched copy.

    python scripts/fix_coverage.py [NAME ...] [--json FILE]     # one fresh process per sample

A sample runs in its own interpreter (`--one NAME`), so one sample's state never reaches another and a hang costs
only that sample. The `jaxdiag` imported is the one first on `sys.path` (set PYTHONPATH to measure another tree).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FFI = {"jxb020", "jxb021", "jxb022"}
_WITH_FFI = ("import runpy, sys; sys.path.insert(0, {tests!r}); import ffi_build; ffi_build.register(); "
             "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def _run_script(script: str, *args: str, ffi: bool) -> tuple[int, str]:
    prefix = ["-c", _WITH_FFI.format(tests=str(ROOT / "tests"))] if ffi else []
    try:
        done = subprocess.run([sys.executable, *prefix, script, *args], capture_output=True, text=True, timeout=300,
                              check=False)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    # the whole stderr: the `Traceback` header is at its start, the assertion at its end
    return done.returncode, done.stderr


def measure_one(name: str) -> dict:
    from jaxdiag import _fixes
    from jaxdiag._jobs import _lint
    from jaxdiag._evidence import _repro

    ffi = name in FFI
    if ffi:
        sys.path.insert(0, str(ROOT / "tests"))
        import ffi_build  # noqa: PLC0415 - the FFI samples' kernels, registered by name

        ffi_build.register()
        from fix_samples import ffi_script_prefix

        _repro.SCRIPT_PREFIX[:] = ffi_script_prefix()  # the verification runs of fixes and scripts
    scratch = Path(tempfile.mkdtemp(prefix="jaxdiag-cov-"))
    folder = scratch / "samples"
    folder.mkdir()
    for support in ("__init__.py", "ffi_kernels.cc", f"{name}_bad.py"):
        if (SAMPLES / support).exists():
            shutil.copy(SAMPLES / support, folder / support)
    os.chdir(scratch)
    report = _lint.check_paths([f"samples/{name}_bad.py"], fixes=True)
    problems = [f for f in report.findings if f.severity in ("error", "warning")]
    out: dict = {"name": name, "problems": [f.code for f in problems]}
    if not problems:
        return out
    verified = [f.code for f in problems if f.fix_verified]
    out["verified"] = verified
    fixed = None
    if len(verified) == len(problems):
        source = (folder / f"{name}_bad.py").read_text()
        edits = [e for fix in _fixes.verified_fixes(report) for e in fix.edits]
        fixed = folder / f"{name}_fixed.py"
        fixed.write_text(_fixes.apply_edits(source, _fixes._edits.dedupe(edits)))
        after = _lint.check_paths([f"samples/{fixed.name}"])
        left = [f.code for f in after.findings if f.severity in ("error", "warning")]
        out["left_after_fix"] = left
        if left:
            fixed = None
    out["diff"] = fixed is not None
    scripts = _repro.write_all(report, str(scratch / "repro"), _fixes.fixed_sources)
    out["scripts"] = len(scripts)
    failures = []
    for script in scripts:
        rc, err = _run_script(script, ffi=ffi)
        if rc == 0 or "Traceback" not in err:
            failures.append(f"{Path(script).name} passes (or hangs) on the bad sample")
        if fixed is not None:
            rc, err = _run_script(script, str(fixed), ffi=ffi)
            if rc != 0:
                failures.append(f"{Path(script).name} fails on the fixed copy: {err.strip().splitlines()[-1:]}")
    out["repro_failures"] = failures
    out["repro"] = len(scripts) == len(problems) and not failures
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--one")
    parser.add_argument("--json")
    opts = parser.parse_args()
    if opts.one:
        print("RESULT " + json.dumps(measure_one(opts.one)), flush=True)
        os._exit(0)  # noqa: SLF001 - skip JAX's teardown
    names = opts.names or sorted(p.name[:-len("_bad.py")] for p in SAMPLES.glob("jx*_bad.py"))
    results = []
    for name in names:
        start = time.time()
        try:
            done = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True,
                                  timeout=1200, check=False)
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
            result = json.loads(line[7:]) if line else {"name": name, "error": done.stderr[-600:]}
        except subprocess.TimeoutExpired:
            result = {"name": name, "error": "timeout"}
        result["seconds"] = round(time.time() - start, 1)
        results.append(result)
        print(json.dumps(result), flush=True)
    counted = [r for r in results if r.get("problems")]
    print(f"bad samples with an error or warning: {len(counted)}")
    print(f"verified diff (clean after applying): {sum(bool(r.get('diff')) for r in counted)}")
    print(f"verified repro (fails as is, passes fixed): {sum(bool(r.get('repro')) for r in counted)}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
