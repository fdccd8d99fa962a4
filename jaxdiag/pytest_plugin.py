"""pytest plugin (the `pytest11` entry point `jaxdiag`): a `jaxdiag` fixture for users' test suites.

    def test_my_primitive(jaxdiag):
        report = jaxdiag.check_batching("mypkg.ops:my_sum_p", "f32[2,3]", params={"axis": 1})
        jaxdiag.assert_clean(report)          # AssertionError with the text the CLI prints

    def test_whole_package(jaxdiag):
        jaxdiag.assert_clean(jaxdiag.check_module("mypkg"))

Every call leaves JAX's global state as it found it (rule registries, transposes and lowerings, `Primitive.bind`,
`custom_*.__call__`, config flags): each patch is undone where it is made, and this guard puts back any entry that
existed before the call and changed. Registrations made by the user's own modules while they
are imported are new entries and stay. jaxdiag itself is imported on first use, not when pytest loads the plugin.
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import pytest

if TYPE_CHECKING:
    from ._core._report import Report

T = TypeVar("T")


@contextlib.contextmanager
def preserved_jax_state() -> Iterator[None]:
    """Snapshot JAX's registries and flags; on exit put back whatever existed before and changed."""
    from . import _compat

    before = _compat.snapshot_jax_state()
    try:
        yield
    finally:
        _compat.restore_jax_state(before)


def _guarded(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with preserved_jax_state():
        return fn(*args, **kwargs)


class JaxdiagFixture:
    """What the `jaxdiag` fixture gives a test: the Python API, each call guarded, plus `assert_clean`. Its
    `check_NAME` methods are the registry's commands (`_commands.COMMANDS`): `check_batching`, `check_grad`,
    `check_all` run in this process; `check_sharding` in a child process on virtual CPU devices, so this test's
    JAX is untouched."""

    def __getattr__(self, name: str) -> Callable[..., "Report"]:
        from ._core import _commands

        for spec in _commands.COMMANDS.values():
            if spec.function_name == name:
                return _method_for(spec.function_name, spec.runner)
        raise AttributeError(f"the jaxdiag fixture has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        from ._core import _commands

        return sorted({*super().__dir__(), *(c.function_name for c in _commands.COMMANDS.values())})

    def check_module(self, module_or_path: Any, **kwargs: Any) -> "Report":
        """`jaxdiag.check_module(module_or_path, ...)`: discover and check every target, as `jaxdiag check`."""
        from ._jobs._lint import check_module

        return _guarded(check_module, module_or_path, **kwargs)

    @staticmethod
    def assert_clean(report: "Report") -> None:
        """Fail the test with the CLI's text when an error or warning remains, a module failed to import, or
        jaxdiag itself hit an internal error (its own bug is never a pass)."""
        report.raise_if_failed()


def _method_for(function_name: str, runner: str) -> Callable[..., "Report"]:
    """The API function of a registry command, guarded (the sharding runner has its own child process)."""
    import importlib

    module = importlib.import_module(f"{__package__}.{'_mesh._sharding' if runner == 'sharding' else '_api'}")
    function = getattr(module, function_name)
    if runner == "sharding":
        return function
    return functools.wraps(function)(functools.partial(_guarded, function))


@pytest.fixture
def jaxdiag() -> JaxdiagFixture:
    """jaxdiag's checks for this test: `jaxdiag.check_batching(...)`, `.check_grad`, `.check_module`,
    `.assert_clean(report)`."""
    return JaxdiagFixture()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxdiag")
    group.addoption("--jaxdiag-record", action="store_true", default=False,
                    help="record every call of a user primitive or custom_* rule the tests make, for `jaxdiag check`")
    group.addoption("--jaxdiag-record-file", default=".jaxdiag/calls.json", metavar="FILE",
                    help="where --jaxdiag-record writes (default .jaxdiag/calls.json)")


def pytest_configure(config: Any) -> None:
    if config.getoption("--jaxdiag-record", default=False):
        import os

        from ._jobs import _record

        path = os.path.abspath(config.getoption("--jaxdiag-record-file"))
        if os.path.exists(path):
            os.remove(path)
        _record.install_on_import(path)


def pytest_unconfigure(config: Any) -> None:
    if config.getoption("--jaxdiag-record", default=False):
        from ._jobs import _record

        _record.flush()
