"""Targets that cannot run on this platform (a GPU-only kernel on a CPU machine) are checked abstractly: their rules
are traced with `jax.eval_shape`, structural defects get their normal codes, and one JXN013 note per target says
that values were not compared."""

from __future__ import annotations

import textwrap

import pytest
from markers import expect_line

import jaxdiag
from jaxdiag import _compat
from jaxdiag._rules import SAMPLES_DIR
from jaxdiag._loading._targets import load_target

BAD = f"{SAMPLES_DIR / 'jxn013_bad.py'}:scale_rows_p"
GOOD = f"{SAMPLES_DIR / 'jxn013_good.py'}:scale_rows_p"
GPU_ONLY = f"{SAMPLES_DIR / 'gpu_only_kernel.py'}:scale_rows_p"
ARGS = ("f32[5,3]", "f32[3]")


def codes(report: jaxdiag.Report, severity: str | None = None) -> list[str]:
    return [f.code for f in report.findings if severity is None or f.severity == severity]


def ran(report: jaxdiag.Report) -> set[str]:
    return {c.name for t in report.targets for c in t.checks if c.status in ("passed", "failed")}


def test_a_wrong_batch_dim_of_a_gpu_only_kernel_is_found_without_running_it():
    report = jaxdiag.check_all(BAD, *ARGS)
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]
    assert codes(report, "error") == ["JXB004"], report.findings
    finding = next(f for f in report.findings if f.code == "JXB004")
    assert finding.location is not None and finding.location.line == expect_line("jxn013_bad.py", "JXB004")
    assert codes(report).count("JXN013") == 1
    assert "abstract-batching" in ran(report)
    # nothing that needs a value ran: no loop comparison, no impl check
    assert not ran(report) & {"batching-vs-loop", "registration-impl"}


def test_a_correct_gpu_only_kernel_passes_with_only_the_note():
    report = jaxdiag.check_all(GPU_ONLY, *ARGS)
    assert not report.internal_errors
    assert codes(report) == ["JXN013"], report.findings
    note = report.findings[0]
    assert note.severity == jaxdiag.RULES["JXN013"].severity == "info"
    assert "values not compared" in note.message.lower()
    assert "not found for platform cpu" in note.message  # the platform's own error, quoted
    assert "only for cuda" in note.message
    assert {"registration-abstract-eval", "abstract-batching"} <= ran(report)


def test_a_kernel_that_runs_here_is_compared_by_value_and_gets_no_note():
    report = jaxdiag.check_all(GOOD, *ARGS)
    assert "JXN013" not in codes(report)
    assert not [c for c in codes(report, "error")] and not codes(report, "warning"), report.findings
    assert "batching-vs-loop" in ran(report)


def test_lowering_platforms_are_read_from_the_registries():
    prim = load_target(GPU_ONLY).obj
    assert _compat.lowering_platforms(prim) == {"cuda"}
    assert _compat.accelerator_only_lowering(prim) == {"cuda"}
    portable = load_target(GOOD).obj
    assert _compat.accelerator_only_lowering(portable) == frozenset()


def test_a_user_error_is_not_mistaken_for_a_platform_error():
    assert not _compat.is_platform_error(ValueError("x must be positive"))
    assert _compat.is_platform_error(NotImplementedError(
        "MLIR translation rule for primitive 'k' not found for platform cpu"))


# A custom_vjp and a primitive with a JVP rule around a kernel lowered only for cuda: grad rules traced abstractly.
_GRAD_KERNELS = '''
    import jax
    import jax.numpy as jnp
    from jax.core import ShapedArray
    from jax.extend.core import Primitive
    from jax.interpreters import ad, mlir

    kernel_p = Primitive("kernel")
    kernel_p.def_impl(lambda x: jax.jit(kernel_p.bind)(x))
    kernel_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(kernel_p, mlir.lower_fun(lambda x: 2 * x, multiple_results=False), platform="cuda")
    ad.deflinear2(kernel_p, lambda ct, x: [kernel_p.bind(ct)])

    def _tangent(primals, tangents):
        (x,), (t,) = primals, tangents
        return kernel_p.bind(x), TANGENT

    wrong_jvp_p = Primitive("wrong_jvp")
    wrong_jvp_p.def_impl(lambda x: jax.jit(wrong_jvp_p.bind)(x))
    wrong_jvp_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(wrong_jvp_p, mlir.lower_fun(lambda x: 2 * x, multiple_results=False), platform="cuda")
    ad.primitive_jvps[wrong_jvp_p] = _tangent

    @jax.custom_vjp
    def doubled(x):
        return kernel_p.bind(x)

    def _fwd(x):
        return kernel_p.bind(x), None

    def _bwd(res, ct):
        return (COTANGENT,)

    doubled.defvjp(_fwd, _bwd)
'''


