"""Everything a run can import, imported at once: the fork server's preload (`_supervisor.PRELOAD`).

A run in this process imports check families, `_compat` parts and the rule catalog on first use (so the Python API
loads only what its command needs); a child forked from the preloaded server should import nothing, so the server
loads all of it here, before any user code exists.
"""

from __future__ import annotations

import importlib

from . import _child, _lint  # noqa: F401  (imported for their side effect: loaded in the server)
from .._run import _engine  # noqa: F401  (imported for their side effect: loaded in the server)
from .. import _compat, _rules
from .._checks import MODULES

# Modules a run imports only on some paths (a GPU-only target, 64-bit specs, nested subjects, retries, fixes).
_ON_SOME_PATHS = ("_checks._abstract", "_checks._x64_only", "_checks._call_site", "_checks._index_range",
                  "_harness.tracing", "_run._observe", "_run._fresh_draws", "_run._relocate", "_loading._passthrough",
                  "_run._assumed_params", "_jobs._call_sites", "_jobs._doc_examples", "_loading._fit",
                  "_run._climb", "_jobs._traced_reach", "_jobs._rule_factories", "_jobs._callables")


def load_everything() -> None:
    for module in MODULES:
        importlib.import_module(f"jaxdiag._checks.{module.module}")
    for name in _ON_SOME_PATHS:
        importlib.import_module(f"jaxdiag.{name}")
    for name in sorted(set(_compat._OWNER.values())):
        importlib.import_module(f"jaxdiag._compat.{name}")
    _rules.iter_rules()  # every rule module


load_everything()
