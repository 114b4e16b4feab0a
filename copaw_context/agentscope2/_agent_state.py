"""Per-agent state of the hook, kept in the agent's own session state.

One hook instance may serve several agents: everything that belongs to one agent (usage
calibration, statistics, the storm guard, the bare summary) lives in
``agent.state.middle_context`` under the hook's middleware key, so it is saved and restored
with the agent's session and never leaks between agents.
"""

from __future__ import annotations

from typing import Any

from copaw_context.core.tokens import UsageCalibration

__all__ = ["LEGACY_STATE_KEY", "AgentEntry", "agent_entry"]

LEGACY_STATE_KEY = "copaw_context"
"""Where versions up to 0.1.0 kept this state; moved to the middleware key on first use."""

_STAT_NAMES = ("truncated", "offloaded", "compactions")


class AgentEntry:
    """Typed access to one agent's entry (a plain JSON-able dict in ``middle_context``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @property
    def calibration(self) -> UsageCalibration:
        return UsageCalibration.from_dict(self.data.get("calibration"))

    @calibration.setter
    def calibration(self, value: UsageCalibration) -> None:
        self.data["calibration"] = value.as_dict()

    @property
    def stats(self) -> dict[str, int]:
        stored = self.data.get("stats")
        stats = {name: 0 for name in _STAT_NAMES}
        if isinstance(stored, dict):
            stats.update({k: v for k, v in stored.items() if isinstance(v, int)})
        return stats

    def add_stats(self, **counts: int) -> None:
        stats = self.stats
        for name, value in counts.items():
            stats[name] = stats.get(name, 0) + value
        self.data["stats"] = stats

    @property
    def last_prompt_tokens(self) -> int:
        value = self.data.get("last_prompt_tokens", 0)
        return value if isinstance(value, int) else 0

    @last_prompt_tokens.setter
    def last_prompt_tokens(self, value: int) -> None:
        self.data["last_prompt_tokens"] = int(value)

    def warn_once(self, topic: str) -> bool:
        """True the first time ``topic`` is raised for this agent."""
        warned = self.data.setdefault("warned", [])
        if not isinstance(warned, list):
            warned = self.data["warned"] = []
        if topic in warned:
            return False
        warned.append(topic)
        return True


async def agent_entry(hook: Any, agent: Any) -> AgentEntry:
    """The hook's entry for ``agent``, created (or moved from the legacy key) on first use."""
    key = await hook.get_middleware_key()
    context: dict[str, Any] = agent.state.middle_context
    data = context.get(key)
    if not isinstance(data, dict):
        legacy = context.pop(LEGACY_STATE_KEY, None) if key != LEGACY_STATE_KEY else None
        data = legacy if isinstance(legacy, dict) else {}
        context[key] = data
    return AgentEntry(data)