def _grad_module(tmp_path, name: str, tangent: str, cotangent: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(_GRAD_KERNELS).replace("COTANGENT", cotangent).replace("TANGENT", tangent))
    return str(path)


@pytest.mark.parametrize("target, code", [("doubled", "JXG010"), ("wrong_jvp_p", "JXG007")])
def test_wrong_derivative_shapes_of_gpu_only_kernels_are_found_abstractly(tmp_path, target, code):
    module = _grad_module(tmp_path, f"kernels_bad_{target}", "t[:1]", "ct[:1]")
    report = jaxdiag.check_all(f"{module}:{target}", "f32[4]")
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]
    assert code in codes(report, "error"), report.findings
    assert codes(report).count("JXN013") == 1


@pytest.mark.parametrize("target", ["doubled", "wrong_jvp_p", "kernel_p"])
def test_correct_derivative_rules_of_gpu_only_kernels_pass_abstractly(tmp_path, target):
    module = _grad_module(tmp_path, f"kernels_good_{target}", "kernel_p.bind(t)", "kernel_p.bind(ct)")
    report = jaxdiag.check_all(f"{module}:{target}", "f32[4]")
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]
    assert codes(report) == ["JXN013"], report.findings
    assert ran(report) & {"abstract-jvp", "abstract-vjp"}


def test_a_kernel_whose_ffi_target_has_no_handler_on_this_platform_is_checked_abstractly():
    """XLA finds no handler for a GPU build's FFI target on the host: the kernel cannot run here, which says nothing
    of its rules (a CPU-only machine checking a cuDSS binding)."""
    from pathlib import Path

    target = f"{Path(__file__).parent / 'data' / 'acc' / 'ffi_gpu_target.py'}:diagonal_solve_p"
    report = jaxdiag.check_all(target, "f32[3]", "f32[3]")
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]
    assert codes(report) == ["JXN013"], report.findings
    assert "jaxdiag_fixture_cuda_diagonal_solve" in report.findings[0].message  # XLA's own error, naming the target
    assert {"registration-abstract-eval", "abstract-batching"} <= ran(report)


# A kernel with an int32 status output beside its value, lowered only for cuda. Its JVP hands back the status itself
# as that output's tangent: an integer tangent where JAX's convention is float0, which grad, linearize and vjp treat
# as the zero it is (a kernel library's multi-output primitive does this); a status tangent of another shape is not.
_STATUS_KERNEL = '''
    import jax
    import jax.numpy as jnp
    from jax.core import ShapedArray
    from jax.extend.core import Primitive
    from jax.interpreters import ad, mlir

    status_p = Primitive("status_kernel")
    status_p.multiple_results = True
    status_p.def_impl(lambda x: jax.jit(status_p.bind)(x))
    status_p.def_abstract_eval(lambda x: (ShapedArray(x.shape, x.dtype), ShapedArray((2,), jnp.int32)))
    mlir.register_lowering(status_p, mlir.lower_fun(lambda x: (2 * x, jnp.zeros(2, jnp.int32)), multiple_results=True),
                           platform="cuda")

    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        value, status = status_p.bind(x)
        return (value, status), (status_p.bind(t)[0], STATUS_TANGENT)

    ad.primitive_jvps[status_p] = _jvp
'''


@pytest.mark.parametrize("status_tangent, expected", [("status", []), ("status[:1]", ["JXG007"])])
def test_an_integer_outputs_tangent_in_its_own_dtype_is_the_zero_jax_takes_it_for(tmp_path, status_tangent, expected):
    path = tmp_path / f"status_{len(status_tangent)}.py"
    path.write_text(textwrap.dedent(_STATUS_KERNEL).replace("STATUS_TANGENT", status_tangent))
    report = jaxdiag.check_all(f"{path}:status_p", "f32[4]")
    assert not report.internal_errors, [(c.name, c.detail) for c in report.internal_errors]
    assert codes(report, "error") == expected, report.findings
    assert "abstract-jvp" in ran(report)
