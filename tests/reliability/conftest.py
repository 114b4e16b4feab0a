"""The ``driver`` fixture: each real-agent test runs once per driver of the installed major."""

from __future__ import annotations

import pytest

from tests.reliability.drivers import HostDriver, available_drivers

_DRIVERS = available_drivers()


@pytest.fixture(params=_DRIVERS, ids=[d.name for d in _DRIVERS])
def driver(request: pytest.FixtureRequest) -> HostDriver:
    return request.param  # type: ignore[no-any-return]
