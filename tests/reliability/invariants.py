"""The invariants checked after every step of a session (engine or real agent).

1. the model input is valid under OpenAI, Anthropic and DashScope message rules;
2. every part (block) is in exactly one of the context and the archive (the dialog files
   plus the pending buffer kept in the session state), by its stable key;
3. the latest user request is in the context;
4. the model input, counted from scratch with the configured tokenizer, is within the window.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from copaw_context.core.archive.store import read_archive
from copaw_context.core.tokens import make_token_counter
from tests.reliability.provider_rules import input_tokens, provider_problems

__all__ = [
    "StepFigures",
    "archived_keys",
    "check_membership",
    "check_model_input",
    "check_step",
    "o200k",
]

_COUNTER: list[Any] = []


def o200k() -> Any:
    """The o200k_base counter (loaded once)."""
    if not _COUNTER:
        _COUNTER.append(make_token_counter("o200k_base"))
    return _COUNTER[0]


@dataclass
class StepFigures:
    """What a session tried (steps checked, model inputs validated, the largest input) and
    what broke, counted as the checks find it (each check still fails at once)."""

    steps: int = 0
    model_calls: int = 0
    max_input_ratio: float = 0.0
    invalid_inputs: int = 0
    over_window: int = 0
    lost: int = 0
    duplicated: int = 0
    problems: list[str] = field(default_factory=list)


class CheckedSession(Protocol):
    workspace: Path
    window: int
    reuse_ids: bool
    created: set[str]
    latest_user: str | None
    figures: StepFigures

    @property
    def host(self) -> Any: ...

    def context_keys(self) -> list[str]: ...

    def model_input(self) -> dict[str, list[dict[str, Any]]]: ...


def archived_keys(dialog: Path, pending: Iterable[dict[str, Any]]) -> Counter[str]:
    """Part keys in the dialog files and the pending buffer, with their multiplicity."""
    keys: Counter[str] = Counter()
    for path in sorted(dialog.glob("*.jsonl")):
        for record in read_archive(path):
            keys.update(record.get("parts") or [])
    for record in pending:
        keys.update(record.get("part_keys") or [])
    return keys


def check_membership(
    context: Iterable[str],
    archived: Counter[str],
    created: set[str],
    figures: StepFigures | None = None,
) -> None:
    """Every created key in exactly one of the context and the archive (counted into
    ``figures`` when given)."""
    in_context = Counter(context)
    twice = [k for k, n in (in_context + archived).items() if n > 1]
    lost = created - set(in_context) - set(archived)
    if figures is not None:
        figures.duplicated += len(twice)
        figures.lost += len(lost)
    assert not twice, f"in the context and the archive, or twice: {twice[:5]}"
    assert not lost, f"in neither the context nor the archive: {sorted(lost)[:5]}"


def check_model_input(
    formatted: dict[str, list[dict[str, Any]]],
    tool_schemas: str,
    window: int,
    figures: StepFigures,
    *,
    unique_ids: bool = True,
) -> None:
    """Valid for every provider, and within the window counted from scratch."""
    figures.model_calls += 1
    problems = provider_problems(formatted, unique_ids=unique_ids)
    broken = {name: found for name, found in problems.items() if found}
    figures.invalid_inputs += bool(broken)
    tokens = input_tokens(formatted["openai"], tool_schemas, o200k())
    figures.max_input_ratio = max(figures.max_input_ratio, tokens / window)
    figures.over_window += tokens > window
    assert not broken, f"invalid model input: {broken}"
    assert tokens <= window, f"model input of {tokens} tokens, window {window}"


async def check_step(session: CheckedSession, *, model_call: bool) -> None:
    """Check the invariants now; raise AssertionError naming the first broken one."""
    session.figures.steps += 1
    pending = session.host.state.get("pending_archive") or []
    archived = archived_keys(session.workspace / "dialog", pending)
    check_membership(session.context_keys(), archived, session.created, session.figures)
    if session.latest_user is not None:
        ids = {m.msg_id for m in session.host.messages}
        assert session.latest_user in ids, "the latest user request left the context"
    if model_call:
        check_model_input(
            session.model_input(),
            session.host.tool_schemas,
            session.window,
            session.figures,
            unique_ids=not session.reuse_ids,
        )
