"""Which bad samples' fixes are local edits, shared by test_fixes.py (verified diffs) and test_views.py (repro
scripts after the fix): test modules do not import each other."""

from __future__ import annotations

# Samples whose ffi_call targets come from samples/ffi_kernels.cc (tests/ffi_build.py builds and registers them).
FFI_CALL_SAMPLES = {"jxb020", "jxb021", "jxb022"}

# Bad samples whose fix is a local edit: a return statement, a keyword argument, a missing or platform-bound
# registration call. Each must get a verified diff.
FIXABLE = ["jxb001", "jxb002", "jxb004", "jxb005", "jxb007", "jxb008", "jxb009", "jxb011", "jxb020", "jxb021",
           "jxb022", "jxg003", "jxg010", "jxg013", "jxn013", "jxr001", "jxr003", "jxr004", "jxr005", "jxr008", "jxr015",
           "jxv001", "jxv002"]
