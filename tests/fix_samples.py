"""Which bad samples' fixes are local edits, shared by test_fixes.py (verified diffs) and test_views.py (repro
scripts after the fix): test modules do not import each other."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxdiag._rules import Rule

# Samples whose ffi_call targets come from samples/ffi_kernels.cc (tests/ffi_build.py builds and registers them).
FFI_CALL_SAMPLES = {"jxb020", "jxb021", "jxb022"}


def _owners() -> dict[str, "Rule"]:
    """Each bad sample's rule: the one whose code names the sample (`jxb001_bad.py` is JXB001's)."""
    from pathlib import Path

    from jaxdiag._rules import RULES

    names = sorted(p.name[:6] for p in (Path(__file__).resolve().parent.parent / "samples").glob("jx*_bad.py"))
    return {name: RULES[name.upper()] for name in names}


OWNERS = _owners()
# Generated from the catalog: a bad sample whose rule names no design decision (`Rule.decision`) has a fix jaxdiag
# computes from the evidence (a return statement, a keyword argument, a missing or platform-bound registration
# call, a constant factor, a moveaxis, the operands' batch axes, an unbroadcast unbatched output, a dropped cast):
# each must get a verified diff. The others keep a text fix naming the decision.
FIXABLE = [name for name, rule in OWNERS.items() if not rule.decision]
TEXT_ONLY = {name: rule.decision for name, rule in OWNERS.items() if rule.decision}


def ffi_script_prefix() -> list[str]:
    """The interpreter arguments that run a repro script after registering the FFI samples' kernels (a user's
    program registers its kernels the same way before calling them): `_repro.SCRIPT_PREFIX` in those tests."""
    from pathlib import Path

    tests = str(Path(__file__).resolve().parent)
    return ["-c", f"import runpy, sys; sys.path.insert(0, {tests!r}); import ffi_build; ffi_build.register(); "
                  "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"]
