"""Which bad samples' fixes are local edits, shared by test_fixes.py (verified diffs) and test_views.py (repro
scripts after the fix): test modules do not import each other."""

from __future__ import annotations

# Samples whose ffi_call targets come from samples/ffi_kernels.cc (tests/ffi_build.py builds and registers them).
FFI_CALL_SAMPLES = {"jxb020", "jxb021", "jxb022"}

# Bad samples whose fix is a local edit: a return statement, a keyword argument, a missing or platform-bound
# registration call, or an edit derived from the evidence (a constant factor, a moveaxis, the operands' batch axes,
# an unbroadcast unbatched output, a dropped cast). Each must get a verified diff.
FIXABLE = ["jxb001", "jxb002", "jxb003", "jxb004", "jxb005", "jxb006", "jxb007", "jxb008", "jxb009", "jxb011",
           "jxb020", "jxb021", "jxb022", "jxg001", "jxg003", "jxg004", "jxg010", "jxg012", "jxg013", "jxn013",
           "jxr001", "jxr003", "jxr004", "jxr005", "jxr008", "jxr015", "jxv001", "jxv002", "jxv003", "jxv005"]


def ffi_script_prefix() -> list[str]:
    """The interpreter arguments that run a repro script after registering the FFI samples' kernels (a user's
    program registers its kernels the same way before calling them): `_repro.SCRIPT_PREFIX` in those tests."""
    from pathlib import Path

    tests = str(Path(__file__).resolve().parent)
    return ["-c", f"import runpy, sys; sys.path.insert(0, {tests!r}); import ffi_build; ffi_build.register(); "
                  "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"]
