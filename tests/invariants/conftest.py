"""The ``kit`` fixture: the host (AgentScope major) installed in this environment."""

from __future__ import annotations

import pytest

from copaw_context import installed_agentscope_major
from tests.invariants.kit import HostKit

_MAJOR = installed_agentscope_major()


@pytest.fixture(params=[_MAJOR], ids=[f"agentscope{_MAJOR}"])
def kit(request: pytest.FixtureRequest) -> HostKit:
    if request.param >= 2:
        from tests.invariants.as2_kit import As2Kit

        return As2Kit()
    from tests.invariants.as1_kit import As1Kit

    return As1Kit()
