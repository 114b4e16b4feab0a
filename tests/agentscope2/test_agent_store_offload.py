"""Two real AgentScope 2.x agents as two replicas of one workspace (issue 20, step 5): their
own empty folders, one PostgreSQL store, the same agent id. Replica A's tool returns 300 KB;
its notice names the blob's key; replica B's model follows that notice with ``read_file`` and
gets the whole output back, byte for byte, from the database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.core.events import ContextEvent
from copaw_context.core.store.select import STORE_ENV
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.helpers import allow, last_result_text, make_agent, notice_follower
from tests.pg_server import pg_dsn

__all__ = ["pg_dsn"]  # the contract suite's real PostgreSQL (a session fixture)

_ORIGINAL = "".join(f"<tr><td>{i}</td><td>{'说明' * (i % 7)}</td></tr>\n" for i in range(6000))


def _replica(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"id": "agent-shared"}), encoding="utf-8")
    return root


async def test_replica_b_reads_the_result_replica_a_offloaded(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    a, b = _replica(tmp_path / "a" / "ws"), _replica(tmp_path / "b" / "ws")

    def fetch_page(url: str) -> str:
        """Fetch a web page.

        Args:
            url (`str`): The page address.
        """
        return _ORIGINAL

    seen: list[str] = []

    def saw(call: ModelCall) -> list:
        seen.append(last_result_text(call.messages))
        return text_step("Fetched; another worker will read it.")

    async with MemoryCompactionHook(RunningConfig(), a) as hook_a:
        model_a = ScriptedChatModel(
            [tool_calls_step(("fetch_page", {"url": "https://example.test/big"})), saw],
            context_size=400_000,
        )
        agent_a = await make_agent(hook_a, model_a, [allow(fetch_page)])
        await agent_a.reply(UserMsg("user", "Fetch the page."))
    parsed = parse_truncation_notice(seen[0])
    assert parsed is not None
    first_body, notice = parsed
    assert notice.file_path is not None and notice.file_path.startswith("tool_result/")
    assert not list((a / "tool_result").glob("*.txt"))  # in the database only

    bodies = [first_body]
    follow = notice_follower(bodies, "I have read the whole page.")
    args: dict[str, object] = {"file_path": notice.file_path, "start_line": notice.next_line}
    if notice.next_offset:
        args["line_offset"] = notice.next_offset
    async with MemoryCompactionHook(RunningConfig(), b) as hook_b:
        model_b = ScriptedChatModel(
            [tool_calls_step(("read_file", args))] + [follow] * 40, context_size=400_000
        )
        agent_b = await make_agent(hook_b, model_b)
        reply = await agent_b.reply(UserMsg("user", f"Read {notice.file_path} to the end."))
    assert reply.get_text_content() == "I have read the whole page."
    assert "".join(bodies) == _ORIGINAL


async def test_a_store_that_is_down_never_fails_the_reply_and_the_event_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    ws = _replica(tmp_path / "ws")

    def fetch_page(url: str) -> str:
        """Fetch a web page.

        Args:
            url (`str`): The page address.
        """
        return _ORIGINAL

    events: list[ContextEvent] = []
    bodies: list[str] = []
    async with MemoryCompactionHook(RunningConfig(), ws, on_event=events.append) as hook:
        model = ScriptedChatModel(
            [tool_calls_step(("fetch_page", {"url": "https://example.test/big"}))]
            + [notice_follower(bodies, "I have read the whole page.")] * 40,
            context_size=400_000,
        )
        agent = await make_agent(hook, model, [allow(fetch_page)])
        reply = await agent.reply(UserMsg("user", "Read the page."))
    assert reply.get_text_content() == "I have read the whole page."
    assert "".join(bodies) == _ORIGINAL  # the full text was kept: in the local file
    saved = list((ws / "tool_result").glob("*.txt"))
    assert len(saved) == 1 and saved[0].read_text(encoding="utf-8") == _ORIGINAL
    warnings = [e for e in events if e.kind == "warning" and "workspace store" in e.message]
    assert len(warnings) == 1, [e.message for e in events]
    assert "local files" in warnings[0].message and "cannot open" in warnings[0].message
