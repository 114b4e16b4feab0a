"""The ContextEngine driven directly through a fake host: no AgentScope anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.archive.store import read_archive
from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import CompactionRecord, ContextEvent
from copaw_context.core.host.protocol import MessageView
from copaw_context.core.tokens.usage import ReportedUsage
from copaw_context.testing import ScriptedTextModel
from tests.fake_host import (
    FakeHost,
    FakeMessage,
    call,
    engine_config,
    result,
    text,
    user,
)
from tests.helpers import six_section_summary

SUMMARY = six_section_summary(2)


config = engine_config  # the engine tests' config (shared with the host-neutral tests)


def conversation(turns: int, size: int = 120) -> list[FakeMessage]:
    messages: list[FakeMessage] = []
    for n in range(turns):
        messages.append(user(f"question {n}: " + "details " * size))
        messages.append(
            FakeMessage(
                "assistant",
                [
                    text(f"checking {n}"),
                    call(f"c{n}", "grep", json.dumps({"path": f"src/m{n}.py"})),
                    result(f"c{n}", "match " * size, "grep"),
                    text(f"answer {n}"),
                ],
            )
        )
    return messages


def archived(workspace: Path) -> list[dict[str, Any]]:
    return [r for p in sorted((workspace / "dialog").glob("*.jsonl")) for r in read_archive(p)]


async def test_over_the_threshold_the_engine_compacts_archives_and_summarises(
    tmp_path: Path,
) -> None:
    events: list[ContextEvent] = []
    records: list[CompactionRecord] = []
    engine = ContextEngine(config(compactor="llm"), tmp_path, on_event=events.append)
    engine.add_compaction_listener(records.append)
    model = ScriptedTextModel(default=lambda request: SUMMARY)
    host = FakeHost(conversation(14), window=4000, compactor=model)
    before = len(host.messages)
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction" and event.method == "llm"
    assert event.tokens_after <= event.threshold_tokens < event.tokens_before
    assert len(host.messages) < before and host.messages[0].role == "user"
    assert "dialog/" in host.summary and "Ship the parser fix" in host.summary
    assert len(model.requests) == 1
    lines = archived(tmp_path)
    assert lines and all(line["form"] == "fake" and line["parts"] for line in lines)
    (record,) = records
    assert record.summary is not None and len(record.messages) == event.messages_compacted
    assert engine.context.state(host).stats["compactions"] == 1


async def test_below_the_threshold_nothing_happens(tmp_path: Path) -> None:
    engine = ContextEngine(config(200_000), tmp_path)
    host = FakeHost(conversation(3), window=200_000)
    assert await engine.before_reasoning(host) is None
    assert len(host.messages) == 6 and not archived(tmp_path)


class CountingHost(FakeHost):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.viewed: list[tuple[int, int]] = []

    def view(self, index: int, first_part: int = 0) -> MessageView:
        self.viewed.append((index, first_part))
        return super().view(index, first_part)


async def test_a_step_views_only_what_changed(tmp_path: Path) -> None:
    engine = ContextEngine(config(200_000, compactor="extractive"), tmp_path)
    host = CountingHost(conversation(50, size=20), window=200_000)
    await engine.before_reasoning(host)
    assert len(host.viewed) >= 100
    host.viewed.clear()
    host.messages[-1].parts.append(text("one more block"))
    host.messages.append(user("and now?"))
    await engine.before_reasoning(host)
    await engine.input_meter.measure(host)
    # The grown message from its last known part, and the new message: nothing older.
    assert sorted(set(host.viewed)) == [(99, 3), (100, 0)]


async def test_a_step_tokenises_each_new_text_once(tmp_path: Path) -> None:
    """The model-call check reuses the counts: marking a result seen changes no text."""
    engine = ContextEngine(config(200_000, compactor="extractive"), tmp_path)
    host = FakeHost(conversation(20, size=20), window=200_000)
    await engine.before_reasoning(host)
    await engine.input_meter.measure(host)
    meter = await engine.context.meter(host)
    counted: list[str] = []
    count = meter.counter.count

    def counting(text: str) -> int:
        counted.append(text)
        return count(text)

    meter.counter.count = counting  # type: ignore[method-assign]
    new_result = result("c-new", "fresh output line\n" * 40, "grep", unseen=True)
    host.messages.append(
        FakeMessage("assistant", [call("c-new", "grep", json.dumps({"path": "a.py"})), new_result])
    )
    await engine.before_reasoning(host)
    assert engine.context.ledger(host).messages[-1].parts[-1].unseen
    await engine.input_meter.measure(host)
    assert counted.count(new_result.text) == 1
    entry = engine.context.ledger(host).messages[-1].parts[-1]
    assert not entry.unseen  # seen after the model call, without a recount


async def test_the_storm_guard_keeps_the_llm_compactor_for_real_growth(tmp_path: Path) -> None:
    engine = ContextEngine(config(compactor="llm"), tmp_path)
    model = ScriptedTextModel(default=lambda request: SUMMARY)
    pinned = FakeMessage("user", [text("reference: " + "pinned fact. " * 700)], pinned=True)
    host = FakeHost([pinned, *conversation(6, size=40)], window=4000, compactor=model)
    for n in range(6):
        await engine.before_reasoning(host)
        host.messages.append(user(f"more {n}"))
    assert len(model.requests) <= 2, "an LLM call per step when compaction frees too little"


async def test_an_overflow_is_recovered_once_and_learned(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    engine = ContextEngine(config(compactor="extractive"), tmp_path, on_event=events.append)
    host = FakeHost(conversation(6, size=40), window=4000)
    await engine.input_meter.measure(host)
    sent = engine.context.state(host).last_prompt_tokens
    calls: list[str] = []

    async def send(model_input: str) -> str:
        calls.append(model_input)
        if model_input == "first":
            raise RuntimeError(f"prompt is too long: {sent * 3} tokens > 4000 maximum")
        return "ok"

    async def rebuild() -> str:
        return "rebuilt"

    assert await engine.call_model(host, "first", send, rebuild, lambda _: None) == "ok"
    assert calls == ["first", "rebuilt"]
    assert host.model_inputs == ["first", None, "rebuilt", None]  # each measured, then cleared
    assert engine.context.state(host).overflow_factor >= 2.9
    assert [e.kind for e in events].count("overflow_recovery") == 1
    assert (await engine.report(host)).calibration >= 2.9


async def test_other_errors_pass_through(tmp_path: Path) -> None:
    engine = ContextEngine(config(), tmp_path)
    host = FakeHost(conversation(1))

    async def send(model_input: str) -> str:
        raise ValueError("bad tool arguments")

    async def rebuild() -> str:
        raise AssertionError("not called")

    with pytest.raises(ValueError, match="bad tool arguments"):
        await engine.call_model(host, "input", send, rebuild, lambda _: None)


async def test_usage_of_a_stream_is_read_after_its_last_chunk(tmp_path: Path) -> None:
    engine = ContextEngine(config(token_counter="estimate"), tmp_path)
    host = FakeHost(conversation(2, size=40), window=32768)
    measured = await engine.input_meter.measure(host)
    seen: list[str] = []

    async def stream() -> Any:
        for chunk in ("a", "b", "last"):
            yield chunk

    async def send(model_input: str) -> Any:
        return stream()

    def usage(chunk: str) -> ReportedUsage | None:
        seen.append(chunk)
        return ReportedUsage(measured.tokens * 2)

    async def rebuild() -> str:
        raise AssertionError("not called")

    response = await engine.call_model(host, "input", send, rebuild, usage)
    assert seen == []  # nothing read before the stream is consumed
    assert [chunk async for chunk in response] == ["a", "b", "last"]
    assert seen == ["last"]
    assert engine.context.state(host).calibration.factor > 1.0


async def test_a_failing_usage_reader_never_fails_the_call(tmp_path: Path) -> None:
    engine = ContextEngine(config(token_counter="estimate"), tmp_path)
    host = FakeHost(conversation(2, size=40))

    async def send(model_input: str) -> str:
        return "reply"

    def usage(response: str) -> ReportedUsage | None:
        raise KeyError("usage")

    async def rebuild() -> str:
        raise AssertionError("not called")

    assert await engine.call_model(host, "input", send, rebuild, usage) == "reply"


async def test_commands_through_the_engine(tmp_path: Path) -> None:
    engine = ContextEngine(config(200_000, compactor="extractive"), tmp_path)
    host = FakeHost(conversation(4), window=200_000)
    context = await engine.run_command(host, "context", "")
    assert "Window: 200000 tokens (from test)" in context
    compacted = await engine.run_command(host, "compact", "keep the module names")
    assert "**Compact Complete!**" in compacted
    # the last turn is answered: its request goes with its answer, none is left open
    assert host.messages == [] and "- Messages compacted: 8" in compacted
    texts = [str(r) for r in archived(tmp_path)]
    assert any("question 3: " in t for t in texts) and any("answer 3" in t for t in texts)
    host.messages.append(user("next question"))
    host.awaiting = True
    assert "Not cleared" in await engine.run_command(host, "clear", "")
    host.awaiting = False
    session = host.session_id
    cleared = await engine.run_command(host, "new", "")
    assert "**New session started.** 1 message(s) archived" in cleared
    assert host.messages == [] and host.summary == "" and host.session_id != session
    assert engine.context.state(host).summary is None


async def test_fresh_results_are_kept_and_fitted(tmp_path: Path) -> None:
    engine = ContextEngine(config(compactor="extractive"), tmp_path)
    host = FakeHost(conversation(4, size=40), window=4000)
    host.messages.append(user("read both logs"))
    parts, meta = await engine.on_tool_result(host, "cat", "{}", ["log line\n" * 3000], {})
    host.messages.append(
        FakeMessage(
            "assistant",
            [call("big", "cat"), result("big", parts[0], "cat", **meta)],
        )
    )
    event = await engine.before_reasoning(host)
    assert event is not None
    kept = [p for m in host.messages for p in m.parts if p.call_id == "big"]
    assert [p.kind for p in kept] == ["tool_call", "tool_result"], "the unseen result stays"
    report = await engine.report(host)
    assert report.total <= report.threshold


async def test_a_call_left_without_a_result_does_not_stop_compaction(tmp_path: Path) -> None:
    """An interrupted turn leaves a call with no result; once the agent has answered a later
    request it is an orphan: compacted (with its message), never kept, never blocking."""
    engine = ContextEngine(config(compactor="extractive"), tmp_path)
    orphan = FakeMessage("assistant", [text("running it"), call("lost1", "run_cmd")])
    later = conversation(14)
    host = FakeHost([user("start"), orphan, *later], window=4000)
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction"
    assert event.tokens_after <= event.threshold_tokens
    assert orphan.msg_id not in [m.msg_id for m in host.messages]
    assert orphan.msg_id in [line["message"]["id"] for line in archived(tmp_path)]


async def test_a_call_of_the_request_being_answered_stays_pending(tmp_path: Path) -> None:
    """A call without a result after the latest request is pending: it and what follows stay."""
    engine = ContextEngine(config(compactor="extractive"), tmp_path)
    pending = FakeMessage("assistant", [text("running it"), call("run1", "run_cmd")])
    host = FakeHost([*conversation(14), user("now run it"), pending], window=4000)
    await engine.before_reasoning(host)
    assert host.messages[-1].msg_id == pending.msg_id
    assert host.messages[-2].role == "user"


async def test_a_call_left_before_a_new_request_is_abandoned_at_once(tmp_path: Path) -> None:
    """A run killed during its tool call, then a new request: the call is abandoned (not the
    current step's) from the first step of the new turn, so it is compacted; before, it was
    kept as unfinished, with everything after it, until the agent answered."""
    engine = ContextEngine(config(compactor="extractive"), tmp_path)
    killed = FakeMessage("assistant", [text("running it"), call("run1", "run_cmd")])
    host = FakeHost([*conversation(14), user("run it"), killed, user("next")], window=4000)
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction"
    assert killed.msg_id not in [m.msg_id for m in host.messages]
    assert killed.msg_id in [line["message"]["id"] for line in archived(tmp_path)]
    assert host.messages[-1].role == "user"


async def test_what_cannot_be_cut_is_said_when_the_window_is_still_exceeded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[ContextEvent] = []
    engine = ContextEngine(config(compactor="extractive"), tmp_path, on_event=events.append)
    huge = json.dumps({"cmd": "echo " + "data " * 20_000})
    fresh = result("w1", "ok", "run_cmd", unseen=True)  # the model has not seen it yet
    turn = FakeMessage("assistant", [call("w1", "run_cmd", huge), fresh])
    host = FakeHost([user("write the file"), turn], window=4000)
    with caplog.at_level("WARNING", logger="copaw_context"):
        await engine.before_reasoning(host)
    assert "still" in caplog.text and "cannot be cut" in caplog.text
    (event,) = [e for e in events if e.kind == "truncation"]
    assert event.tokens_after > 4000 and "tool calls' arguments" in event.message
    assert [m.msg_id for m in host.messages] == [host.messages[0].msg_id, turn.msg_id]


async def test_pinned_messages_are_cut_not_compacted_when_they_overflow_the_window(
    tmp_path: Path,
) -> None:
    engine = ContextEngine(config(compactor="extractive"), tmp_path)
    pinned = [
        FakeMessage(
            "user", [text(f"pinned {n}: " + f"rule {n} says keep this. " * 150)], pinned=True
        )
        for n in range(6)
    ]
    host = FakeHost([*pinned, user("and now?")], window=4000)
    before = await engine.report(host)
    assert before.total > 4000, "the pins alone overflow the window"
    await engine.before_reasoning(host)
    after = await engine.report(host)
    assert after.total <= 4000
    kept = {m.msg_id for m in host.messages}
    assert {m.msg_id for m in pinned} <= kept, "pins are never compacted"
    cut = [m for m in host.messages if "<<<TRUNCATED>>>" in m.parts[0].text]
    assert cut and cut[0].msg_id == pinned[0].msg_id, "the oldest first"
    saved = list((tmp_path / "dialog" / "requests").iterdir())
    assert len(saved) == len(cut), "each full text saved before its cut"
    assert saved[0].read_text(encoding="utf-8").startswith("pinned ")
