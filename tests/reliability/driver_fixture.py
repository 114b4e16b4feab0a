"""The ``driver`` fixture (each real-agent test runs once per driver of the installed major)
and the deselection of host-neutral tests under AgentScope 1.x, for the conftests of
``reliability/``, ``invariants/`` and ``ported/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context import installed_agentscope_major
from tests.reliability.drivers import HostDriver, available_drivers

__all__ = ["deselect_host_neutral", "driver"]

_DRIVERS = available_drivers()


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
