"""Issue 17 item 17: a circuit breaker for a compactor that is down (engine level).

After ``compactor_failure_limit`` automatic compactions in a row whose compactor failed, the
compactor is paused (extractive summaries) for 2 compactions, doubling after each failed
retry; a success closes it; the state survives a restart; ``/compact`` still tries it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import ContextEvent
from copaw_context.testing import ScriptedTextModel
from tests.fake_host import FakeHost, FakeMessage, call, result, text, user
from tests.fake_host import engine_config as config
from tests.helpers import six_section_summary

SUMMARY = six_section_summary(2)


class _Backend:
    """A compactor backend that is down until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False

    def __call__(self, request: str) -> str:
        if not self.up:
            raise RuntimeError("provider 503: upstream unavailable")
        return SUMMARY


def _engine(tmp_path: Path, events: list[ContextEvent], **light: object) -> ContextEngine:
    engine = ContextEngine(
        config(4000, compactor="llm", compactor_retries=0, **light),
        tmp_path,
        on_event=events.append,
    )
    engine.context.compactor_retry_delay = 0.0
    return engine


def _turns(round_: int, count: int = 14) -> list[FakeMessage]:
    """``count`` turns with tool call ids of their own (round ``round_``)."""
    messages: list[FakeMessage] = []
    for n in range(count):
        cid = f"r{round_}c{n}"
        messages.append(user(f"question {round_}.{n}: " + "details " * 120))
        messages.append(
            FakeMessage(
                "assistant",
                [text(f"checking {n}"), call(cid, "grep"), result(cid, "match " * 120, "grep")],
            )
        )
    return messages


async def _grow_and_compact(engine: ContextEngine, host: FakeHost, n: int) -> ContextEvent:
    host.messages.extend(_turns(n))
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction", event
    return event


async def test_a_down_compactor_is_paused_with_a_doubling_pause_and_a_restart_keeps_it(
    tmp_path: Path,
) -> None:
    events: list[ContextEvent] = []
    backend = _Backend()
    model = ScriptedTextModel(default=backend)
    host = FakeHost(_turns(-1, 2), window=4000, compactor=model)
    engine = _engine(tmp_path, events)
    calls: list[int] = []  # compactor requests made by each compaction
    for n in range(4):
        before = len(model.requests)
        await _grow_and_compact(engine, host, n)
        calls.append(len(model.requests) - before)
    # Three failures open the breaker; the 4th compaction makes no call.
    assert calls == [1, 1, 1, 0]
    paused = [e for e in events if e.kind == "compactor_paused"]
    assert len(paused) == 1 and "next 2 compactions" in paused[0].message
    assert "provider 503" in str(paused[0].fallback_reason)
    compactions = [e for e in events if e.kind == "compaction"]
    assert compactions[-1].method == "extractive"
    assert "paused" in str(compactions[-1].fallback_reason)

    # A restart: a new engine over the same saved session state keeps the pause.
    engine = _engine(tmp_path, events)
    for n in range(4, 10):
        before = len(model.requests)
        await _grow_and_compact(engine, host, n)
        calls.append(len(model.requests) - before)
    # 1 paused, retry fails -> pause 4, then the next retry.
    assert calls[4:] == [0, 1, 0, 0, 0, 0]
    assert len([e for e in events if e.kind == "compactor_paused"]) == 2
    assert "next 4 compactions" in [e for e in events if e.kind == "compactor_paused"][-1].message

    # /compact always tries the model; when it answers, the breaker closes.
    backend.up = True
    before = len(model.requests)
    reply = await engine.run_command(host, "compact", "")
    assert len(model.requests) == before + 1 and "Compact" in reply
    assert "compactor_breaker" not in host.state
    await _grow_and_compact(engine, host, 11)
    assert len(model.requests) == before + 2


async def test_the_pause_never_exceeds_its_maximum(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    model = ScriptedTextModel(default=_Backend())
    host = FakeHost(_turns(-1, 2), window=4000, compactor=model)
    engine = _engine(tmp_path, events, compactor_failure_limit=1, compactor_pause_max_compactions=3)
    for n in range(14):
        await _grow_and_compact(engine, host, n)
    pauses = [e.message for e in events if e.kind == "compactor_paused"]
    # Pauses of 2, then 3 (capped), 3, ...: calls at compactions 1, 4, 8, 12.
    assert len(model.requests) == 4 and len(pauses) == 4
    assert "next 2 compactions" in pauses[0] and all("next 3 compactions" in p for p in pauses[1:])


def test_every_event_kind_is_emitted_and_every_error_type_raised_somewhere() -> None:
    """No dead public names (issue 17 item 22): every event kind is built by the package,
    and every public error type (or, for a base class, a subclass of it) is raised."""
    import re
    from typing import get_args

    import copaw_context
    from copaw_context.core.events import EventKind

    root = Path(copaw_context.__file__).parent
    source = "\n".join(p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py")))
    built = set(re.findall(r'kind="([a-z_]+)"', source))
    assert set(get_args(EventKind)) <= built, set(get_args(EventKind)) - built
    raised = set(re.findall(r"raise (\w+)\(", source))
    errors = [
        getattr(copaw_context, name)
        for name in copaw_context.__all__
        if isinstance(getattr(copaw_context, name), type)
        and issubclass(getattr(copaw_context, name), copaw_context.CopawContextError)
    ]
    assert errors
    for error in errors:
        names = {error.__name__} | {sub.__name__ for sub in error.__subclasses__()}
        assert names & raised, f"{error.__name__} is never raised"


@pytest.mark.parametrize("saved", [10**9, 33, 5])
def test_a_saved_pause_is_bounded_by_the_configured_maximum(saved: int) -> None:
    """Found from outside: a planted pause of 10**9 kept a healthy compactor from ever being
    called, and lowering ``compactor_pause_max_compactions`` did not shorten a saved pause."""
    from copaw_context.core.context.state import SessionState
    from copaw_context.core.summary.breaker import CompactorBreaker

    state = SessionState({"compactor_breaker": {"paused_left": saved, "last_pause": saved}})
    breaker = CompactorBreaker(state, limit=3, max_pause=4)
    assert breaker.paused_left == min(saved, 4) and breaker.last_pause == min(saved, 4)
    for _ in range(4):
        breaker.skipped()
    assert breaker.allows("auto"), "the pause never ends"
