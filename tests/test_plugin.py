"""The pytest plugin: the `jaxdiag` fixture works in a user's test suite and leaves JAX's global state as it was."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax_state import snapshot_changes as jax_state_changes
from lint_fixture import FUNCS, PROBE, probe
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

from jaxdiag import _compat
from jaxdiag._run import _engine
from jaxdiag._parent._cli import app
from jaxdiag._render.text import render_plain
from jaxdiag._loading._targets import load_module
from jaxdiag.pytest_plugin import JaxdiagFixture, preserved_jax_state

pytest_plugins = ["pytester"]

# A user module whose rules raise: the checks must still put every registry entry and flag back.
RAISING = '''
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

raising_p = Primitive("raising_for_state_test")
raising_p.def_impl(lambda x: jnp.sin(x))
raising_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(raising_p, mlir.lower_fun(lambda x: jnp.sin(x), multiple_results=False))


def raising_batch(args, dims):
    raise ValueError("user batching rule raised")


def raising_jvp(primals, tangents):
    raise ValueError("user jvp rule raised")


batching.primitive_batchers[raising_p] = raising_batch
ad.primitive_jvps[raising_p] = raising_jvp


@jax.custom_vjp
def raising_vjp(x):
    return jnp.sin(x)


def raising_fwd(x):
    return jnp.sin(x), x


def raising_bwd(x, g):
    raise ValueError("user bwd raised")


raising_vjp.defvjp(raising_fwd, raising_bwd)


@custom_vmap
def raising_vmap(x):
    return jnp.sum(x)


@raising_vmap.def_vmap
def raising_vmap_rule(axis_size, in_batched, xs):
    raise ValueError("user vmap rule raised")
'''


def assert_state_preserved(before: dict, after: dict) -> None:
    """Every registry entry, hook and flag as before (new registrations are the user's or JAX's own lazy ones)."""
    assert not jax_state_changes(before, after)


def jax_still_works() -> None:
    x = np.linspace(0.1, 1.0, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(jax.vmap(jnp.sin)(x), np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jnp.sin(v)))(x), np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jnp.cos)(x), np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jax.nn.relu(v)))(x), np.ones_like(x))  # custom_jvp call
    np.testing.assert_allclose(jax.vmap(jax.grad(jax.nn.softplus))(x[0]), jax.nn.sigmoid(x[0]), rtol=1e-6)

    @jax.custom_vjp
    def f(v):
        return v * 2

    f.defvjp(lambda v: (v * 2, None), lambda _, g: (g * 2,))
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(f(v)))(x), 2 * np.ones_like(x))
    assert jnp.ones(3).dtype == jnp.float32  # x64 still off


@pytest.mark.slow
def test_checks_leave_jax_state_as_they_found_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "raising.py").write_text(RAISING)
    module = load_module("raising.py")  # the user's own registrations happen here, before the snapshot
    before = _compat.snapshot_jax_state()
    fixture = JaxdiagFixture()
    reports = [
        fixture.check_batching(module.raising_p, "f32[3]"),
        fixture.check_grad(module.raising_p, "f32[3]"),
        fixture.check_grad(module.raising_vjp, "f32[3]"),
        fixture.check_batching(module.raising_vmap, "f32[3]"),
        fixture.check_batching("raising.py:raising_p", "f64[2]"),  # x64 switched on and off again
        fixture.check_module("raising.py"),
    ]
    assert all(r.targets for r in reports)
    assert_state_preserved(before, _compat.snapshot_jax_state())
    jax_still_works()


@pytest.mark.slow
def test_guard_puts_back_what_a_leak_changed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "raising_guard.py").write_text(RAISING.replace("raising_for_state_test", "raising_guard"))
    prim = load_module("raising_guard.py").raising_p
    from jax._src.custom_derivatives import custom_jvp

    before = _compat.snapshot_jax_state()
    original_call = custom_jvp.__call__
    try:
        with preserved_jax_state():
            jax.interpreters.ad.primitive_jvps[prim] = lambda primals, tangents: (primals, tangents)
            del jax.interpreters.ad.primitive_jvps[jax.lax.sin_p]
            custom_jvp.__call__ = lambda self, *args, **kwargs: original_call(self, *args, **kwargs)
            jax.config.update("jax_enable_x64", not before["flags"]["x64"])
            from jax.extend.core import Primitive

            new_p = Primitive("registered_inside_the_guard")
            jax.interpreters.ad.primitive_jvps[new_p] = lambda primals, tangents: (primals, tangents)
        after = _compat.snapshot_jax_state()
        assert after["jvp"].pop(new_p) is not None  # a new registration (the user's import) is kept
        assert_state_preserved(before, after)
    finally:
        custom_jvp.__call__ = original_call
        jax.config.update("jax_enable_x64", before["flags"]["x64"])
    jax_still_works()


def test_assert_clean_raises_with_the_text_the_cli_prints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_engine, "ALL_CHECKS", [probe])
    (tmp_path / "ops.py").write_text(FUNCS)
    fixture = JaxdiagFixture()
    fixture.assert_clean(fixture.check_batching("ops.py:clipped", "f32[3]"))  # the probe is a batching check
    with pytest.raises(AssertionError, match="NOT VERIFIED"):  # under grad no check runs: nothing is verified
        fixture.assert_clean(fixture.check_grad("ops.py:clipped", "f32[3]"))
    report = fixture.check_batching("ops.py:smooth_bad", "f32[3]")
    with pytest.raises(AssertionError) as caught:
        fixture.assert_clean(report)
    result = CliRunner().invoke(app, ["batching", "ops.py:smooth_bad", "--arg", "f32[3]", "--output", "cli.txt"])
    assert result.exit_code == 1
    cli_text = (tmp_path / "cli.txt").read_text()
    assert str(caught.value) == "jaxdiag found problems:\n" + cli_text == "jaxdiag found problems:\n" + render_plain(
        report)
    assert PROBE in cli_text and "probe: smooth_bad is bad" in cli_text


def test_fixture_in_a_users_test_suite(pytester, monkeypatch):
    monkeypatch.setattr(_engine, "ALL_CHECKS", [probe])
    pytester.makepyfile(ops=FUNCS)
    pytester.makepyfile(test_user=textwrap.dedent(f'''
        def test_clean(jaxdiag):
            jaxdiag.assert_clean(jaxdiag.check_batching("ops.py:clipped", "f32[3]"))
            jaxdiag.assert_clean(jaxdiag.check_all("ops.py:row_sum", "f32[3]"))

        def test_module(jaxdiag):
            report = jaxdiag.check_module("ops.py", ignore=["{PROBE}"])
            assert [t.target for t in report.targets] == ["ops.py:smooth_bad", "ops.py:clipped", "ops.py:row_sum"]
            jaxdiag.assert_clean(report)

        def test_broken(jaxdiag):
            jaxdiag.assert_clean(jaxdiag.check_batching("ops.py:smooth_bad", "f32[3]"))
    '''))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: jaxdiag found problems:*", f"*{PROBE} missing-lowering*",
                                 "*probe: smooth_bad is bad*"])
