"""Settings for every test: a pinned terminal, the two tiers, and the compiled FFI sample kernels.

Tiers: `python -m pytest` runs the fast tier (tests marked `slow` are deselected); `python -m pytest -m slow` runs
only the slow tier, and `JAXDIAG_SLOW=1 python -m pytest` (or any `-m` expression, or a test named by its node id)
runs everything selected. `.ci/run` runs both tiers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

# Pin the terminal before rich or typer look at it: reports wrap at one known width and carry no colour, whatever
# the developer's terminal or the CI runner sets (COLUMNS=100, FORCE_COLOR, ...).
os.environ["COLUMNS"] = "80"
os.environ["NO_COLOR"] = "1"
for _name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JAXDIAG_DEBUG"):
    os.environ.pop(_name, None)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # helpers (ffi_build, markers, clirun) import by name


# Expensive tests (over ~1 s each on an idle machine) that the fast tier leaves to the slow tier, listed here by node
# id (rather than with a marker in each file) so that the tier is tuned in one place. Each one covers a detail
# (a message's wording, a second variant, a fix's verification, a process boundary) of a feature the fast tier still
# runs. The fast tier runs every JXB/JXG/JXR/JXV rule's bad sample and the JXB rules' good samples; the JXG good
# samples (checked to second order) and most JXS pairs run in the slow tier only, which CI runs too.
# `python -m pytest -q --durations=30` shows the next candidates.
SLOW_NODE_IDS = frozenset({
    # ffi / pure_callback: one bad and one good kernel sample per rule (JXB020-022) and two callbacks stay fast
    "tests/test_ffi.py::test_not_batch_aware_message",
    "tests/test_ffi.py::test_kernel_bad_sample_fires_at_the_ffi_call[jxb021_bad.py:add_bias]",
    "tests/test_ffi.py::test_kernel_bad_sample_fires_at_the_ffi_call[jxb021_bad.py:cumsum_rows_expand]",
    "tests/test_ffi.py::test_kernel_good_sample_is_clean[jxb021_good.py:add_bias]",
    "tests/test_ffi.py::test_kernel_good_sample_is_clean[jxb021_good.py:cumsum_rows_sequential]",
    "tests/test_ffi.py::test_call_inside_jit_is_found_and_the_traced_jaxpr_is_not_modified",
    "tests/test_ffi.py::test_function_without_foreign_calls_skips",
    "tests/test_ffi.py::test_pure_callback[_flat-legacy_vectorized]",
    "tests/test_ffi.py::test_pure_callback[_flat-expand_dims]",
    "tests/test_ffi.py::test_pure_callback[_rows-None]",
    "tests/test_ffi.py::test_pure_callback[_rows-expand_dims]",
    "tests/test_ffi.py::test_pure_callback[_rows-legacy_vectorized]",
    # verdicts: the samples behind these run in the slow tier's sample table too
    "tests/test_verdicts.py::test_mismatch_that_persists_with_sequential_callbacks_is_reported",
    "tests/test_verdicts.py::test_module_and_path_spellings_give_identical_reports",
    "tests/test_verdicts.py::test_plain_jax_complex_vjp_pairs_bilinearly",
    "tests/test_verdicts.py::test_transpose_bug_only_in_vjp_of_vmap_is_reported_at_the_transpose_rule",
    "tests/test_verdicts.py::test_list_returning_wrapper_is_clean_unless_a_tuple_out_axes_is_used",
    "tests/test_verdicts.py::test_complex_custom_vjp_following_jax_is_clean[loss-c64[3]]",
    # fixes: the fast tier keeps one verified diff (jxb004) and one measured batch axis
    "tests/test_fixes.py::test_unverified_fix_stays_text",
    "tests/test_fixes.py::test_fwd_calling_the_custom_vjp_is_located_at_fwd",
    "tests/test_fixes.py::test_fixes_never_mention_constructs_absent_from_the_code",
    "tests/test_fixes.py::test_defvectorized_on_a_non_elementwise_primitive_is_located_at_the_registration",
    "tests/test_fixes.py::test_fix_names_the_measured_batch_axis[swapaxes_rule]",
    "tests/test_fixes.py::test_error_in_a_helper_is_located_in_the_rule",
    "tests/test_fixes.py::test_wrong_values_are_not_blamed_on_the_dim",
    # inputs, views, CLI details
    "tests/test_inputs_signatures.py::test_prng_key_argument_is_checked",
    "tests/test_inputs_signatures.py::test_pytree_argument_custom_vjp_with_a_wrong_leaf_cotangent_is_found",
    "tests/test_views.py::test_repro_states_expected_and_actual",
    "tests/test_views.py::test_show_jaxpr_with_list_out_axes",
    "tests/test_foundation.py::test_python_dash_m_reports_errors_without_traceback",
    "tests/test_fault_injection.py::test_a_renderer_that_raises_exits_3",
    "tests/test_parallel.py::test_a_module_edited_after_this_process_imported_it_is_never_cached",
    "tests/test_harness.py::test_a_user_rule_that_raises_is_still_the_user_finding",
    "tests/test_grad.py::test_fixed_seeds_are_clean[seed_jvp.py]",
    "tests/test_fault_injection.py::test_api_report_fails_and_raises[catalog]",
    "tests/test_verdicts.py::test_wrong_sign_or_formula_is_an_error[tanh_c-f32[4]]",
    "tests/test_registration.py::test_missing_abstract_eval_fix_computes_shapes_from_inputs",
    "tests/test_harness.py::test_jax_state_is_restored_around_representative_samples[jxv002_bad.py]",
    "tests/test_foundation.py::test_report_does_not_depend_on_the_checkout_folder",
    # details whose feature keeps a cheaper fast test (the samples behind them run in the slow sample table)
    "tests/test_inputs_discovery.py::test_a_helper_librarys_wrapper_object_is_dated_by_the_users_function",
    "tests/test_batching.py::test_rule_fires_on_bad_sample[JXB011-standardize]",
    "tests/test_verdicts.py::test_index_rule_wrong_only_out_of_range_is_caught_and_its_fix_is_clean",
    "tests/test_verdicts.py::test_clipping_and_straight_through_stay_warnings[clipped_sin-JXG014-warning]",
    "tests/test_verdicts.py::test_primitive_bound_only_under_jit_is_not_called_eagerly",
    "tests/test_verdicts.py::test_axis_primitive_batchers_rule_is_called_with_its_own_convention",
    "tests/test_fixes.py::test_defvectorized_with_unbatched_argument",
    "tests/test_plugin.py::test_guard_puts_back_what_a_leak_changed",
    "tests/test_speed_compiles.py::test_check_grad_of_a_small_primitive_compiles_at_most_11_programs",
    "tests/test_foundation.py::test_spec_round_trips",
    "tests/test_parallel.py::test_cache_hit_gives_the_same_report_without_checking_again",
    "tests/test_verdicts.py::test_a_value_dependent_finding_is_retried_and_reported_with_its_inputs",
    "tests/test_verdicts.py::test_nested_rule_is_not_perturbed_where_jax_never_perturbs_it",
    "tests/test_verdicts.py::test_integer_reduction_over_the_batch_axis_is_caught",
    # real-library false-alarm regressions (each a fixture of its own; the rules they touch keep their fast samples)
    "tests/test_verdicts.py::test_impl_written_with_jax_numpy_updates_gets_jax_arrays",
    "tests/test_verdicts.py::test_float8_output_gets_a_float8_cotangent_under_jit_grad",
    "tests/test_verdicts.py::test_rule_whose_primal_fails_on_the_example_is_not_a_symbolic_zero_finding",
    "tests/test_verdicts.py::test_jvp_output_with_none_and_integer_leaves_is_clean[use_record_zeros]",
    "tests/test_verdicts.py::test_jvp_output_with_none_and_integer_leaves_is_clean[use_solve_with_steps]",
})


# The test session's own JAX compilation cache: the tests check many small targets that compile the same small
# programs (the same operations on the same shapes) again and again, in both xdist workers; with a cache each is
# compiled once per session. A private folder made by the controlling process (the workers inherit its path through
# the environment), removed at the end of the session; JAX's flags are restored in every process. Loading a program
# gives the same executable as compiling it, so no verdict depends on it; tests that count compilations
# (test_speed_compiles.py) run without it.
_XLA_CACHE_ENV = "JAXDIAG_TEST_XLA_CACHE"
_session_cache = contextlib.ExitStack()
_made_cache_dir: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _made_cache_dir
    folder = os.environ.get(_XLA_CACHE_ENV)
    if folder is None:
        folder = _made_cache_dir = tempfile.mkdtemp(prefix="jaxdiag-test-xla-")
        os.environ[_XLA_CACHE_ENV] = folder
    if os.environ.get("PYTEST_XDIST_WORKER") is None and getattr(config.option, "numprocesses", None) not in (None, 0):
        return  # the xdist controller runs no test: it only owns the folder
    from jaxdiag import _compat

    _session_cache.enter_context(_compat.compilation_cache(folder))


def pytest_unconfigure(config: pytest.Config) -> None:
    _session_cache.close()
    if _made_cache_dir is not None:
        os.environ.pop(_XLA_CACHE_ENV, None)
        shutil.rmtree(_made_cache_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_compilation_cache_when_counting_compiles(request: pytest.FixtureRequest) -> Any:
    if request.node.path.name != "test_speed_compiles.py":
        yield
        return
    from jax.experimental.compilation_cache import compilation_cache as cache_api

    import jax

    saved = jax.config.jax_compilation_cache_dir
    cache_api.reset_cache()
    jax.config.update("jax_compilation_cache_dir", None)
    try:
        yield
    finally:
        jax.config.update("jax_compilation_cache_dir", saved)
        cache_api.reset_cache()


def _runs_slow(config: pytest.Config) -> bool:
    return (os.environ.get("JAXDIAG_SLOW") == "1" or bool(config.getoption("markexpr"))
            or any("::" in arg for arg in config.args))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.args or config.args == ["tests"]:  # the whole suite: every listed id must still name a test
        stale = SLOW_NODE_IDS - {item.nodeid for item in items}
        if stale:
            raise pytest.UsageError(f"tests/conftest.py SLOW_NODE_IDS names tests that do not exist: {sorted(stale)}")
    for item in items:
        if item.nodeid in SLOW_NODE_IDS:
            item.add_marker(pytest.mark.slow)
    if _runs_slow(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(autouse=True)
def _check_runs_in_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`jaxdiag check` invoked by a test runs its targets in the test's process (one job, no time limit) unless the
    test passes `-j`/`--timeout` itself: a worker process re-imports JAX and the user's modules, seconds per test,
    and these tests are about discovery, configuration and output, not about processes. test_parallel.py tests the
    workers and keeps the real defaults."""
    if request.node.path.name == "test_parallel.py":
        return
    from jaxdiag import _parallel

    monkeypatch.setattr(_parallel, "default_jobs", lambda: 1)
    monkeypatch.setattr(_parallel, "DEFAULT_TIMEOUT", 0.0)


