"""pytest plugin (placeholder until the lint work lands): a `jaxdiag` fixture exposing the public API."""

from __future__ import annotations

import pytest


@pytest.fixture()
def jaxdiag():
    import jaxdiag as api

    return api
