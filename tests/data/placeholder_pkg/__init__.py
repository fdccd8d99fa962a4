"""A package that, without its optional dependency, puts a placeholder module in its place: the placeholder's
`__getattr__` raises ImportError for every name (`__path__` and a config table's name included), as haiku's
`haiku.experimental.flax` does without flax. A rule of the package's own sits beside it."""

import sys
import types


class _NotInstalled(types.ModuleType):
    __slots__ = ()

    def __getattr__(self, name):
        if name == "__file__":
            return None
        raise ImportError(f"`placeholder_pkg.extra.{name}` features require `fancylib` to be installed.")


sys.modules["placeholder_pkg.extra"] = _NotInstalled("placeholder_pkg.extra")
from . import extra  # noqa: E402,F401  the placeholder, as the package's users see it
