"""What the invariant suite needs from a host, and the pieces every host shares.

A ``HostKit`` builds real agents of one AgentScope major with the hook attached and a
scripted model, and reads back what is in their context and archive, keyed the way the
adapter keys parts (``<msg id>/<type>...``), so one suite checks both adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from copaw_context.core.archive import read_archive
from copaw_context.core.config import RunningConfig, parse_running_config
from copaw_context.core.events import EventCallback
from tests.summaries import PREVIOUS_SUMMARY

__all__ = [
    "PREVIOUS_SUMMARY",
    "HostKit",
    "Reply",
    "archived_records",
    "config",
    "formatted_text",
]


def config(window: int, **light: Any) -> RunningConfig:
    """Settings for the invariant tests (the memory summariser off: it calls the model too)."""
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
                    },
                    **light,
                },
            }
        }
    )


def archived_records(workspace: Path) -> list[dict[str, Any]]:
    """Every archive line of the workspace, oldest file first."""
    return [
        record
        for path in sorted((workspace / "dialog").glob("*.jsonl"))
        for record in read_archive(path)
    ]


def formatted_text(message: dict[str, Any]) -> str:
    """The text of one OpenAI chat-completions message."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class Reply(Protocol):
    text: str
    status: list[str]


class HostKit(Protocol):
    """One AgentScope major, as the invariant tests drive it."""

    major: int
    form: str

    def hook(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        compactor: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> Any: ...

    def model(self, steps: Sequence[Any], *, context_size: int, stream: bool = False) -> Any: ...

    async def agent(
        self,
        hook: Any,
        model: Any,
        tools: Sequence[Callable[..., str]] = (),
        *,
        system_prompt: str = "You are a careful assistant.",
    ) -> Any: ...

    async def ask(self, agent: Any, text: str) -> Reply: ...

    async def seed(self, agent: Any, turns: int, result_bytes: int = 1500) -> None:
        """Put ``turns`` finished request/tool/answer turns into the context."""

    async def set_summary(self, agent: Any, text: str) -> None:
        """The summary the model receives, as if an earlier compaction had made it."""

    async def summary(self, agent: Any) -> str: ...

    def context_keys(self, agent: Any) -> list[str]: ...

    def context_roles(self, agent: Any) -> list[str]: ...

    def archived_keys(self, workspace: Path) -> list[str]: ...
