"""Without a DSN (every QwenPaw user's default) the offload reaches its files through the
workspace store (issue 20): a real AgentScope 2.x agent whose engine's file store counts its
calls. The 300 KB result is saved by ``put_blob`` (one file, the bytes the file code writes,
the notice naming its absolute path as before), each ``read_file`` on a notice opens it by
``open_blob``, the compactor's tails too, and the cleanup is one ``expire_blobs`` (the folder
swept once: an expired file goes, a referenced one stays with its time refreshed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.core.store.select import STORE_ENV
from copaw_context.core.toolresults._saved_tails import forget_tails
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import CountingStore, ModelCall, ScriptedChatModel, tool_calls_step
from tests.helpers import allow, last_result_text, make_agent, notice_follower

_ORIGINAL = "".join(f"<tr><td>{i}</td><td>{'说明' * (i % 7)}</td></tr>\n" for i in range(6000))
_DAY = 86400.0


async def test_the_default_offload_goes_through_the_workspace_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()

    def fetch_page(url: str) -> str:
        """Fetch a web page.

        Args:
            url (`str`): The page address.
        """
        return _ORIGINAL

    seen: list[str] = []
    bodies: list[str] = []
    follow = notice_follower(bodies, "I have read the whole page.")

    def first(call: ModelCall) -> list:
        seen.append(last_result_text(call.messages))
        return follow(call)

    async with MemoryCompactionHook(RunningConfig(), ws) as hook:
        ctx = hook.engine.context
        assert ctx.blobs is None  # no DSN: no shared store
        store = CountingStore(ws)
        ctx.workspace_store = store  # before the agent (and its read_file tool) is made
        model = ScriptedChatModel(
            [tool_calls_step(("fetch_page", {"url": "https://example.test/big"})), first]
            + [follow] * 40,
            context_size=400_000,
        )
        agent = await make_agent(hook, model, [allow(fetch_page)])
        reply = await agent.reply(UserMsg("user", "Read the page."))
        assert reply.get_text_content() == "I have read the whole page."
        assert "".join(bodies) == _ORIGINAL

        # Saved once, through the store: one file, named and written as the file code does.
        assert store.calls["put_blob"] == 1 and store.keys["put_blob"] == ["tool_result"]
        saved = list((ws / "tool_result").glob("*.txt"))
        assert len(saved) == 1
        parsed = parse_truncation_notice(seen[0])
        assert parsed is not None
        assert parsed[1].file_path == str(ws / "tool_result" / saved[0].name)  # as before
        old = await OffloadStore(tmp_path / "old" / "tool_result", 7).save(_ORIGINAL)
        assert saved[0].read_bytes() == old.read_bytes() == _ORIGINAL.encode()

        # Every read_file on a notice opened the result through the store.
        reads = len(bodies) - 1
        assert reads >= 2
        assert store.keys["open_blob"] == [f"tool_result/{saved[0].name}"] * reads

        # The compactor's tail of a result this process no longer remembers: the store too.
        forget_tails()
        (tail,) = await ctx.store.read_tails([saved[0]], 200)
        assert tail is not None and _ORIGINAL.endswith(tail)
        assert store.calls["open_blob"] == reads + 1

        # The cleanup (the pipeline ran it once): one sweep, by the store.
        assert store.calls["expire_blobs"] == 1
        expired = ws / "tool_result" / ("e" * 32 + ".txt")
        expired.write_text("an old result", encoding="utf-8")
        stale = saved[0].stat().st_mtime - 30 * _DAY
        for path in (expired, saved[0]):
            os.utime(path, (stale, stale))
        removed = await ctx.store.cleanup([saved[0].name])
        assert removed == [expired] and not expired.exists()
        assert store.calls["expire_blobs"] == 2
        assert saved[0].stat().st_mtime > stale + 29 * _DAY  # referenced: kept, refreshed
        assert store.calls["read_lines"] == store.calls["blob_info"] == 0  # no second path
