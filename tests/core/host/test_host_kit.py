"""What moved from the adapters into ``core/host`` (issue 18 item 2), checked without a host:
the loaded-history rules, the repair walk, the thinking probe, the split of a message list,
the session helpers, the saved entry, the compactor window and the hook's decisions."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from copaw_context.core.config.running import DEFAULT_WINDOW_TOKENS, parse_running_config
from copaw_context.core.host.agent_entry import fresh_entry, loaded_entry
from copaw_context.core.host.hook_base import EngineHook, refuse_another_hook
from copaw_context.core.host.hook_events import FreshResult
from copaw_context.core.host.loaded import (
    as1_sign,
    as2_sign,
    check_archivable,
    check_dict_message,
)
from copaw_context.core.host.models import cache_apart, compactor_context_size
from copaw_context.core.host.prompt import with_memory
from copaw_context.core.host.protocol import HostSession, MessageView, PartView, Window
from copaw_context.core.host.repair import repaired
from copaw_context.core.host.session_base import SessionBase, SessionSetup, read_paths, state_under
from copaw_context.core.host.thinking import PROBE_MARKER, sends_thinking, thinking_by_fields
from copaw_context.core.host.views import role_of, tool_result_view
from copaw_context.core.planning.context_check import MessageSplitter
from copaw_context.core.planning.pair_repair import ABANDONED_TEXT, Missing, RepairBlock
from copaw_context.core.tokens import EstimateTokenCounter
from copaw_context.core.tools.read_entries import ReadEntries


def test_loaded_messages_of_the_other_major_are_named() -> None:
    assert as1_sign({"content": "text"}) == "its content is a text, not a list of blocks"
    assert as1_sign({"content": [], "timestamp": "t"}) == "it has the 1.x field 'timestamp'"
    assert as1_sign({"content": [], "created_at": "t"}) is None
    assert as2_sign({"content": [{"type": "tool_call"}]}) == "block 1 has the 2.x type 'tool_call'"
    with pytest.raises(ValueError, match="message 3 is an AgentScope 2.x message"):
        check_dict_message({"name": "a", "role": "user", "content": [{"type": "hint"}]}, 3)
    with pytest.raises(ValueError, match=r"message 1, block 1 \(image\): it needs a \"source\""):
        check_dict_message({"name": "a", "role": "user", "content": [{"type": "image"}]}, 1)
    with pytest.raises(ValueError, match='"role" must be'):
        check_dict_message({"name": "a", "role": "tool", "content": ""}, 1)
    check_dict_message({"name": "a", "role": "user", "content": "fine"}, 1)
    with pytest.raises(ValueError, match="message 2 cannot be written to the archive"):
        check_archivable(2, lambda: {"bad": object()})
    check_archivable(2, lambda: {"ok": [1, "two"]})


class DictHost:
    """Messages as ``(id, role, blocks)`` of dicts, for the repair walk."""

    def blocks(self, msg: tuple[str, str, list[dict[str, Any]]]) -> list[Any]:
        return msg[2]

    def block(self, block: dict[str, Any]) -> RepairBlock:
        kind = {"call": "call", "result": "result"}.get(block["type"])
        return RepairBlock(kind, block["id"]) if kind else RepairBlock("other")

    def msg_id(self, msg: tuple[str, str, list[dict[str, Any]]]) -> str:
        return msg[0]

    def role(self, msg: tuple[str, str, list[dict[str, Any]]]) -> str:
        return msg[1]

    def missing(self, call: dict[str, Any], new_id: str | None, missing: Missing) -> Any:
        return {"type": "result", "id": new_id or call["id"], "text": missing.text}

    def renamed(self, block: dict[str, Any], new_id: str) -> Any:
        return {**block, "id": new_id}

    def rebuilt(self, source: Any, blocks: list[Any], *, inserted: bool) -> Any:
        return (f"{source[0]}+" if inserted else source[0], source[1], blocks)


def test_the_repair_walk_reuses_what_it_leaves_and_answers_an_abandoned_call() -> None:
    request = ("u1", "user", [{"type": "text", "id": None}])
    call = ("a1", "assistant", [{"type": "call", "id": "c1"}])
    later = ("u2", "user", [{"type": "text", "id": None}])
    assert repaired([request], DictHost(), set(), inline_results=True) is None
    seen: set[str] = set()
    out = repaired([request, call, later], DictHost(), seen, inline_results=True)
    assert out is not None and out[0] is request and out[-1] is later
    results = [b for m in out for b in m[2] if b["type"] == "result"]
    assert results == [{"type": "result", "id": "c1", "text": ABANDONED_TEXT}]
    assert seen


class Formatter:
    """Formats by dumping the messages (thinking included), or raises."""

    def __init__(self, fail: bool = False, keep: Sequence[str] = ()) -> None:
        self.fail = fail
        self.keep = keep

    async def format(self, msgs: list[Any]) -> list[Any]:
        if self.fail:
            raise RuntimeError("unknown")
        return [m for m in msgs if not isinstance(m, dict) or any(k in m for k in self.keep)]


async def test_the_thinking_probe_and_its_per_field_policy() -> None:
    assert await sends_thinking(None, []) is True
    assert await sends_thinking(Formatter(fail=True), [PROBE_MARKER]) is True
    assert await sends_thinking(Formatter(), ["no marker"]) is False

    def conversation(extra: dict[str, str]) -> list[Any]:
        return [{"thinking": PROBE_MARKER, **extra}]

    assert await thinking_by_fields(Formatter(), conversation, ("signature",)) is False
    policy = await thinking_by_fields(Formatter(keep=["signature"]), conversation, ("signature",))
    assert callable(policy)
    assert policy(SimpleNamespace(signature="s")) is True
    assert policy(SimpleNamespace(signature=None)) is False


class Splitter(MessageSplitter[tuple[str, list[str]]]):
    """Messages as ``(id, texts)``."""

    def fingerprint(self, msg: tuple[str, list[str]]) -> tuple[str, int]:
        return msg[0], len(msg[1])

    def view(self, msg: tuple[str, list[str]], first_part: int = 0) -> MessageView:
        parts = [PartView("text", t) for t in msg[1][first_part:]]
        return MessageView(msg[0], role_of("user"), "u", "", parts)

    def with_blocks(
        self, msg: tuple[str, list[str]], blocks: Sequence[int], *, kept: bool
    ) -> tuple[str, list[str]]:
        return msg[0], [msg[1][i] for i in blocks]


def test_a_message_list_splits_pair_safe() -> None:
    context = [(f"m{i}", [f"request {i} " + "x" * 400]) for i in range(10)]
    check = Splitter(EstimateTokenCounter(4)).context_check(
        context, threshold_tokens=300, reserve_tokens=150
    )
    assert check.to_compact and check.to_keep
    assert check.to_compact + check.to_keep == context


def test_session_helpers() -> None:
    window = Window(1000, "test")
    session = SessionBase(SimpleNamespace(name="a"), SessionSetup({}, True, window, None), {"k": 1})
    assert session.window() is window and session.state == {"k": 1}
    tools = [{"name": "b"}, {"name": "a"}]
    text = session.schemas_json(tools)
    assert text == json.dumps(tools, ensure_ascii=False, sort_keys=True)
    assert session.schemas_json([dict(t) for t in tools]) is text  # reused while equal
    assert session.schemas_json([]) == ""
    calls = [("Read", '{"file_path": "/a"}'), ("Read", "not json"), ("Grep", '{"file_path": "/b"}')]
    assert read_paths(calls) == {"/a"}
    store: dict[str, Any] = {"old": {"x": 1}}
    assert state_under(store, "new", "old") == {"x": 1} and "old" not in store
    assert state_under(store, "new", "old") is store["new"]


def test_saved_entries_models_and_prompts() -> None:
    entry = fresh_entry()
    assert entry["engine"] == {} and len(entry["session_id"]) == 32
    assert loaded_entry(["not ours"])["engine"] == {}
    kept = loaded_entry({"session_id": "s", "engine": {"a": 1}})
    assert kept == {"session_id": "s", "engine": {"a": 1}}
    assert compactor_context_size(None, 5000) == 5000
    assert compactor_context_size(True, None) == DEFAULT_WINDOW_TOKENS
    assert compactor_context_size(9000, 5000) == 5000 and compactor_context_size(9000, None) == 9000

    class AnthropicChatModel:
        pass

    assert cache_apart(AnthropicChatModel()) and not cache_apart(object())
    block = "# MEMORY.md\n\nnever touch prod"
    assert with_memory("You help.", block) == f"You help.\n\n{block}"
    assert with_memory("You help. never touch prod", block) == "You help. never touch prod"
    assert with_memory("", block) == block and with_memory("p", "") == "p"
    assert tool_result_view("t", ("a", object()), "c", ["not a dict"]).meta == {}


def test_read_entries_keep_the_newest_entries_by_call_id() -> None:
    entries = ReadEntries()
    response = SimpleNamespace(metadata={"copaw_context": {"read_file": {"path": "/a"}}})
    entries.postprocess({"id": "c1"}, response)
    entries.postprocess("not a call", response)
    assert entries.pop("c1") == {"read_file": {"path": "/a"}}
    assert entries.pop("c1") == {}
    for i in range(300):
        entries.postprocess({"id": f"c{i}"}, response)
    assert entries.pop("c0") == {} and entries.pop("c299")


class Agent:
    """An agent the hook keeps a scratch for (weakly referenced)."""


class Hook(EngineHook):
    """The host-neutral hook over one fake session."""

    def __init__(self, workspace: Path, **running: Any) -> None:
        self.start_engine(parse_running_config({"running": running}), workspace, None)
        self.sessions = 0

    async def session(self, agent: Any) -> HostSession:
        self.sessions += 1
        raise RuntimeError("no host here")


async def test_the_hooks_decisions_are_fail_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = Hook(tmp_path)
    written: list[Any] = []
    fresh = FreshResult("t", "{}", ["x"], {}, lambda parts, meta: written.append(parts))
    with caplog.at_level(logging.ERROR, logger="copaw_context"):
        await hook.bound_result(Agent(), lambda: fresh)
        assert await hook.before_step(Agent()) is False
    assert written == [] and hook.sessions == 2
    assert "stage-1 truncation failed" in caplog.text and "context kept" in caplog.text
    assert hook.repaired(Agent(), [1], lambda m, seen: [2]) == [2]
    assert hook.repaired(Agent(), [1], lambda m, seen: None) == [1]

    def broken(messages: list[int], seen: Any) -> list[int]:
        raise RuntimeError("broken")

    assert hook.repaired(Agent(), [1], broken) == [1]
    native = Hook(tmp_path, context_manager_backend="native")
    await native.bound_result(Agent(), lambda: fresh)
    assert await native.before_step(Agent()) is None and native.sessions == 0
    assert native.repaired(Agent(), [1], lambda m, seen: [2]) == [1]
    refuse_another_hook([None, hook], hook)
    with pytest.raises(ValueError, match="already has another copaw-context hook"):
        refuse_another_hook([native], hook)
    await hook.close()
    await native.close()
