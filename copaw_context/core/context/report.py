"""Token figures of one agent's next model input, against threshold and window."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits", "TokenReport"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Compaction threshold and reserve in tokens (from the config, or given by the host)."""

    threshold: int
    reserve: int


@dataclass(frozen=True)
class TokenReport:
    """Tokens the model would receive now, by part, against threshold and window."""

    system: int
    summary: int
    tools: int
    messages: int
    threshold: int
    reserve: int
    window: int
    window_source: str  # "running.max_input_length" | "model.context_size" | ...
    counter: str
    calibration: float
    floor: int = 0
    """UTF-8 bytes / 5 of everything: no count (calibrated or not) is believed below it."""
    message_count: int = 0

    @property
    def fixed(self) -> int:
        """System prompt + summary + tool schemas."""
        return self.system + self.summary + self.tools

    @property
    def raw(self) -> int:
        """Everything, as our counter counts it."""
        return self.fixed + self.messages

    @property
    def total(self) -> int:
        """Everything, calibrated by the provider's reported usage (never below the floor)."""
        if self.calibration == 1.0:
            return self.raw  # an exact counter, or no usage seen yet
        return max(round(self.raw * self.calibration), self.floor)

    @property
    def factor(self) -> float:
        """How much one of our counted tokens weighs in ``total``."""
        return self.total / self.raw if self.raw else 1.0

    def describe(self) -> str:
        """The ``/context`` reply."""
        return "\n".join(
            [
                "**Context usage**",
                "",
                f"- System prompt: {self.system} tokens",
                f"- Summary: {self.summary} tokens",
                f"- Messages ({self.message_count}): {self.messages} tokens",
                f"- Tool schemas: {self.tools} tokens",
                f"- Total: {self.total} tokens "
                f"(calibration x{self.calibration:.2f}, counter {self.counter})",
                f"- Compaction threshold: {self.threshold} tokens; "
                f"reserve for recent messages: {self.reserve}",
                f"- Window: {self.window} tokens (from {self.window_source})",
            ]
        )
