"""Shared test fixtures; which tests run depends on the installed AgentScope major.

``scripts/test.sh`` runs pytest twice: in ``.venv`` (AgentScope 2.x) every test but
``agentscope1/``; in ``.venv-as1`` (AgentScope 1.x) ``invariants/`` (the end-to-end
invariants, against whichever host is installed), ``core/`` (host-neutral),
``agentscope1/`` and the real-agent tests of ``reliability/`` and ``ported/`` (the peers'
suites; those taking the ``driver`` fixture, see ``reliability/conftest.py``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from copaw_context import installed_agentscope_major

# The top-level tests drive AgentScope 2.x agents.
_TWO = installed_agentscope_major() >= 2
collect_ignore_glob = ["agentscope1/*"] if _TWO else ["test_*.py"]


class NetworkBlockedError(OSError):
    """A test tried to reach a host other than this machine (a real model, a download)."""


_LOCAL_NAMES = {"localhost", "localhost.localdomain", ""}


def _is_local(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail any test that reaches past this machine: a real model, a registry, a download.

    Loopback stays open (a local database server). The attempt is also recorded, because the
    package degrades on errors and could otherwise hide the call behind a fallback.
    """
    attempts: list[str] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(family: int, address: Any) -> None:
        if family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            attempts.append(f"connect {address!r}")
            raise NetworkBlockedError(f"network disabled in tests: connect to {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(self.family, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(self.family, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not _is_local(name):
            attempts.append(f"resolve {name!r}")
            raise NetworkBlockedError(f"network disabled in tests: resolve {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    if attempts:
        pytest.fail(f"this test tried to reach the network: {attempts}", pytrace=False)
