"""Every piece of global state jaxdiag patches while it runs, snapshotted and restored as one.

What a run touches: the rule registries (batching, JVP, transposes including `fancy_transposes`, lowerings
including the per-platform tables), `Primitive.bind` and the custom_* classes' `__call__` (call recorders), a
custom_vmap's `vmap_rule` (the spy), the x64 / enable_checks / disable_jit flags, the profile hook (the return-line
watch), `sys.path` (target loading) and JAX's traceback frame filter (memoized, `run_scope`). Each patch is entered
inside `try` and undone in `finally` where it is made; `snapshot_jax_state()` lets tests (and the pytest fixture)
prove that nothing leaks.
"""

from __future__ import annotations

import contextlib
import logging
import types
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import jax
from jax._src import core as _core
from jax._src import traceback_util as _traceback_util
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import mlir as _mlir

from ._base import custom_jvp_type, custom_vjp_type, custom_vmap_type, x64_enabled
from ._registries import _batching_table, _legacy_batching_table

_FLAGS = {"x64": "jax_enable_x64", "enable_checks": "jax_enable_checks", "disable_jit": "jax_disable_jit"}


def _tables() -> dict[str, dict]:
    return {
        "batching": _batching_table(),
        "legacy_batching": _legacy_batching_table(),
        "jvp": _ad.primitive_jvps,
        "transpose": _ad.primitive_transposes,
        "fancy_transpose": getattr(_ad, "fancy_transposes", {}),
        "lowerings": getattr(_mlir, "_lowerings", {}),
    }


def _platform_tables() -> dict[str, dict]:
    return dict(getattr(_mlir, "_platform_specific_lowerings", {}))


def snapshot_jax_state(custom_vmaps: Iterable[Any] = ()) -> dict[str, Any]:
    """A copy of everything jaxdiag may patch (plus the `vmap_rule` of the given custom_vmap objects).

    Two snapshots compare equal when nothing changed: values are compared by identity (functions) or equality.
    """
    snapshot: dict[str, Any] = {name: dict(table) for name, table in _tables().items()}
    snapshot["platform_lowerings"] = {p: dict(t) for p, t in _platform_tables().items()}
    snapshot["primitive_bind"] = _core.Primitive.__dict__.get("bind")
    snapshot["custom_calls"] = {
        c: c.__dict__.get("__call__") for c in (custom_vjp_type, custom_jvp_type, custom_vmap_type) if c}
    snapshot["vmap_rules"] = {id(obj): (obj, obj.vmap_rule) for obj in custom_vmaps}
    snapshot["flags"] = {name: bool(getattr(jax.config, flag)) for name, flag in _FLAGS.items()}
    snapshot["profile"] = sys.getprofile()
    snapshot["sys_path"] = list(sys.path)
    snapshot["traceback_filter"] = getattr(_traceback_util, "include_frame", None)
    snapshot["callback_log_level"] = logging.getLogger("jax._src.callback").level
    return snapshot


def restore_jax_state(snapshot: dict[str, Any]) -> list[str]:
    """Put back every entry of `snapshot` that changed or disappeared; returns what was restored.

    Entries added since the snapshot are kept: importing the user's modules registers their rules, and those
    registrations belong to the user, not to jaxdiag. `sys.path` is left alone here (see `run_scope`).
    """
    restored = []
    tables = {**_tables(), **{f"platform:{p}": t for p, t in _platform_tables().items()}}
    saved = {**{n: snapshot.get(n, {}) for n in _tables()},
             **{f"platform:{p}": t for p, t in snapshot.get("platform_lowerings", {}).items()}}
    for name, entries in saved.items():
        table = tables.get(name)
        if table is None:
            continue
        for key, value in entries.items():
            if table.get(key) is not value:
                table[key] = value
                restored.append(f"{name}[{getattr(key, 'name', key)}]")
    bind = snapshot.get("primitive_bind")
    if bind is not None and _core.Primitive.__dict__.get("bind") is not bind:
        _core.Primitive.bind = bind  # type: ignore[method-assign]  # the patch, undone in finally
        restored.append("Primitive.bind")
    for cls, call in snapshot.get("custom_calls", {}).items():
        if cls.__dict__.get("__call__") is not call and call is not None:
            cls.__call__ = call
            restored.append(f"{cls.__name__}.__call__")
    for obj, rule in snapshot.get("vmap_rules", {}).values():
        if obj.vmap_rule is not rule:
            obj.vmap_rule = rule
            restored.append(f"{getattr(obj, '__name__', 'custom_vmap')}.vmap_rule")
    for name, value in snapshot.get("flags", {}).items():
        if bool(getattr(jax.config, _FLAGS[name])) != value:
            jax.config.update(_FLAGS[name], value)
            restored.append(_FLAGS[name])
    return restored


