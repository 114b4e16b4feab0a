"""End-to-end invariants on a real agent of the installed AgentScope major (both adapters).

At every model call the input is valid under OpenAI's tool-call rules and holds the latest
request; every message the model ever saw is in the context or in the archive, exactly once;
a failing compactor keeps the previous summary; ``/compact`` and the other commands work.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.events import ContextEvent
from copaw_context.testing import ModelCall, openai_pairing_problems, text_step
from tests.invariants.policy import SessionPolicy, session_tools, user_turns
from tests.invariants.settings import config
from tests.reliability.drivers import HostDriver
from tests.summaries import PREVIOUS_SUMMARY


async def test_a_long_session_stays_valid_and_loses_nothing(
    driver: HostDriver, tmp_path: Path
) -> None:
    events: list[ContextEvent] = []
    hook = driver.hook(config(6000, compactor="llm"), tmp_path, on_event=events.append)
    seen: set[str] = set()
    problems: list[str] = []
    current = {"request": ""}
    holder: dict[str, Any] = {}

    def check(call: ModelCall, request: str) -> None:
        problems.extend(openai_pairing_problems(call.formatted))
        if request != current["request"]:
            problems.append(f"the latest request is missing: {current['request']!r}")
        seen.update(driver.context_keys(holder["agent"]))

    policy = SessionPolicy(check)
    model = driver.model([policy] * 400, context_size=6000)
    agent = holder["agent"] = await driver.agent(hook, model, session_tools())
    for text in user_turns(12):
        current["request"] = text
        reply = await driver.reply(agent, text)
        assert reply.text.endswith("is done."), reply.text

    assert problems == []
    compactions = [e for e in events if e.kind == "compaction"]
    assert len(compactions) >= 3 and policy.compactor_calls >= 1
    assert all(e.tokens_after < e.tokens_before for e in compactions)
    archived = driver.archived_keys(tmp_path)
    final = driver.context_keys(agent)
    assert len(archived) == len(set(archived)), "a part was archived twice"
    assert not set(archived) & set(final), "a part is both archived and in the context"
    assert seen <= set(archived) | set(final), "a part left the context without the archive"
    summary = await driver.summary(agent)
    assert summary.count("## Goal") == 1 and "dialog/" in summary


async def _slow(call: ModelCall) -> list[Any]:
    await asyncio.sleep(30)
    return text_step("too late")


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (RuntimeError("provider 500"), "provider 500"),
        (text_step(""), "empty"),
        (text_step("## Hello!\nNice chat."), "missing"),
        (_slow, "timed out"),
    ],
    ids=["raises", "empty", "no-sections", "timeout"],
)
async def test_a_failing_compactor_keeps_the_previous_summary(
    driver: HostDriver, tmp_path: Path, step: Any, reason: str
) -> None:
    events: list[ContextEvent] = []
    compactor = driver.model([step, step, step], context_size=32768)
    settings = config(4000, compactor="llm", compactor_timeout_seconds=0.2)
    hook = driver.hook(settings, tmp_path, compactor=compactor, on_event=events.append)
    hook.compactor_retry_delay = 0.001
    agent = await driver.agent(hook, driver.model([text_step("still working")], context_size=4000))
    await driver.seed(agent, 8)
    await driver.set_summary(agent, PREVIOUS_SUMMARY)
    reply = await driver.reply(agent, "What next?")
    assert reply.text == "still working"
    summary = await driver.summary(agent)
    for item in (
        "Ship the parser fix for ticket PARSE-17",
        "Never modify vendor/ files",
        "Reproduced the crash in src/parser.c",
        "Keep the public API unchanged",
        "/repo/src/parser.c:412 is where tok is undeclared",
    ):
        assert item in summary, f"previous summary item lost: {item}"
    assert summary.count("## Goal") == 1
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.method == "extractive" and reason in (event.fallback_reason or "")


async def test_compact_and_the_other_commands(driver: HostDriver, tmp_path: Path) -> None:
    requests: list[str] = []

    def summarise(call: ModelCall) -> list[Any]:
        requests.append(str(call.formatted[-1].get("content")))
        return text_step(PREVIOUS_SUMMARY)

    compactor = driver.model([summarise], context_size=32768)
    hook = driver.hook(config(200_000, compactor="llm"), tmp_path, compactor=compactor)
    model = driver.model([text_step("answer")], context_size=200_000)
    agent = await driver.agent(hook, model)
    empty = await driver.reply(agent, "/compact")
    assert "No messages to compact" in empty.text

    await driver.seed(agent, 5)
    total = len(driver.context_roles(agent))
    keys = driver.context_keys(agent)
    reply = await driver.reply(agent, "/compact only keep requirements and decisions")
    assert reply.text.startswith("**Compact Complete!**")
    # the last turn is answered: the request goes with its answer, nothing is left open
    assert f"- Messages compacted: {total}" in reply.text
    assert " -> " in reply.text and "**Compressed Summary:**" in reply.text
    assert "Ship the parser fix for ticket PARSE-17" in reply.text
    assert "only keep requirements and decisions" in requests[0]
    assert driver.context_roles(agent) == []
    assert sorted(driver.archived_keys(tmp_path)) == sorted(keys)
    compactor.assert_complete()

    context = await driver.reply(agent, "/context")
    assert "Window: 200000 tokens (from running.max_input_length)" in context.text
    history = await driver.reply(agent, "/history")
    assert history.text.startswith("**Context history** (0 messages")
    cleared = await driver.reply(agent, "/clear")
    assert "0 message(s) archived; summary cleared" in cleared.text
    assert driver.context_roles(agent) == [] and await driver.summary(agent) == ""
    assert model.calls == [], "commands are answered without the model"
    assert sorted(driver.archived_keys(tmp_path)) == sorted(keys)


async def test_status_lines_around_an_automatic_compaction(
    driver: HostDriver, tmp_path: Path
) -> None:
    settings = config(4000, compactor="extractive", show_status=True)
    hook = driver.hook(settings, tmp_path)
    agent = await driver.agent(hook, driver.model([text_step("ok")], context_size=4000))
    await driver.seed(agent, 8)
    reply = await driver.reply(agent, "What next?")
    assert reply.text == "ok"
    started, done = reply.status
    assert started.startswith("🔄 Context compaction started... Context Status: 📝 ")
    assert done.startswith("✅ Context compaction completed! 📝 ")
    assert "msgs archived to dialog/" in done


async def test_history_dump_and_load_round_trip(driver: HostDriver, tmp_path: Path) -> None:
    hook = driver.hook(config(200_000, compactor="extractive"), tmp_path)
    model = driver.model([text_step("loaded fine")], context_size=200_000)
    agent = await driver.agent(hook, model)
    await driver.seed(agent, 3)
    keys = driver.context_keys(agent)
    count = len(driver.context_roles(agent))
    dumped = await driver.reply(agent, "/dump_history notes/session.json")
    assert dumped.text.startswith("**History dumped.**"), dumped.text
    await driver.reply(agent, "/clear")
    (tmp_path / "bad.json").write_text('{"messages": [{"role": "robot"}]}', encoding="utf-8")
    refused = await driver.reply(agent, "/load_history bad.json")
    assert refused.text.startswith("**Not loaded.**") and driver.context_keys(agent) == []
    loaded = await driver.reply(agent, "/load_history notes/session.json")
    assert loaded.text.startswith(f"**History loaded.** {count} message(s)"), loaded.text
    assert driver.context_keys(agent) == keys
    reply = await driver.reply(agent, "Go on.")
    assert reply.text == "loaded fine"
    assert openai_pairing_problems(model.calls[-1].formatted) == []


async def test_an_unwritable_archive_loses_nothing(driver: HostDriver, tmp_path: Path) -> None:
    (tmp_path / "dialog").write_text("not a directory", encoding="utf-8")
    events: list[ContextEvent] = []
    hook = driver.hook(config(4000, compactor="extractive"), tmp_path, on_event=events.append)
    agent = await driver.agent(hook, driver.model([text_step("fine")] * 2, context_size=4000))
    await driver.seed(agent, 8)
    keys = driver.context_keys(agent)
    assert (await driver.reply(agent, "continue")).text == "fine"
    assert any(e.kind == "archive_deferred" for e in events)
    state = (await hook.session(agent)).state
    assert len(state["pending_archive"]) >= 1
    (tmp_path / "dialog").unlink()
    hook.engine.context.scratch(await hook.session(agent)).pending_tried = None
    assert (await driver.reply(agent, "and now?")).text == "fine"
    assert any(e.kind == "archive_flushed" for e in events)
    assert set(keys) <= set(driver.archived_keys(tmp_path)) | set(driver.context_keys(agent))


async def test_a_failure_inside_the_context_manager_never_kills_the_reply(
    driver: HostDriver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = driver.hook(config(4000, compactor="extractive"), tmp_path)
    agent = await driver.agent(hook, driver.model([text_step("still here")], context_size=4000))
    await driver.seed(agent, 8)

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(hook.engine, "before_reasoning", broken)
    assert (await driver.reply(agent, "hello?")).text == "still here"
