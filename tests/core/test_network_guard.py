"""The suite's own guard: a test that reaches past this machine fails (tests/network_guard.py)."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.network_guard import NetworkBlockedError


def test_connecting_to_a_remote_address_is_refused_and_recorded(no_network: list[str]) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock,
        pytest.raises(NetworkBlockedError, match="203.0.113.7"),
    ):
        sock.connect(("203.0.113.7", 443))
    with pytest.raises(NetworkBlockedError, match="api.openai.com"):
        socket.getaddrinfo("api.openai.com", 443)
    assert no_network == ["connect ('203.0.113.7', 443)", "resolve 'api.openai.com'"]
    no_network.clear()  # seen: the guard would otherwise fail this test at teardown


def test_a_model_client_reaching_a_provider_is_caught(no_network: list[str]) -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get("https://dashscope.aliyuncs.com/compatible-mode/v1/models", timeout=2)
    assert no_network == ["resolve 'dashscope.aliyuncs.com'"]
    no_network.clear()


def test_loopback_stays_open(no_network: list[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2) as client:
            assert client.getpeername() == ("127.0.0.1", port)
        with socket.create_connection(("localhost", port), timeout=2):
            pass
    assert no_network == []
