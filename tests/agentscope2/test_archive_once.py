"""The dialog archive never holds a message twice (defects issue, item 3)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import AssistantMsg, Msg, TextBlock, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.agentscope2.messages import archive_id
from copaw_context.cli.demo import demo_policy, make_demo_tools
from copaw_context.core.archive.store import DialogArchive, read_archive
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.files import FileStore
from copaw_context.testing import ScriptedChatModel, text_step
from tests.helpers import make_agent


def config(window: int = 6000) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 4000,
                        "pruning_old_msg_max_bytes": 800,
                    },
                },
            }
        }
    )


def archived_parts(workspace: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(message id, block keys) of every archived line; a block key is "type:id"."""
    parts: list[tuple[str, tuple[str, ...]]] = []
    for path in sorted((workspace / "dialog").glob("*.jsonl")):
        for record in read_archive(path):
            msg = Msg.model_validate(record["message"])
            parts.append((msg.id, tuple(f"{b.type}:{b.id}" for b in msg.content)))
    return parts


def archived_blocks(workspace: Path) -> list[str]:
    return [block for _, blocks in archived_parts(workspace) for block in blocks]


async def test_a_failing_listing_after_the_write_archives_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unreadable(self: DialogArchive) -> list[Any]:
        raise ArchiveError(f"cannot read archive file {self.directory}/2026-01-01.jsonl: EACCES")

    monkeypatch.setattr(DialogArchive, "list_files", unreadable)
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(), tmp_path, on_event=events.append)
    policy = demo_policy(40, parallel_every=4)
    model = ScriptedChatModel([policy] * 200, context_size=6000)
    agent = await make_agent(hook, model, make_demo_tools(seed=1))
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    compactions = [e for e in events if e.kind == "compaction"]
    assert len(compactions) >= 3
    assert not [e for e in events if e.kind == "compaction_failed"]
    blocks = archived_blocks(tmp_path)
    duplicated = [block for block, n in Counter(blocks).items() if n > 1]
    assert duplicated == [], f"{len(duplicated)} block(s) archived twice"
    in_context = {f"{b.type}:{b.id}" for m in agent.state.context for b in m.content}
    assert not in_context & set(blocks)
    assert "dialog/" in str(agent.state.summary), "the guide falls back to the files written"


async def test_a_crash_between_archive_and_state_update_archives_nothing_twice(
    tmp_path: Path,
) -> None:
    """The agent's state was saved before a compaction whose archive write then completed."""
    hook = MemoryCompactionHook(config(), tmp_path)
    policy = demo_policy(30, parallel_every=4)
    model = ScriptedChatModel([policy] * 200, context_size=6000)
    agent = await make_agent(hook, model, make_demo_tools(seed=2))
    turns = policy.user_turns()
    await agent.reply(UserMsg("user", turns[0]))
    saved_state = agent.state.model_dump_json()  # the last state the host persisted
    for turn in turns[1:]:
        await agent.reply(UserMsg("user", turn))
    archived_before_crash = archived_blocks(tmp_path)
    assert archived_before_crash

    restarted: Agent = await make_agent(
        MemoryCompactionHook(config(), tmp_path), ScriptedChatModel([text_step("ok")])
    )
    restarted.state = type(agent.state).model_validate_json(saved_state)
    reply = await restarted.reply(UserMsg("user", "/compact"))
    assert "Compact Complete" in (reply.get_text_content() or "")
    blocks = archived_blocks(tmp_path)
    duplicated = [block for block, n in Counter(blocks).items() if n > 1]
    assert duplicated == []


async def test_the_same_batch_is_appended_once(tmp_path: Path) -> None:
    archive = DialogArchive(tmp_path / "dialog", session_id="s1", agent_name="a")
    messages = [UserMsg("user", f"message {i}") for i in range(5)]
    dumps = [m.model_dump(mode="json") for m in messages]
    stamps = [m.created_at for m in messages]
    ids = [archive_id(m) for m in messages]
    first = await archive.append(dumps, stamps, ids)
    assert first and first[0].lines == 5
    assert await archive.append(dumps, stamps, ids) == []
    again = await archive.append(
        dumps[:3] + [UserMsg("user", "new").model_dump(mode="json")],
        stamps[:4],
        ids[:3] + ["new-message#1"],
    )
    assert again[0].lines == 6
    other_session = DialogArchive(tmp_path / "dialog", session_id="s2", agent_name="a")
    assert (await other_session.append(dumps, stamps, ids))[0].lines == 11
    with pytest.raises(ValueError, match="archive id"):
        await archive.append(dumps[:1], stamps[:1], ['bad"id'])


