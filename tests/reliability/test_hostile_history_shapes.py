"""Hostile ``/load_history`` files, second family: shapes that broke later turns (issue 17).

Through real agents of both majors, a dumped conversation is loaded back as: a message
nested 300 (metadata) or 900 (a block) levels deep, which the archive cannot serialise;
blocks 1.x's formatters cannot take (an image without a source, a url that is a number, a
text that is a list, a tool call without an id); a bare list of the other major's messages;
a blank summary, or an empty summary message with a bare summary, in front of an
assistant-first conversation. Each is refused naming the message (counted from 1) and
leaving the context as it was. Summaries of dense text (CJK, CJK extension B) whose
characters pass the bound load within a token bound, and every later call fits the window
and is valid for every provider; a loaded blank summary never becomes an empty message.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from copaw_context import installed_agentscope_major
from copaw_context.core.summary.budget import summary_budget_chars
from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input

WINDOW = 8000
_TURNS_AFTER_LOAD = 2

# The same two turns as each major dumps them ("messages" of a dump, trimmed).
_AS2_MESSAGES = [
    {
        "name": "user",
        "role": "user",
        "id": "u1",
        "metadata": {},
        "created_at": "2026-12-03T05:58:43",
        "content": [
            {
                "type": "text",
                "text": "please echo abc",
                "id": "b1",
                "created_at": "2026-12-03T05:58:43",
                "finished_at": None,
            }
        ],
    },
    {
        "name": "a",
        "role": "assistant",
        "id": "a1",
        "metadata": {},
        "created_at": "2026-12-03T05:58:44",
        "content": [
            {"type": "hint", "hint": "runtime", "id": "h1"},
            {"type": "text", "text": "ok"},
        ],
    },
]
_AS1_MESSAGES = [
    {
        "id": "u1",
        "name": "user",
        "role": "user",
        "content": "please echo abc",
        "metadata": {},
        "timestamp": "2026-12-03 05:58:43.000",
    },
    {
        "id": "a1",
        "name": "a",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "metadata": {},
        "timestamp": "2026-12-03 05:58:44.000",
    },
]


def _nest(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _first_is(dump: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    return {**dump, "messages": [message, *dump["messages"][1:]]}


def _deep(dump: dict[str, Any]) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Item 1: nesting the archive (2.x) or the agent's deep copy (1.x) cannot take."""
    first = copy.deepcopy(dump["messages"][0])
    hi = {"type": "text", "text": "hi"}
    return {
        "deep-metadata.json": (
            _first_is(dump, {**first, "metadata": {"x": _nest(300)}}),
            ("message 1 ", "nested 30", "at most 100"),
        ),
        "deep-block.json": (
            _first_is(dump, {**first, "content": [{**hi, "x": _nest(900)}]}),
            ("message 1 ", "nested 90", "at most 100"),
        ),
    }


def _blocks(dump: dict[str, Any]) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Item 2: blocks 1.x's formatters cannot take (2.x refuses them too)."""
    messages: list[dict[str, Any]] = dump["messages"]
    first = copy.deepcopy(messages[0])
    hi = {"type": "text", "text": "hi"}
    image_url = {"type": "image", "source": {"type": "url", "url": 5}}
    call = {"role": "assistant", "name": "a", "id": "zz1"}
    as1 = installed_agentscope_major() < 2
    return {
        "image-no-source.json": (
            _first_is(dump, {**first, "content": [hi, {"type": "image"}]}),
            ("message 1, block 2 (image)", '"source"') if as1 else ("message 1 ",),
        ),
        "image-url-int.json": (
            _first_is(dump, {**first, "content": [hi, image_url]}),
            ("message 1, block 2 (image)", '"url"') if as1 else ("message 1 ",),
        ),
        "text-not-str.json": (
            _first_is(dump, {**first, "content": [{"type": "text", "text": ["a"]}]}),
            ("message 1, block 1 (text)", "must be text") if as1 else ("message 1 ",),
        ),
        "call-without-id.json": (
            {
                **dump,
                "messages": [
                    *messages,
                    {**call, "content": [{"type": "tool_use", "name": "f", "input": {}}]},
                ],
            },
            (f"message {len(messages) + 1}", '"id"' if as1 else "1.x"),
        ),
    }


