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

    def __init__(
        self,
        data: MutableMapping[str, Any],
        *,
        model_key: str | None = None,
        primary_key: str | None = None,
    ) -> None:
        self.data = data
        self.model_key = model_key
        """The model this view's overflow figures belong to (None: one set for all)."""
        self.primary_key = primary_key
        """The agent's own model, whose figures the top-level keys also hold."""

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
        """Records that could not be archived yet (see :mod:`copaw_context.core.steps.archive`)."""
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
        """What the provider's "input too long" errors taught about the model of this view:
        our count times this at least."""
        return self._overflow(_FACTOR)

    @overflow_factor.setter
    def overflow_factor(self, value: float) -> None:
        self._set_overflow(_FACTOR, value)

    @property
    def overflow_evidence(self) -> float:
        """The provider's own count against ours, from the model's last overflow error with
        figures."""
        return self._overflow(_EVIDENCE)

    @overflow_evidence.setter
    def overflow_evidence(self, value: float) -> None:
        self._set_overflow(_EVIDENCE, value)

    # What an overflow taught belongs to the model that raised it (a fallback model with a
    # smaller window must not shrink the primary). Keyed views keep one entry per model in
    # ``overflow_by_model``; the primary's entry is mirrored in the top-level keys that
    # versions before it read, and a state saved by them (top-level keys only) is the
    # primary's. An unkeyed view (model_key None) reads and writes the top-level keys only.
    def _overflow(self, name: str) -> float:
        if self.model_key is None:
            return _saved_factor(self.data.get(_LEGACY[name]))
        entry = self._by_model().get(self.model_key)
        return _saved_factor(entry.get(name) if isinstance(entry, dict) else None)

    def _set_overflow(self, name: str, value: float) -> None:
        if self.model_key is None or self.model_key == self.primary_key:
            _put(self.data, _LEGACY[name], value)
        if self.model_key is None:
            return
        models = self._by_model()
        entry = models.pop(self.model_key, None)
        entry = dict(entry) if isinstance(entry, dict) else {}
        _put(entry, name, value)
        if entry:
            models[self.model_key] = entry  # the newest last
        while len(models) > MAX_OVERFLOW_MODELS:
            oldest = next(k for k in models if k != self.primary_key)
            del models[oldest]
        if models:
            self.data[_BY_MODEL] = models
        else:
            self.data.pop(_BY_MODEL, None)

    def _by_model(self) -> dict[str, Any]:
        """The per-model entries; a state saved before them is the primary's (moved once)."""
        models = self.data.get(_BY_MODEL)
        if isinstance(models, dict):
            return {str(k): v for k, v in models.items() if isinstance(v, dict)}
        models = {}
        legacy = {n: self.data[k] for n, k in _LEGACY.items() if k in self.data}
        if legacy and self.primary_key is not None:
            models[self.primary_key] = legacy
        return models

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
        self.data.pop(_BY_MODEL, None)
        for key in _LEGACY.values():
            self.data.pop(key, None)


MAX_SAVED_FACTOR = 8.0  # the most an overflow error may teach (recovery caps it the same)
MAX_OVERFLOW_MODELS = 4  # models whose overflow figures are kept (the primary always)
_FACTOR, _EVIDENCE = "factor", "evidence"
_LEGACY = {_FACTOR: "overflow_factor", _EVIDENCE: "overflow_evidence"}
_BY_MODEL = "overflow_by_model"


def _put(data: MutableMapping[str, Any], key: str, value: float) -> None:
    """``value`` rounded under ``key``; 1 (nothing learned) is not saved."""
    if value <= 1.0:
        data.pop(key, None)
    else:
        data[key] = round(float(value), 4)


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