def test_the_two_halves_of_a_split_message_have_different_archive_ids() -> None:
    msg = AssistantMsg("assistant", [TextBlock(text="a"), TextBlock(text="b")])
    head = msg.model_copy(update={"content": msg.content[:1]})
    tail = msg.model_copy(update={"content": msg.content[1:]})
    assert len({archive_id(msg), archive_id(head), archive_id(tail)}) == 3
    assert archive_id(head) == archive_id(head.model_copy(deep=True))


async def test_clear_is_shielded_from_cancellation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = MemoryCompactionHook(config(200_000), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("hi"), text_step("again")]))
    await agent.reply(UserMsg("user", "hello"))
    writing, release = threading.Event(), threading.Event()
    original = FileStore.append  # the archive's way to its day files

    async def slow_write(self: FileStore, records: Any, **options: Any) -> Any:
        writing.set()
        await asyncio.to_thread(release.wait, 10)
        return await original(self, records, **options)

    monkeypatch.setattr(FileStore, "append", slow_write)
    task = asyncio.create_task(agent.reply(UserMsg("user", "/clear")))
    assert await asyncio.to_thread(writing.wait, 10)
    task.cancel()
    await asyncio.sleep(0.05)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(archived_parts(tmp_path)) == 2
    assert agent.state.context == [], "archived messages must also leave the context"
    monkeypatch.setattr(FileStore, "append", original)
    reply = await agent.reply(UserMsg("user", "/clear"))
    assert "0 message(s) archived" in (reply.get_text_content() or "")
    assert len(archived_parts(tmp_path)) == 2


async def test_a_message_that_grew_after_an_uncommitted_write_is_archived_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write lands but the compaction does not commit (a crash, an error after the
    write); the same reply then grows by new blocks before the next compaction."""
    original = FileStore.append  # the archive's way to its day files
    failures = iter([True, False] * 50)
    failed: list[int] = []

    async def write_then_fail(self: FileStore, records: Any, **options: Any) -> Any:
        written = await original(self, records, **options)
        if next(failures):
            failed.append(len(records))
            raise OSError(5, "I/O error after the write")
        return written

    monkeypatch.setattr(FileStore, "append", write_then_fail)
    hook = MemoryCompactionHook(config(), tmp_path)
    policy = demo_policy(40, parallel_every=4)
    model = ScriptedChatModel([policy] * 200, context_size=6000)
    agent = await make_agent(hook, model, make_demo_tools(seed=4))
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    blocks = archived_blocks(tmp_path)
    assert len(blocks) > 30 and len(failed) >= 2  # writes that landed and did not commit
    duplicated = [block for block, n in Counter(blocks).items() if n > 1]
    assert duplicated == [], f"{len(duplicated)} block(s) archived twice"


async def test_known_parts_are_left_out_of_a_grown_message(tmp_path: Path) -> None:
    archive = DialogArchive(tmp_path / "dialog", session_id="s1", agent_name="a")
    first = AssistantMsg("assistant", [TextBlock(text="a"), TextBlock(text="b")])
    keys = [f"{first.id}/text:{b.id}" for b in first.content]
    await archive.append(
        [first.model_dump(mode="json")], [first.created_at], [archive_id(first)], part_keys=[keys]
    )
    grown = first.model_copy(update={"content": [*first.content, TextBlock(text="c")]})
    grown_keys = [f"{grown.id}/text:{b.id}" for b in grown.content]
    await archive.append(
        [grown.model_dump(mode="json")],
        [grown.created_at],
        [archive_id(grown)],
        part_keys=[grown_keys],
    )
    texts = [
        [b.text for b in Msg.model_validate(r["message"]).content]  # type: ignore[attr-defined]
        for path in (tmp_path / "dialog").glob("*.jsonl")
        for r in read_archive(path)
    ]
    assert texts == [["a", "b"], ["c"]]
