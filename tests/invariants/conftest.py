"""The ``driver`` fixture: the host (AgentScope major) installed in this environment, driven
as the reliability suite drives it (``tests/reliability/drivers.py``)."""

from __future__ import annotations

from tests.reliability.driver_fixture import driver

__all__ = ["driver"]
