"""The ``driver`` fixture: each real-agent test runs once per driver of the installed major.

Under AgentScope 1.x only the tests that take ``driver`` run here; the host-neutral ones
(the engine with the fake host, reads racing a swap, malformed ``agent.json``) test nothing
of the host and run once, in the 2.x environment: they are deselected (reported as such).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.driver_fixture import deselect_host_neutral, driver

__all__ = ["driver"]

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_host_neutral(config, items, _HERE)
