"""What the demo did: one record per model call, the events, the files; why the context shrank."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from copaw_context.core.events import ContextEvent

__all__ = ["DemoResult", "StepRecord", "pruning_drops", "step_note"]


@dataclass(frozen=True)
class StepRecord:
    """One model call of the session."""

    step: int
    context_tokens: int
    truncated: int
    offloaded: int
    compactions: int


@dataclass
class DemoResult:
    """What the demo did."""

    steps: list[StepRecord] = field(default_factory=list)
    events: list[ContextEvent] = field(default_factory=list)
    threshold: int = 0
    window: int = 0
    summary: str = ""
    files: list[Path] = field(default_factory=list)
    pairing_problems: list[str] = field(default_factory=list)
    memory_log: str = ""
    recall: str = ""


def step_note(previous: StepRecord | None, record: StepRecord) -> str:
    """Why the context shrank since the previous call, when it did."""
    if previous is None or record.context_tokens >= previous.context_tokens:
        return ""
    if record.compactions > previous.compactions:
        return "  <- compacted"
    if record.truncated > previous.truncated:
        return "  <- older tool results cut to their smaller limit"
    return ""


def pruning_drops(result: DemoResult) -> list[StepRecord]:
    """Steps whose context shrank without a compaction because older tool results were cut."""
    return [
        record
        for previous, record in zip(result.steps, result.steps[1:], strict=False)
        if record.context_tokens < previous.context_tokens
        and record.compactions == previous.compactions
        and record.truncated > previous.truncated
    ]
