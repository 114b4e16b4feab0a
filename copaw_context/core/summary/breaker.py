"""A circuit breaker for a compactor that is down.

After ``compactor_failure_limit`` automatic compactions in a row whose compactor call
failed, the next compactions are extractive (no model call) for a pause of 2 compactions,
doubling after each failed retry up to ``compactor_pause_max_compactions``. A successful
call closes the breaker. ``/compact`` always tries the model. The state lives in the
engine's session state (``compactor_breaker``), so it survives a restart.
"""

from __future__ import annotations

from typing import Any

from copaw_context.core.context.state import SessionState

__all__ = ["CompactorBreaker"]

_KEY = "compactor_breaker"
_FIRST_PAUSE = 2


def _int(data: dict[str, Any], name: str) -> int:
    value = data.get(name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class CompactorBreaker:
    """A view over one agent's breaker state: failures in a row, the pause left, the last pause."""

    def __init__(self, state: SessionState, *, limit: int, max_pause: int) -> None:
        stored = state.data.get(_KEY)
        self._state = state
        self._data: dict[str, Any] = dict(stored) if isinstance(stored, dict) else {}
        self.limit, self.max_pause = max(1, limit), max(1, max_pause)

    @property
    def failures(self) -> int:
        return _int(self._data, "failures")

    @property
    def paused_left(self) -> int:
        """Compactions still to be made without the model (never more than the configured
        maximum: a saved state from a larger setting, or a planted one, is bounded)."""
        return min(_int(self._data, "paused_left"), self.max_pause)

    @property
    def last_pause(self) -> int:
        return min(_int(self._data, "last_pause"), self.max_pause)

    def allows(self, trigger: str) -> bool:
        """Whether this compaction may call the model (``/compact`` always may)."""
        return trigger == "command" or self.paused_left == 0

    def skipped(self) -> None:
        """One compaction was made without the model because of the pause."""
        self._set(paused_left=max(0, self.paused_left - 1))

    def succeeded(self) -> None:
        """The model answered: the breaker closes."""
        self._data = {}
        self._state.data.pop(_KEY, None)

    def failed(self) -> int:
        """The model failed; returns the pause that starts now (0 when none)."""
        failures = self.failures + 1
        if failures < self.limit:
            self._set(failures=failures)
            return 0
        # A failed retry after a pause doubles the pause.
        last = self.last_pause
        pause = min(self.max_pause, last * 2 if last else _FIRST_PAUSE)
        self._set(failures=failures, paused_left=pause, last_pause=pause)
        return pause

    def _set(self, **values: int) -> None:
        self._data.update(values)
        self._state.data[_KEY] = dict(self._data)
