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
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import pytest

if TYPE_CHECKING:
    from ._report import Report

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
    """What the `jaxdiag` fixture gives a test: the Python API, each call guarded, plus `assert_clean`."""

    def check_batching(self, target: Any, *args: Any, **kwargs: Any) -> "Report":
        """`jaxdiag.check_batching(target, *args, in_axes=..., params={...})`: see its docstring."""
        from ._api import check_batching

        return _guarded(check_batching, target, *args, **kwargs)

    def check_grad(self, target: Any, *args: Any, **kwargs: Any) -> "Report":
        """`jaxdiag.check_grad(target, *args, order=1, params={...})`: see its docstring."""
        from ._api import check_grad

        return _guarded(check_grad, target, *args, **kwargs)

    def check_all(self, target: Any, *args: Any, **kwargs: Any) -> "Report":
        """Every check family on one target, as `jaxdiag check` runs them."""
        from ._api import check_all

        return _guarded(check_all, target, *args, **kwargs)

    def check_sharding(self, target: Any, *args: Any, **kwargs: Any) -> "Report":
        """`jaxdiag.check_sharding(target, *args, params=None, mesh=(2, 4))`: in a child process on virtual CPU
        devices, so this test's JAX is untouched."""
        from ._sharding import check_sharding

        return check_sharding(target, *args, **kwargs)

    def check_module(self, module_or_path: Any, **kwargs: Any) -> "Report":
        """`jaxdiag.check_module(module_or_path, ...)`: discover and check every target, as `jaxdiag check`."""
        from ._lint import check_module

        return _guarded(check_module, module_or_path, **kwargs)

    @staticmethod
    def assert_clean(report: "Report") -> None:
        """Fail the test with the CLI's text when an error or warning remains, a module failed to import, or
        jaxdiag itself hit an internal error (its own bug is never a pass)."""
        report.raise_if_failed()


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

        from . import _record

        path = os.path.abspath(config.getoption("--jaxdiag-record-file"))
        if os.path.exists(path):
            os.remove(path)
        _record.install_on_import(path)


def pytest_unconfigure(config: Any) -> None:
    if config.getoption("--jaxdiag-record", default=False):
        from . import _record

        _record.flush()
