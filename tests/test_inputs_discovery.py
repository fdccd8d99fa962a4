"""Discovery: wrapped custom functions, namespace packages, optional dependencies, rules attached to JAX's own
primitives, and the precise reasons a target is not checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import Runner as CliRunner  # stdout/stderr apart on every click

from jaxdiag._parent._cli import app
from jaxdiag.pytest_plugin import preserved_jax_state

runner = CliRunner()
DATA = Path(__file__).parent / "data"


def check(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["check", *args, "--app-dir", str(DATA), "--format", "json", "--keep-going"])
    assert result.exit_code in (0, 1, 5), result.output  # 5: a target not verified (a missing dependency)
    return result.exit_code, json.loads(result.stdout)


def by_target(data: dict) -> dict:
    return {t["target"]: t for t in data["targets"]}


def test_custom_function_held_by_a_wrapper_object_is_found_and_checked(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check("discpkg.wrapped")
    target = by_target(data)["discpkg.wrapped:soft_sign"]
    assert target["kind"] == "custom_jvp"
    bad = [f for f in target["findings"] if f["severity"] != "info"]
    assert bad and bad[0]["location"]["function"] == "soft_sign_jvp" and code == 1
    lines = (DATA / "discpkg" / "wrapped.py").read_text().splitlines()
    assert bad[0]["location"]["line"] == next(i for i, t in enumerate(lines, 1) if "def soft_sign_jvp" in t)


@pytest.mark.slow
def test_a_helper_librarys_wrapper_object_is_dated_by_the_users_function(monkeypatch):
    """`softplus = filter_vjp(_softplus)` from another package (as with equinox's `filter_custom_vjp`): the wrapper
    belongs to the module of the function it wraps, so it is discovered and checked there."""
    monkeypatch.chdir(DATA)
    _, data = check("carrypkg.filtered")
    target = by_target(data)["carrypkg.filtered:softplus"]
    assert any(c["status"] == "passed" for c in target["checks"])
    assert not [f for t in data["targets"] for f in t["findings"] if f["severity"] != "info"]


def test_a_wrapper_taking_the_rest_as_args_is_called_with_the_held_functions_signature(monkeypatch):
    """`__call__(vjp_arg, /, *args, **kwargs)` (equinox's `filter_custom_vjp`): drawn from the call's one named
    parameter, no input was inferred; the held function names the rest, a Python int among them."""
    monkeypatch.chdir(DATA)
    _, data = check("carrypkg.first_arg")
    target = by_target(data)["carrypkg.first_arg:tiled"]
    assert target["inputs"][2] == "4" and len(target["inputs"]) == 3, target["inputs"]
    assert any(c["status"] == "passed" for c in target["checks"])


def test_a_wrapper_putting_its_own_argument_first_keeps_its_signature():
    """`self.fn(self.scale, x, *args)`: the held function takes one more than the caller passes."""
    import inspect

    from jaxdiag._run._signature import _held_signature

    class Scaled:
        def __init__(self, fn, scale):
            self.fn, self.scale = fn, scale

        def __call__(self, x, *args):
            return self.fn(self.scale, x, *args)

    class Passed(Scaled):
        def __call__(self, x, *args):
            return self.fn(x, *args)

    def held(scale, x, y):
        return scale * x * y

    own = inspect.signature(Scaled.__call__.__get__(Scaled(held, 2.0)))
    assert _held_signature(Scaled(held, 2.0), own) is own
    assert list(_held_signature(Passed(held, 2.0), own).parameters) == ["scale", "x", "y"]


def test_optional_dependency_is_its_own_note(monkeypatch):
    monkeypatch.chdir(DATA)
    code, data = check("discpkg.optional", "discpkg.needs_extra")
    assert code == 5 and {e["reason"] for e in data["summary"]["not_verified"]} == {"dependency-missing"}
    targets = by_target(data)
    note = next(f for f in targets["discpkg.optional:fancy"]["findings"])
    assert note["code"] == "JXN011" and "jaxdiag_not_installed_dependency" in note["message"]
    module_note = targets["discpkg.needs_extra"]["findings"][0]
    assert module_note["code"] == "JXN011" and module_note["severity"] == "info"


@pytest.mark.parametrize("how", ["nspkg", "nspkg/inner/rules.py"])
def test_namespace_packages_are_walked_with_relative_imports(monkeypatch, how):
    monkeypatch.chdir(DATA)
    _, data = check(how)
    assert any(t["target"].endswith(":f") and any(c["status"] == "passed" for c in t["checks"])
               for t in data["targets"]), data


def test_a_plain_modules_global_named_path_is_not_a_package(monkeypatch):
    """`__path__ = Path(__file__).parent` in a plain module (a folder of templates): walking it as a package made
    `pkgutil.iter_modules` raise, an internal error that hid every target of the package."""
    monkeypatch.chdir(DATA)
    _, data = check("pathglobal")
    assert data["summary"]["internal_errors"] == 0, data
    target = next(t for t in data["targets"] if t["target"].endswith("rules.py:f"))
    assert any(c["status"] == "passed" for c in target["checks"])


@pytest.mark.slow  # > 1 s; the fast tier keeps a cheaper test of the same feature
def test_library_rule_on_a_jax_primitive_is_checked_only_as_that_rule(tmp_path, monkeypatch):
    (tmp_path / "attach.py").write_text(
        "from jax import lax\nfrom jax.interpreters import ad\n\n"
        "erf_inv_p = lax.erf_inv_p\n\n\n"
        "def erf_inv_transpose(ct, x):  # a (meaningless) rule the library adds to JAX's primitive\n"
        "    return [ct]\n\n\n"
        "ad.primitive_transposes[erf_inv_p] = erf_inv_transpose\n")
    monkeypatch.chdir(tmp_path)
    with preserved_jax_state():
        result = runner.invoke(app, ["check", "attach.py", "--format", "json"])
    data = json.loads(result.stdout)
    findings = [f for t in data["targets"] for f in t["findings"] if f["severity"] != "info"]
    # whatever is reported points at the library's own rule, never at JAX's rules of erf_inv
    assert all(f["location"]["path"].endswith("attach.py") for f in findings), findings
    assert data["targets"] and data["targets"][0]["target"] == "attach.py:erf_inv_p"


def test_option_parameters_take_the_defaults_their_module_forwards(monkeypatch):
    """equinox's `backward_nan(x, name=None, terminate=True)` forwards to `_backward_nan(x, name, terminate)`: the
    rule's options have no default of their own, and drawing arrays for them made its bwd fail on `if terminate:`
    (a JXG017 no program can hit); a nondiff option without a default left the rule unchecked."""
    monkeypatch.chdir(DATA)
    _, data = check("discpkg.options")
    targets = by_target(data)
    assert targets["discpkg.options:zero_nan_rule"]["inputs"] == ["f32[3]", "None", "True"]
    assert targets["discpkg.options:reduce_rule"]["inputs"] == ["f32[3]", "'sum'"]
    for name in ("zero_nan_rule", "zero_nan_rule > fn_wrapped", "reduce_rule"):
        assert any(c["status"] == "passed" for c in targets[f"discpkg.options:{name}"]["checks"]), name
    assert not [f for t in data["targets"] for f in t["findings"] if f["severity"] != "info"]


def test_only_option_defaults_of_same_module_callers_are_forwarded(tmp_path, monkeypatch):
    import importlib

    from jaxdiag._loading._passthrough import passthrough_defaults

    (tmp_path / "fwdmod.py").write_text(
        "def rule(x, scale, mode, flag):\n    return x\n\n"
        "def a(x, scale=2.0, mode='fast', flag=True):\n    return rule(x, scale, mode=mode, flag=flag)\n\n"
        "def b(x, flag=False):\n    return rule(x, 1.0, 'fast', flag)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("fwdmod")
    found = passthrough_defaults(module.rule, "rule", ["x", "scale", "mode", "flag"])
    # a number may stand for an array: never lent; two callers lending different flags: no single value
    assert found == {2: "fast"}


def test_a_finding_in_a_helper_wrapped_rule_points_at_the_users_rule(monkeypatch):
    """equinox's `filter_custom_jvp` hands JAX its own closures (`fn_wrapper`, `fn_jvp_wrapper`), which call the
    user's functions: quadax's `_leibniz` finding was located at `equinox/_ad.py:802` and named the closure."""
    monkeypatch.chdir(DATA)
    _, data = check("discpkg.helper_jvp")
    nested = next(t for t in data["targets"] if t["target"].startswith("discpkg.helper_jvp:cube > "))
    bad = [f for f in nested["findings"] if f["severity"] != "info"]
    assert bad, nested["findings"]
    lines = (DATA / "discpkg" / "helper_jvp.py").read_text().splitlines()
    where = bad[0]["location"]
    assert where["function"] == "_cube_jvp" and where["path"].endswith("helper_jvp.py")
    assert where["line"] == next(i for i, t in enumerate(lines, 1) if t.startswith("def _cube_jvp"))
    text = bad[0]["message"] + bad[0]["fix"]
    assert "_cube_jvp" in text and "fn_jvp_wrapper" not in text and "helperlib" not in text, text


def test_a_users_own_decorator_beside_the_rule_is_not_looked_through():
    from jaxdiag._run._relocate import called_user_function

    def decorate(fn):
        def wrapper(*args):
            return fn(*args)
        return wrapper

    def rule(x):
        return x

    assert called_user_function(decorate(rule)) is None  # same module: the wrapper may be where the bug is
