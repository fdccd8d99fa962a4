"""The module the package replaces with a placeholder when its optional dependency is missing (never imported
from this file then)."""

import fancylib  # noqa: F401
