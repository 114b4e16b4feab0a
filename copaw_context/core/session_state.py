"""Typed access to the engine's per-agent state, kept in the host's session state.

Everything that belongs to one agent (usage calibration, statistics, the storm guard, the bare
summary, warnings already given) is a plain JSON-able dict that the host saves with the
agent's session, so it survives a restart and one engine can serve several agents.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import MutableMapping
from typing import Any

from copaw_context.core.tokens import UsageCalibration

__all__ = ["SessionState"]

_STAT_NAMES = ("truncated", "offloaded", "compactions")
_REFS_ID = re.compile(r"[0-9a-f]{32}")


class SessionState:
    """A view over one agent's state mapping."""

    def __init__(self, data: MutableMapping[str, Any]) -> None:
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

    @property
    def summary(self) -> str | None:
        """The bare structured summary (without the dialog guide), if one was made."""
        value = self.data.get("summary")
        return value if isinstance(value, str) else None

    @summary.setter
    def summary(self, value: str | None) -> None:
        if value is None:
            self.data.pop("summary", None)
        else:
            self.data["summary"] = value

    @property
    def guard_total(self) -> int | None:
        """Tokens after a compaction that freed too little (the storm guard), if any."""
        value = self.data.get("guard_total")
        return value if isinstance(value, int) else None

    @guard_total.setter
    def guard_total(self, value: int | None) -> None:
        if value is None:
            self.data.pop("guard_total", None)
        else:
            self.data["guard_total"] = int(value)

    @property
    def pending_archive(self) -> list[dict[str, Any]]:
        """Records that could not be archived yet (see :mod:`copaw_context.core.archiving`)."""
        value = self.data.get("pending_archive")
        return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []

    @pending_archive.setter
    def pending_archive(self, records: list[dict[str, Any]]) -> None:
        if records:
            self.data["pending_archive"] = records
        else:
            self.data.pop("pending_archive", None)

    @property
    def overflow_factor(self) -> float:
        """What the provider's "input too long" errors taught: our count times this at least."""
        return _saved_factor(self.data.get("overflow_factor"))

    @overflow_factor.setter
    def overflow_factor(self, value: float) -> None:
        if value <= 1.0:
            self.data.pop("overflow_factor", None)
        else:
            self.data["overflow_factor"] = round(float(value), 4)

    @property
    def overflow_evidence(self) -> float:
        """The provider's own count against ours, from the last overflow error with figures."""
        return _saved_factor(self.data.get("overflow_evidence"))

    @overflow_evidence.setter
    def overflow_evidence(self, value: float) -> None:
        if value <= 1.0:
            self.data.pop("overflow_evidence", None)
        else:
            self.data["overflow_evidence"] = round(float(value), 4)

    @property
    def offload_refs_id(self) -> str:
        """This agent's offload manifest id (made on first use, saved with the state)."""
        value = self.data.get("offload_refs_id")
        if isinstance(value, str) and _REFS_ID.fullmatch(value):
            return value
        value = self.data["offload_refs_id"] = uuid.uuid4().hex
        return value

    def warn_once(self, topic: str) -> bool:
        """True the first time ``topic`` is raised for this agent."""
        warned = self.data.get("warned")
        if not isinstance(warned, list):
            warned = self.data["warned"] = []
        if topic in warned:
            return False
        warned.append(topic)
        return True

    def forget_conversation(self) -> None:
        """What ``/clear`` and ``/new`` drop: the summary, the storm guard and what overflows
        taught (another conversation, perhaps another provider)."""
        self.summary = None
        self.guard_total = None
        self.overflow_factor = 1.0
        self.overflow_evidence = 1.0


MAX_SAVED_FACTOR = 8.0  # the most an overflow error may teach (recovery caps it the same)


def _saved_factor(value: object) -> float:
    """A saved overflow factor, read defensively: a number in [1, 8], else 1 (a hand-edited
    or corrupt state must not kill the reply or switch compaction off)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 1.0
    try:
        factor = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return MAX_SAVED_FACTOR
    if not math.isfinite(factor):
        return MAX_SAVED_FACTOR if factor > 0 else 1.0
    return min(max(factor, 1.0), MAX_SAVED_FACTOR)
