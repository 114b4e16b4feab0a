"""The running config of the history command tests."""

from __future__ import annotations

from copaw_context.core.config.running import RunningConfig, parse_running_config

__all__ = ["history_config"]


def history_config() -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "memory": {"enabled": False},
                "light_context_config": {"compactor": "extractive"},
            }
        }
    )
