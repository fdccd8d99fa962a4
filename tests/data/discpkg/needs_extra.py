"""A submodule that needs an optional dependency at import time."""
import jaxdiag_not_installed_extra  # noqa: F401
