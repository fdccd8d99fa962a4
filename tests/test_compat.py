"""Every supported JAX release (0.5.0 to the newest): what `_compat` detects, and that a defect an old release
cannot show is reported as JXN003 rather than passing silently."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import jax.extend.core  # used as `jax.extend.core.Primitive`: jaxdiag itself no longer imports it
import jaxlib
import numpy as np
import jax.numpy as jnp
import pytest
from jax.interpreters import batching
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

import jaxdiag
from jaxdiag import _compat
from jaxdiag._parent._cli import app

ROOT = Path(__file__).resolve().parent.parent
HAS_NOT_MAPPED = ("jax.interpreters.batching", "not_mapped") in _compat.removed_apis_still_here()


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"_compat_test_{name}", ROOT / "samples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_version_prints_jax_and_jaxlib():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert f"jax {jax.__version__}" in result.output and f"jaxlib {jaxlib.__version__}" in result.output


def test_removed_apis_are_detected_by_feature_not_version():
    """`removed_apis_still_here` follows `hasattr`, whatever the release number says."""
    assert HAS_NOT_MAPPED == hasattr(batching, "not_mapped")
    for module, attr in _compat.removed_apis_still_here():
        assert attr in _compat.REMOVED_IN_NEWER_JAX[module]


def test_removed_api_uses_reads_attribute_chains_and_nested_functions():
    if not HAS_NOT_MAPPED:
        pytest.skip("batching.not_mapped is gone on this release: rules using it raise, and JXR008 reports it")
    import jax.interpreters.batching as b  # noqa: F401 - an alias in the globals

    def rule(args, dims):
        def inner(d):
            return d is jax.interpreters.batching.not_mapped

        return inner(dims[0]), b.not_mapped

    uses = _compat.removed_api_uses(rule)
    assert [(m, a) for m, a, _, _ in uses] == [("jax.interpreters.batching", "not_mapped")]
    assert uses[0][2] is not None and uses[0][3].startswith("use `None`")


def test_removed_api_uses_ignores_current_apis_and_jax_own_code():
    def rule(args, dims):
        return batching.bdim_at_front(args[0], dims[0], 3), jnp.moveaxis(args[0], 0, 1)

    assert _compat.removed_api_uses(rule) == []
    assert _compat.removed_api_uses(batching.defvectorized) == []


def test_bad_sample_reports_jxr008_or_says_why_not():
    """The defect shows as JXR008 where the internal is gone, and as a JXN003 note where it still exists."""
    m = load("jxr008_bad")
    report = jaxdiag.check_batching(m.weighted_p, "f32[4,3]", "f32[3]")
    codes = {f.code for f in report.findings}
    if HAS_NOT_MAPPED:
        note = next(f for f in report.findings if f.code == "JXN003")
        assert note.severity == "info" and "JXR008" in note.message and "not_mapped" in note.message
        assert note.location is not None and note.location.function == "_weighted_batching"
        assert report.ok  # a note, not a failure: the rule is correct on this release
        check = next(c for t in report.targets for c in t.checks if c.name == "removed-api")
        assert check.status == "skipped"
    else:
        assert "JXR008" in codes and "JXN003" not in codes


def test_good_sample_gets_no_note():
    m = load("jxr008_good")
    report = jaxdiag.check_batching(m.weighted_p, "f32[4,3]", "f32[3]")
    assert "JXN003" not in {f.code for f in report.findings}


def test_generic_batcher_is_recognised_on_every_release():
    """`defvectorized` lands in `primitive_batchers` on jax <= 0.7 and in the fancy table on newer releases."""
    m = load("jxr006_bad")  # registers softsign with batching.defvectorized
    assert _compat.generic_batcher_name(m.softsign_p) == "defvectorized"


def test_vmap_method_none_behaviour_matches_the_release():
    """jax 0.5 loops sequentially (with a DeprecationWarning) where newer releases raise: detected by trying."""
    import warnings

    import numpy as np

    def f(x):
        return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method=None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            jax.vmap(f)(np.zeros((2, 1), np.float32))
            raised = False
        except NotImplementedError:
            raised = True
    assert _compat.vmap_method_none_raises() == raised


def test_scripts_cover_every_rule_with_a_bad_sample():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from jax_says import JAX_SAYS
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    # a variant (the same defect in another command) shares its base rule's sample and repro, unless it has its own
    with_samples = {code for code, r in jaxdiag.RULES.items() if r.has_own_samples}
    assert with_samples == set(JAX_SAYS), (sorted(with_samples - set(JAX_SAYS)), sorted(set(JAX_SAYS) - with_samples))


def test_readme_table_helpers():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from docs_tables import first_line, first_sentence
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert first_sentence("max abs 5.15 at (3, 3): got -2.7. Also differs for `x`.") == \
        "max abs 5.15 at (3, 3): got -2.7."
    assert first_sentence("calls `f. G` here. Then") == "calls `f. G` here."
    assert first_line(ValueError("Cannot lower:\n  op mismatch\n  more")) == "ValueError: Cannot lower: op mismatch"
    assert first_line(TypeError(f"Argument {[jnp.ones((2, 2))]!r} is not valid")) == \
        "TypeError: Argument [Array(…)] is not valid"


def _bilinear(name: str, lhs_scale: float):
    from jax.core import ShapedArray
    from jax.extend.core import Primitive
    from jax.interpreters import ad, mlir

    prim = Primitive(name)
    prim.def_impl(lambda a, b: a * b)
    prim.def_abstract_eval(lambda a, b: ShapedArray(a.shape, a.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(lambda a, b: a * b, multiple_results=False))
    batching.defbroadcasting(prim)
    ad.defbilinear(prim, lambda ct, x, y: lhs_scale * ct * y, lambda ct, x, y: ct * x)
    return prim


@pytest.mark.slow
@pytest.mark.parametrize("scale,wrong", [(1.0, False), (2.0, True)])
def test_defbilinear_transpose_is_checked_on_every_release(scale, wrong):
    """jax >= 0.7 runs `ad.defbilinear` transposes through `fancy_transposes`; the spy must still see them."""
    prim = _bilinear(f"compat_bilinear_{int(scale)}", scale)
    fancy = dict(getattr(_compat._ad, "fancy_transposes", {}))
    report = jaxdiag.check_grad(prim, "f32[3]", "f32[3]")
    assert ("JXG002" in {f.code for f in report.findings}) == wrong, report.findings
    assert getattr(_compat._ad, "fancy_transposes", {}) == fancy  # put back as found


def test_masked_nonfinite_finds_the_select_hiding_an_inf():
    """The where trap, read from a traced program: `jnp.where(x > 0, 1 / x, 0)` hides inf at x = 0 (its line is
    reported); the double-where form hides nothing."""
    def trapped(x):
        return jnp.where(x > 0, 1.0 / x, 0.0)

    def safe(x):
        return jnp.where(x > 0, 1.0 / jnp.where(x > 0, x, 1.0), 0.0)

    x = jnp.array([0.0, 2.0])
    (hit,) = _compat.masked_nonfinite(jax.make_jaxpr(trapped)(x), [x])
    assert hit.line == trapped.__code__.co_firstlineno + 1 and hit.path == __file__
    assert hit.index == (0,) and hit.hidden == complex(np.inf) and hit.chosen == 0 and (hit.count, hit.size) == (1, 2)
    assert _compat.masked_nonfinite(jax.make_jaxpr(safe)(x), [x]) == []


def test_masked_nonfinite_names_this_select_not_the_first_trace_of_jnp_where():
    """`jnp.where` runs a cached jit: its inner select records the user line of its first trace. A second function's
    select is named at its own line (jax 0.5 kept the first caller's line there)."""
    def first(x):
        return jnp.where(x > 0, 1.0 / x, 0.0)

    def second(x):
        return jnp.where(x > 1, 2.0 / x, 0.0)

    x = jnp.array([0.0, 2.0])
    _compat.masked_nonfinite(jax.make_jaxpr(first)(x), [x])
    (hit,) = _compat.masked_nonfinite(jax.make_jaxpr(second)(x), [x])
    assert hit.line == second.__code__.co_firstlineno + 1 and hit.function.endswith("second")


def test_builtin_answer_is_read_again_when_a_rule_is_registered_or_removed():
    # the answer is kept per primitive (asked for every equation of a traced program), with the registry entries it
    # was read from: registering a user rule, or removing it, changes the answer at once
    prim = jax.extend.core.Primitive("jaxdiag_test_late_rule")
    assert _compat.is_builtin_primitive(prim)  # no rule of the user's: nothing to check
    batching.primitive_batchers[prim] = lambda args, dims: (args[0], dims[0])
    try:
        assert not _compat.is_builtin_primitive(prim)
        assert not _compat.is_builtin_primitive(prim)  # kept, the same
    finally:
        del batching.primitive_batchers[prim]
    assert _compat.is_builtin_primitive(prim)
    prim.def_impl(lambda x: x)
    assert not _compat.is_builtin_primitive(prim)
    assert _compat.is_builtin_primitive(jax.lax.sin_p)


def test_the_operands_of_an_equation_inside_calls_are_computed_by_one_program_and_not_inside_a_loop():
    """What a primitive bound by a derivative rule receives (`_record_carrier._jvp_subjects`): evaluated up to
    that equation under jit, through jit and custom_jvp calls; inside a loop its operands differ per iteration."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdiag import _compat

    @jax.custom_jvp
    def cube(x):
        return x ** 3

    @cube.defjvp
    def cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube(x), 3.0 * jnp.sin(x) * t  # the equation looked for: sin of the primal inside the JVP rule

    def f(x):
        y = jax.jit(lambda v: v * 2.0)(x)
        return jax.lax.fori_loop(0, 3, lambda i, c: jnp.cos(c), cube(y))

    x = jnp.array([0.1, 0.2], jnp.float32)
    traced = jax.make_jaxpr(lambda v: jax.jvp(f, (v,), (v,)))(x)
    sin = next(e for e in _compat.iter_eqns(traced) if e.primitive.name == "sin")
    assert _compat.reaches_operands(traced, sin)
    (operand,) = _compat.operands_at(traced, sin, [x])
    np.testing.assert_allclose(operand, 2.0 * np.asarray(x))
    cos = next(e for e in _compat.iter_eqns(traced) if e.primitive.name == "cos")
    assert not _compat.reaches_operands(traced, cos)  # in the loop's body
    assert _compat.operands_at(traced, cos, [x]) is None


def _refuses(x):
    raise ValueError("refused")


def _filtered_frames() -> list[tuple[str, str]]:
    try:
        jax.vmap(_refuses)(jnp.ones(3))
    except ValueError as exc:
        import traceback

        return [(f.filename, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    raise AssertionError("the rule ran")


def test_a_run_asks_jax_traceback_filter_once_per_file_keeps_its_frames_and_restores_it_even_on_error():
    from jax._src import traceback_util

    own = traceback_util.include_frame
    expected = _filtered_frames()
    assert not any("/jax/_src/" in name for name, _ in expected)  # JAX did filter its own frames out
    asked: list[str] = []
    counting = lambda frame: asked.append(frame.f_code.co_filename) or own(frame)  # noqa: E731
    traceback_util.include_frame = counting
    try:
        with pytest.raises(RuntimeError, match="stop"), _compat.run_scope():
            memo = traceback_util.include_frame
            with _compat.run_scope():  # a run inside a run keeps the one memo
                assert traceback_util.include_frame is memo
            assert _filtered_frames() == expected and _filtered_frames() == expected
            assert asked and len(asked) == len(set(asked))  # each file asked once, over both exceptions
            raise RuntimeError("stop")
        assert traceback_util.include_frame is counting
    finally:
        traceback_util.include_frame = own


def test_a_run_silences_jax_callback_traceback_log_keeps_the_exception_and_restores_the_level_even_on_error(caplog):
    """Input inference calls a user's pure_callback on inputs it refuses, many times: JAX logged every traceback on
    the user's terminal. Inside a run the exception still reaches the caller, the log stays silent, and the logger's
    level is back afterwards."""
    import logging

    import jax
    import numpy as np

    def refuse(x):
        raise ValueError("refused")

    logger = logging.getLogger("jax._src.callback")
    level = logger.level
    call = lambda: jax.pure_callback(refuse, jax.ShapeDtypeStruct((2,), np.float32), np.ones(2, np.float32))  # noqa: E731
    with pytest.raises(RuntimeError, match="stop"), _compat.run_scope():
        with pytest.raises(Exception, match="refused"):
            jax.block_until_ready(call())
        raise RuntimeError("stop")
    assert not [r for r in caplog.records if "pure_callback failed" in r.getMessage()], caplog.records
    assert logger.level == level
    with pytest.raises(Exception, match="refused"):  # outside a run, JAX's own logging as before
        jax.block_until_ready(call())
    assert [r for r in caplog.records if "pure_callback failed" in r.getMessage()]


def test_a_failed_host_callback_is_recognised_in_both_jaxlib_wordings():
    """jaxlib 0.5 says "CpuCallback error: TypeError: ...", newer ones "CpuCallback error calling callback:
    Traceback ..."; the fix then names the callback (JXG016 on jax 0.5.3 named NumPy on tangents before)."""
    from jaxdiag import _compat

    class XlaRuntimeError(RuntimeError):
        pass

    XlaRuntimeError.__module__ = "jaxlib.xla_extension"
    old = XlaRuntimeError("INTERNAL: CpuCallback error: TypeError: n must be a non-negative integer")
    new = XlaRuntimeError("INTERNAL: CpuCallback error calling callback: Traceback (most recent call last):")
    assert _compat.is_callback_failure(old) and _compat.is_callback_failure(new)
    assert not _compat.is_callback_failure(XlaRuntimeError("INTERNAL: out of memory"))
    assert not _compat.is_callback_failure(RuntimeError("CpuCallback error: from user code"))


def test_a_removed_name_is_read_from_an_attribute_or_an_import_as_an_exception_or_as_its_text():
    """One reader for the rules' failures (an exception) and for an import failure (its `Kind: message` text in a
    traceback): `jax.core.Primitive` as an attribute, `from jax.lib import xla_client` as an import."""
    from jaxdiag._checks._shared import removed_api

    attribute = "module 'jax.core' has no attribute 'Primitive'"
    imported = "cannot import name 'xla_client' from 'jax.lib' (/site-packages/jax/lib/__init__.py)"
    assert removed_api(AttributeError(attribute)) == ("jax.core", "Primitive")
    assert removed_api(ImportError(imported)) == ("jax.lib", "xla_client")
    assert removed_api(f"pkg/ops.py:3: AttributeError: {attribute}\n") == ("jax.core", "Primitive")
    assert removed_api(f"Traceback ...\nImportError: {imported}") == ("jax.lib", "xla_client")
    assert removed_api(ImportError("cannot import name 'trapz' from 'numpy'")) is None  # not JAX's
    assert removed_api(ValueError(attribute)) is None and removed_api(f"ValueError: {attribute}") is None
    # a module JAX no longer has (`from jax.config import config`), as an exception or in a traceback's text
    assert removed_api(ModuleNotFoundError("No module named 'jax.config'")) == ("jax", "config")
    assert removed_api("pkg/fem.py:15: ModuleNotFoundError: No module named 'jax.experimental.optimizers'") == (
        "jax.experimental", "optimizers")
    assert removed_api(ModuleNotFoundError("No module named 'jaxlib_extra'")) is None  # a dependency, not JAX
    assert removed_api(ModuleNotFoundError("No module named 'jax'")) is None


def test_a_module_of_jax_this_jax_lacks_is_a_removed_api_at_import_never_a_missing_dependency(tmp_path):
    """`from jax.config import config` at the top of a package's module: ModuleNotFoundError naming a `jax` module.
    It was "optional dependency 'jax' is not installed" (JXN011, a note); it is JXR008 at that line, with the import
    that works now (`jax.config` is an attribute of `jax`)."""
    from jaxdiag._jobs._lint import check_paths

    package = tmp_path / "oldfem"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("import jax.numpy as jnp\nfrom jax.config import config\n"
                                     "config.update('jax_enable_x64', True)\n")
    report = check_paths([str(package)], app_dir=str(tmp_path), keep_going=True)
    codes = {(f.code, f.severity) for f in report.findings}
    assert ("JXR008", "error") in codes and not any(code == "JXN011" for code, _ in codes), codes
    (finding,) = [f for f in report.findings if f.code == "JXR008"]
    assert finding.location is not None and finding.location.line == 2
    assert "from jax import config" in finding.fix


def test_a_rule_importing_a_removed_jax_name_is_that_apis_finding():
    """A batching rule doing `from jax.interpreters.batching import <gone>` at call time: JXR008 with the name,
    not a rule that raised."""
    import textwrap
    import types

    source = textwrap.dedent('''
        import jax.numpy as jnp
        from jax.extend.core import Primitive
        from jax.interpreters import batching

        double_p = Primitive("double_gone")
        double_p.def_impl(lambda x: 2 * x)
        double_p.def_abstract_eval(lambda x: x)

        def _double_batch(args, dims):
            from jax.interpreters.batching import no_such_helper_anymore
            return double_p.bind(args[0]), dims[0]

        batching.primitive_batchers[double_p] = _double_batch
    ''')
    module = types.ModuleType("removed_import_rule")
    exec(compile(source, "removed_import_rule.py", "exec"), module.__dict__)
    report = jaxdiag.check_batching(module.double_p, "f32[3]")  # a fresh primitive: nothing else sees its rule
    found = [f for f in report.findings if f.code == "JXR008"]
    assert found and "no_such_helper_anymore" in found[0].message, [f.code for f in report.findings]