_CACHE_FLAGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
                "jax_persistent_cache_min_entry_size_bytes")


@contextlib.contextmanager
def compilation_cache(folder: str) -> Iterator[None]:
    """JAX's persistent compilation cache in `folder`, every compiled program stored (the small ones too), for the
    body only. JAX opens its cache once per process at the first compilation that uses it: it is reset on entry
    and exit, so a later run in this process (another folder, or none) does not keep writing to this one. The
    three flags are restored on exit, even on error."""
    from jax.experimental.compilation_cache import compilation_cache as cache_api

    saved = {name: getattr(jax.config, name) for name in _CACHE_FLAGS}
    cache_api.reset_cache()
    try:
        jax.config.update("jax_compilation_cache_dir", folder)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        yield
    finally:
        for name, value in saved.items():
            jax.config.update(name, value)
        cache_api.reset_cache()


@contextlib.contextmanager
def x64_scope(enabled: bool) -> Iterator[None]:
    """x64 mode `enabled` for the body only, through JAX's scoped (thread-local) context where this JAX has one,
    never a global flip; restored on exit, even on error."""
    if x64_enabled() == enabled:
        yield
        return
    scoped = getattr(jax, "enable_x64", None)  # jax >= 0.6
    if scoped is None:
        from jax import experimental

        # jax < 0.6 only: the type stubs of the JAX this is type-checked with no longer declare it, so by name
        scoped = getattr(experimental, "enable_x64", None)
    if scoped is None:
        raise RuntimeError("this JAX has no scoped x64 context (jax.enable_x64 / jax.experimental.enable_x64)")
    with scoped(enabled):
        yield


@contextlib.contextmanager
def run_scope() -> Iterator[None]:
    """What one jaxdiag run sets up for its body and undoes once it is done, even on error (re-entrant):
    - `sys.path` as it was before: target loading adds the user's folders, which stay importable for the whole run
      and no longer afterwards;
    - JAX's traceback filter asks once per file whether a frame is JAX's own (`_memoized_frame_filter`);
    - JAX's callback logger is silent (`_quiet_callback_log`)."""
    saved = list(sys.path)
    try:
        with _memoized_frame_filter(), _quiet_callback_log():
            yield
    finally:
        sys.path[:] = saved


@contextlib.contextmanager
def _quiet_callback_log() -> Iterator[None]:
    """JAX logs the traceback of every exception a `pure_callback`/`io_callback` function raises, besides raising it.
    Input inference calls the user's callbacks on candidate inputs they refuse, tens of times per target: each
    refusal printed a traceback on the user's terminal. The exception still reaches jaxdiag (and a finding quotes
    it); the logger's level is put back on exit."""
    logger = logging.getLogger("jax._src.callback")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def _memoized_frame_filter() -> Iterator[None]:
    """JAX filters its own frames out of every exception that crosses one of its API boundaries, deciding each
    frame with `os.path.samefile` against each excluded folder (two `stat` calls per folder per frame). Input
    inference makes the user's code raise hundreds of times per target: that filter was a quarter of a lint run.
    The answer only depends on the frame's file and on the exclusions registered so far, so for the body it is
    asked once per (file, exclusion count); the same frames are filtered as before."""
    original = getattr(_traceback_util, "include_frame", None)
    exclusions = getattr(_traceback_util, "_exclude_paths", None)
    if original is None or not isinstance(exclusions, list) or getattr(original, "__module__", None) == __name__:
        yield  # another JAX layout, or a run inside a run: JAX's own filter as it is
        return
    answers: dict[tuple[str, int], bool] = {}

    def include_frame(f: types.FrameType) -> bool:  # JAX's own name for the parameter
        key = (f.f_code.co_filename, len(exclusions))  # exclusions are only ever appended
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = original(f)
        return answer

    _traceback_util.include_frame = include_frame
    try:
        yield
    finally:
        _traceback_util.include_frame = original


