"""The ``driver`` fixture: each real-agent test runs once per driver of the installed major.

Under AgentScope 1.x only the tests that take ``driver`` run here; the host-neutral ones
(the engine with the fake host, reads racing a swap, malformed ``agent.json``) test nothing
of the host and run once, in the 2.x environment: they are deselected (reported as such).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context import installed_agentscope_major
from tests.reliability.drivers import HostDriver, available_drivers

_DRIVERS = available_drivers()
_HERE = Path(__file__).parent


@pytest.fixture(params=_DRIVERS, ids=[d.name for d in _DRIVERS])
def driver(request: pytest.FixtureRequest) -> HostDriver:
    return request.param  # type: ignore[no-any-return]


def deselect_host_neutral(config: pytest.Config, items: list[pytest.Item], folder: Path) -> None:
    """Under AgentScope 1.x, deselect the tests of ``folder`` that do not take ``driver``."""
    if installed_agentscope_major() >= 2:
        return
    neutral = [
        item
        for item in items
        if item.path.is_relative_to(folder) and "driver" not in getattr(item, "fixturenames", ())
    ]
    if neutral:
        config.hook.pytest_deselected(items=neutral)
        kept = [item for item in items if all(item is not n for n in neutral)]
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_host_neutral(config, items, _HERE)
