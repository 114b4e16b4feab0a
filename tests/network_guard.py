"""The suite's network guard: a test that reaches past this machine fails (autouse in
``tests/conftest.py``)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["NetworkBlockedError", "no_network"]


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
