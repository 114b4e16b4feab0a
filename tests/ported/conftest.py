"""The ported peer cases take the reliability suite's ``driver`` fixture (each real-agent
case runs once per driver of the installed major); under AgentScope 1.x the host-neutral
ones (no ``driver``) are deselected, as in ``reliability/``: they run once, under 2.x."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.driver_fixture import deselect_host_neutral, driver

__all__ = ["driver"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_host_neutral(config, items, Path(__file__).parent)