def _other_major(dump: dict[str, Any]) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Item 4: a bare list of the other major's messages."""
    as1 = installed_agentscope_major() < 2
    other, major = (_AS2_MESSAGES, "2.x") if as1 else (_AS1_MESSAGES, "1.x")
    return {"other-major.json": (other, ("message 1 ", f"is an AgentScope {major} message"))}


def _blank_summaries(dump: dict[str, Any]) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Item 3 (and 6, numbering): a blank summary places no message in front."""
    rest = dump["messages"][1:]
    return {
        "blank-summary-assistant-first.json": (
            {**dump, "summary": " \n ", "bare_summary": None, "messages": rest},
            ("message 1 (assistant", "opens the conversation"),
        ),
        "blank-bare-assistant-first.json": (
            {**dump, "summary": "", "bare_summary": "  ", "messages": rest},
            ("message 1 (assistant", "opens the conversation"),
        ),
    }


def _blank_loads(dump: dict[str, Any]) -> dict[str, tuple[Any, tuple[str, ...], str]]:
    return {
        "bare-only-assistant-first.json": (
            {
                **dump,
                "summary": "",
                "bare_summary": "## Goal\n- Echo what the user asks",
                "messages": dump["messages"][1:],
            },
            ("with its summary",),
            "Echo what the user asks",
        ),
        "blank-summary.json": (
            {**dump, "summary": " \n ", "bare_summary": None},
            ("4 message(s) from blank-summary.json;",),
            "second question",
        ),
    }


def _dense(count: int) -> str:
    """``count`` CJK extension B characters, about 4 tokens each (o200k)."""
    return "".join(chr(0x20000 + 7 * n) for n in range(count))


def _dense_loads(dump: dict[str, Any]) -> dict[str, tuple[Any, tuple[str, ...], str]]:
    """Item 5: summaries whose characters pass the character bound, not their tokens (and
    item 6: a message rebuilt from its bare text is not "shortened from 5 to 5")."""
    budget = summary_budget_chars(WINDOW)
    bare = "## Goal\n" + "".join(f"- keep step {n} of the plan\n" for n in range(200))
    bare = bare[: bare.rfind("\n", 0, budget - 100) + 1]
    last = bare.splitlines()[-1]
    return {
        "dense-summary.json": (
            {**dump, "summary": _dense(budget), "bare_summary": None},
            ("The summary was shortened from", "tokens) to fit the window"),
            "second question",
        ),
        "dense-message-plain-bare.json": (  # the bare text fits: it reaches the model whole
            {**dump, "summary": _dense(len(bare) + budget // 2 - 100), "bare_summary": bare},
            ("rebuilt from the bare summary",),
            last,
        ),
        "cjk-message-short-bare.json": (
            {**dump, "summary": "中" * (2 * budget + 4000), "bare_summary": "short"},
            ("rebuilt from the bare summary (5 characters",),
            "short",
        ),
    }


Refused = Callable[[dict[str, Any]], dict[str, tuple[Any, tuple[str, ...]]]]
Loaded = Callable[[dict[str, Any]], dict[str, tuple[Any, tuple[str, ...], str]]]


async def _run(driver: HostDriver, workspace: Path, refused: Refused, loaded: Loaded) -> Any:
    figures = StepFigures()
    problems: list[str] = []
    inputs: list[str] = []

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        inputs.append(json.dumps(formatted["openai"], ensure_ascii=False))
        try:
            check_model_input(formatted, driver.tool_schemas(call), WINDOW, figures)
        except AssertionError as exc:
            problems.append(str(exc)[:300])
        return driver.text_step("done")

    hook = driver.hook(agent_config(WINDOW, "extractive"), workspace)
    agent = await driver.agent(hook, driver.model([answer] * 40, context_size=WINDOW))
    assert await driver.ask(agent, "first question about the plan") == "done"
    assert await driver.ask(agent, "second question") == "done"
    assert "History dumped" in await driver.ask(agent, "/dump_history good.json")
    dump = json.loads((workspace / "good.json").read_text(encoding="utf-8"))
    counts = dict.fromkeys(("refused", "named", "changed", "loaded", "same", "kept"), 0)
    for name, (content, wanted) in refused(dump).items():
        (workspace / name).write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        before = driver.context_keys(agent)
        reply = await asyncio.wait_for(driver.ask(agent, f"/load_history {name}"), 120)
        assert reply.startswith("**Not loaded.**"), (name, reply)
        counts["refused"] += 1
        assert all(w in reply for w in wanted), (name, wanted, reply)
        counts["named"] += 1
        counts["changed"] += driver.context_keys(agent) != before
    for name, (content, said, sent) in loaded(dump).items():
        (workspace / name).write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        reply = await driver.ask(agent, f"/load_history {name}")
        assert reply.startswith("**History loaded.**"), (name, reply)
        counts["loaded"] += 1
        same = re.search(r"from (\d+) to (\d+) characters", reply)
        counts["same"] += bool(same and same[1] == same[2])
        assert all(w in reply for w in said), (name, said, reply)
        for turn in range(_TURNS_AFTER_LOAD):
            assert await driver.ask(agent, f"next step {turn}") == "done"
            counts["kept"] += sent in inputs[-1]
    assert not problems, problems
    return {
        "refused": counts["refused"],
        "refusals_naming_the_message": counts["named"],
        "context_changed_on_refusal": counts["changed"],
        "loaded": counts["loaded"],
        "shortened_from_n_to_n": counts["same"],
        "later_calls": counts["loaded"] * _TURNS_AFTER_LOAD,
        "later_calls_with_the_loaded_text": counts["kept"],
        "model_calls": figures.model_calls,
        "over_window": figures.over_window,
        "invalid_inputs": figures.invalid_inputs,
        "max_input_ratio": round(figures.max_input_ratio, 3),
    }


def _check(driver: HostDriver, what: str, refused: Refused, loaded: Loaded) -> None:
    with tempfile.TemporaryDirectory() as name:
        figures = asyncio.run(_run(driver, Path(name), refused, loaded))
    record(f"hostile /load_history: {what}", driver=driver.name, **figures)
    assert figures["refusals_naming_the_message"] == figures["refused"]
    assert figures["context_changed_on_refusal"] == 0
    assert figures["shortened_from_n_to_n"] == 0
    assert figures["later_calls_with_the_loaded_text"] == figures["later_calls"]
    assert figures["over_window"] == 0 and figures["invalid_inputs"] == 0


def _none(dump: dict[str, Any]) -> dict[str, Any]:
    return {}  # nothing of this kind


def test_hostile_history_deep_messages_are_refused(driver: HostDriver) -> None:
    _check(driver, "deep messages", _deep, _none)


def test_hostile_history_malformed_blocks_are_refused(driver: HostDriver) -> None:
    _check(driver, "malformed blocks", _blocks, _none)


def test_hostile_history_other_major_is_named(driver: HostDriver) -> None:
    _check(driver, "the other major's messages", _other_major, _none)


def test_hostile_history_blank_summaries_keep_the_user_first(driver: HostDriver) -> None:
    _check(driver, "blank summaries", _blank_summaries, _blank_loads)


def test_hostile_history_dense_summaries_are_bounded_by_tokens(driver: HostDriver) -> None:
    _check(driver, "dense summaries", _none, _dense_loads)
