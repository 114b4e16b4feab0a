"""The settings of the invariant suite."""

from __future__ import annotations

from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config

__all__ = ["config"]


def config(window: int, *, pruning: dict[str, Any] | None = None, **light: Any) -> RunningConfig:
    """Settings for the invariant tests (the memory summariser off: it calls the model too);
    ``pruning`` adds to the tool-result pruning section."""
    compact = light.pop("context_compact_config", {})
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": {"summarise_on_compact": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "context_compact_config": {
                        "compact_threshold_ratio": 0.7,
                        "reserve_threshold_ratio": 0.2,
                        **compact,
                    },
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 8000,
                        "pruning_old_msg_max_bytes": 1000,
                        **(pruning or {}),
                    },
                    **light,
                },
            }
        }
    )