# ---------------------------------------------------------------------------------------------------------------
# JAX's global state as the user's code may change it: every config flag, the environment JAX reads, and the rules
# registered for JAX's own primitives (`_contain.StateWatch` compares and restores it around each target)
# ---------------------------------------------------------------------------------------------------------------

_TABLE_LABELS = {"batching": "batching rule", "legacy_batching": "batching rule", "jvp": "JVP rule",
                 "transpose": "transpose rule", "fancy_transpose": "transpose rule", "lowerings": "lowering"}
# The keys each registry had when jaxdiag was imported, before any of the user's modules in a jaxdiag process: the
# primitives that are JAX's own. A user's primitive registering its rules lazily is no change to JAX's state.
_JAX_OWN_KEYS: dict[str, set[int]] = {name: {id(k) for k in table} for name, table in _tables().items()}


def _config_values() -> dict[str, Any]:
    values = getattr(jax.config, "values", None)
    if isinstance(values, dict):
        return dict(values)
    holders = getattr(jax.config, "_value_holders", {})  # older JAX: the same dict, not yet public
    return {name: getattr(holder, "value", None) for name, holder in holders.items()}


def _jax_environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k.startswith(("JAX_", "XLA_", "TPU_", "CUDA_VISIBLE"))}


def global_state() -> dict[str, Any]:
    """A copy of JAX's whole global state that user code can change: config values, the JAX/XLA environment
    variables, and the rule registered for each of JAX's own primitives in every registry."""
    own = {name: {k: v for k, v in table.items() if id(k) in _JAX_OWN_KEYS.get(name, ())}
           for name, table in _tables().items()}
    return {"config": _config_values(), "env": _jax_environment(), "rules": own}


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):  # arrays and other values without a plain truth value
        return False


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs, in words: `jax_enable_x64 False -> True`, `the JVP rule of sin`, `XLA_FLAGS`."""
    out = [f"{name} {before['config'].get(name)!r} -> {value!r}" for name, value in after["config"].items()
           if name in before["config"] and not _same(before["config"][name], value)]
    env_names = set(before["env"]) | set(after["env"])
    out += [f"the environment variable {name}" for name in sorted(env_names)
            if before["env"].get(name) != after["env"].get(name)]
    for table, entries in before["rules"].items():
        now = after["rules"].get(table, {})
        out += [f"the {_TABLE_LABELS.get(table, table)} of {getattr(k, 'name', k)}" for k, rule in entries.items()
                if now.get(k) is not rule]
    return out


def restore_global_state(before: dict[str, Any]) -> list[str]:
    """Put `before` back; returns what could not be restored (a flag JAX no longer lets change)."""
    import os

    failed = []
    for name, value in before["config"].items():
        current = _config_values().get(name, value)
        if _same(current, value):
            continue
        try:
            jax.config.update(name, value)
        except (ValueError, RuntimeError, TypeError, AttributeError) as exc:  # a flag fixed once a backend exists
            failed.append(f"{name} ({type(exc).__name__})")
    now_env = _jax_environment()
    for name in set(now_env) - set(before["env"]):
        del os.environ[name]
    for name, value in before["env"].items():
        os.environ[name] = value
    tables = _tables()
    for table, entries in before["rules"].items():
        for key, rule in entries.items():
            if tables[table].get(key) is not rule:
                tables[table][key] = rule
    return failed


def apply_environment_flags(changed: dict[str, str]) -> None:
    """Set the config flags that `JAX_<FLAG>` variables name, as JAX does when it is imported: for a process that
    imported JAX before it was given its environment (a child forked from the supervisor's fork server)."""
    values = _config_values()
    for variable, text in changed.items():
        name = variable.lower()
        if name not in values:
            continue
        current = values[name]
        try:
            if isinstance(current, bool):
                value: Any = text.strip().lower() in ("1", "true", "t", "yes", "y", "on")
            elif isinstance(current, int):
                value = int(text)
            elif isinstance(current, float):
                value = float(text)
            else:
                value = text
            jax.config.update(name, value)
        except (ValueError, TypeError, RuntimeError, AttributeError):  # a value JAX refuses: as JAX would ignore it
            continue
