"""Tool results on a 1.x agent: stage 1 in post_acting, read_file entries, hint messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.message import Msg

from copaw_context.agentscope1.messages import METADATA_KEY
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, text_step, tool_calls_step
from tests.agentscope1.helpers import build_agent, settings
from tests.reliability.drivers import formatted_text


def _page() -> str:
    rows = "".join(
        f"<tr><td>{i}</td><td>{'说明' * (i % 7)} item-{i}</td></tr>\n" for i in range(6000)
    )
    return f"<html><body><table>\n{rows}</table></body></html>\n"


async def test_a_large_result_is_cut_and_read_back_whole(tmp_path: Path) -> None:
    original = _page()

    def fetch_page(url: str) -> str:
        """Fetch a web page.

        Args:
            url (`str`): The page address.
        """
        return original

    bodies: list[str] = []

    def follow(call: ModelCall) -> list[Any]:
        parsed = parse_truncation_notice(formatted_text(call.formatted[-1]))
        if parsed is None:
            bodies.append(formatted_text(call.formatted[-1]))
            return text_step("I have read the whole page.")
        body, notice = parsed
        bodies.append(body)
        args: dict[str, object] = {"file_path": notice.file_path, "start_line": notice.next_line}
        if notice.next_offset:
            args["line_offset"] = notice.next_offset
        return tool_calls_step(("read_file", args))

    agent, hook, model = await build_agent(
        tmp_path,
        [tool_calls_step(("fetch_page", {"url": "https://example.test/big"}))] + [follow] * 40,
        [fetch_page],
        config=settings(400_000),
        context_size=400_000,
        max_iters=50,
    )
    reply = await agent(Msg("user", "Read the whole page.", "user"))
    assert reply.get_text_content() == "I have read the whole page."
    assert "".join(bodies) == original, "every byte exactly once"
    assert len(bodies) > 5 and len(bodies[0].encode()) <= 50_000
    saved = list((tmp_path / "tool_result").glob("*.txt"))
    assert [p.read_text(encoding="utf-8") for p in saved] == [original]

    entries = [
        (msg.metadata or {}).get(METADATA_KEY, {}).get("results", {})
        for msg, _ in agent.memory.content
        if msg.role == "system"
    ]
    first, *reads = [next(iter(e.values())) for e in entries]
    assert first["offloaded"] == [str(saved[0])] and "unseen" not in first
    assert all(r["read_file"]["path"] == str(saved[0]) for r in reads), "read_file entries kept"
    assert (await hook.agent_stats(agent))["offloaded"] == 1


async def test_hint_messages_keep_their_place_and_are_not_archived(tmp_path: Path) -> None:
    agent, hook, model = await build_agent(
        tmp_path,
        [text_step("ok")],
        config=settings(3000, compactor="extractive"),
        context_size=3000,
    )
    from tests.reliability.as1_driver import As1Driver

    await As1Driver().seed(agent, 8)
    await agent.memory.add(
        Msg("user", "<system-hint>answer in JSON</system-hint>", "user"), marks="hint"
    )
    await agent.memory.add(Msg("user", "what next?", "user"))
    hint = agent.memory.content[-2][0]
    await hook.pre_reasoning(agent, {})
    texts = [m.get_text_content() for m, _ in agent.memory.content]
    assert texts[-2:] == [hint.get_text_content(), "what next?"]
    assert "answer in JSON" not in "".join(
        p.read_text(encoding="utf-8") for p in (tmp_path / "dialog").glob("*.jsonl")
    )


async def test_read_file_takes_line_numbers_as_text_through_a_1x_agent(tmp_path: Path) -> None:
    """1.x passes the model's arguments as they come: ``"2"`` is line 2, ``"2.5"`` a clear
    error (issue 17 item 16)."""
    (tmp_path / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)), "utf-8")
    results: list[str] = []

    def keep(call: ModelCall) -> list[Any]:
        results.append(formatted_text(call.formatted[-1]))
        return text_step("done") if len(results) == 2 else bad

    path = str(tmp_path / "notes.txt")
    good = tool_calls_step(("read_file", {"file_path": path, "start_line": "2", "end_line": "3"}))
    bad = tool_calls_step(("read_file", {"file_path": path, "start_line": "2.5"}))
    agent, _, _ = await build_agent(tmp_path, [good, keep, keep])
    reply = await agent(Msg("user", "Read lines 2-3 of notes.txt.", "user"))
    assert reply.get_text_content() == "done"
    assert results[0].startswith("line 2\nline 3\n")
    assert "start_line must be a whole number (such as 2), got '2.5'" in results[1]
