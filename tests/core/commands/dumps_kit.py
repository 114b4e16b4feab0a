"""What the shared-dump tests share: the config naming the database and a short context."""

from __future__ import annotations

from copaw_context.core.config.running import RunningConfig, parse_running_config
from tests.fake_host import FakeMessage, call, result, text, user

__all__ = ["dump_config", "dump_context"]


def dump_config(dsn: str) -> RunningConfig:
    """The defaults with memory off, the extractive compactor and the store ``dsn``."""
    light = {"compactor": "extractive", "store": {"dsn": dsn}}
    return parse_running_config(
        {"running": {"memory": {"enabled": False}, "light_context_config": light}}
    )


def dump_context() -> list[FakeMessage]:
    """Three messages: a request, a call with its result, an answer."""
    return [
        user("Build the parser and tell me what fails."),
        FakeMessage("assistant", [text("Building."), call("c1", "build"), result("c1", "ok")]),
        FakeMessage("assistant", [text("The parser builds.")]),
    ]