@pytest.fixture(scope="session")
def ffi_kernels() -> None:
    """Compile samples/ffi_kernels.cc into a private build folder and register its targets (skip without a
    compiler): the JXB020-JXB022 samples call them by name."""
    import ffi_build

    try:
        ffi_build.register()
    except ffi_build.CompilerNotFound as exc:
        pytest.skip(str(exc))


def jax_state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two `_compat.snapshot_jax_state()` snapshots: entries that changed or disappeared.

    New registry entries are allowed (importing user modules registers their rules; JAX registers some of its own
    lazily on first use). Everything else must be the same object or an equal value.
    """
    changes: list[str] = []

    def table(name: str, old: dict, new: dict) -> None:
        for key, value in old.items():
            if key not in new:
                changes.append(f"{name}[{getattr(key, 'name', key)}] removed")
            elif isinstance(value, dict) and isinstance(new[key], dict):
                table(f"{name}[{key}]", value, new[key])
            elif new[key] is not value and new[key] != value:
                changes.append(f"{name}[{getattr(key, 'name', key)}] changed")

    for name, value in before.items():
        if isinstance(value, dict):
            table(name, value, after[name])
        elif after[name] is not value and after[name] != value:
            changes.append(f"{name} changed")
    return changes


# ---------------------------------------------------------------------------------------------------------------
# The supervisor in tests. The CLI runs every command's checks in a child process (`jaxdiag/_supervisor.py`). Most
# CLI tests are about parsing, rendering and exit codes, and many patch jaxdiag's internals (a probe check, a
# failing renderer) in this process: for them the child's command runs here (the same `_child.COMMANDS` function,
# without the process boundary). Tests of the boundary itself are marked `supervised` and get real children.
# ---------------------------------------------------------------------------------------------------------------


def run_here(job: Any, timeout: float | None = None, progress: Any = None) -> Any:
    """`_supervisor.run` without the child: the same command function, in this process, every target in it."""
    from jaxdiag import _child, _supervisor

    if isinstance(job.request, dict) and "isolate" in job.request:
        job.request = {**job.request, "isolate": False}
    try:
        payload = _child.COMMANDS[job.command](job, lambda message: None)
    except _supervisor.UsageError as exc:
        payload = {"usage_error": str(exc)}
    return _supervisor.answer_of(job, payload)


@pytest.fixture(autouse=True)
def _supervisor_in_this_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("supervised") is None:
        from jaxdiag import _supervisor

        monkeypatch.setattr(_supervisor, "run", run_here)
