"""End to end: a real AgentScope 2.x Agent whose tool returns 300 KB (issue: foundation #8)."""

from __future__ import annotations

import json
from pathlib import Path

from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.helpers import allow, follow_notices, last_result_text, make_agent, tool_results


def _html_page() -> str:
    rows = "".join(
        f"<tr><td>{i}</td><td>item-{i}</td><td>{'说明' * (i % 7)}</td></tr>\n" for i in range(6000)
    )
    page = f"<html><body><table>\n{rows}</table>\n</body></html>\n"
    return page[: 300 * 1024] if len(page.encode()) > 300 * 1024 else page


async def test_agent_sees_excerpt_and_recovers_whole_original(tmp_path: Path) -> None:
    original = _html_page()
    assert len(original.encode()) > 250_000

    def fetch_page(url: str) -> str:
        """Fetch a web page.

        Args:
            url (`str`): The page address.
        """
        return original

    bodies: list[str] = []
    first_excerpt: list[str] = []

    def follow(call: ModelCall) -> list:
        text = last_result_text(call.messages)
        parsed = parse_truncation_notice(text)
        if parsed is None:
            bodies.append(text)
            return text_step("I have read the whole page.")
        body, notice = parsed
        bodies.append(body)
        args: dict[str, object] = {"file_path": notice.file_path, "start_line": notice.next_line}
        if notice.next_offset:
            args["line_offset"] = notice.next_offset
        return tool_calls_step(("read_file", args))

    def first(call: ModelCall) -> list:
        first_excerpt.append(last_result_text(call.messages))
        return follow(call)

    # The defaults, but stage 2 re-cuts each result once old and seen (no batches).
    pruning = {"pruning_batch_ratio": 0}
    config = parse_running_config(
        {"running": {"light_context_config": {"tool_result_pruning_config": pruning}}}
    )
    hook = MemoryCompactionHook(config, tmp_path)
    model = ScriptedChatModel(
        [tool_calls_step(("fetch_page", {"url": "https://example.test/big"})), first]
        + [follow] * 40,
        context_size=400_000,
    )
    agent = await make_agent(hook, model, [allow(fetch_page)])
    reply = await agent.reply(UserMsg("user", "Read the page."))
    assert reply.get_text_content() == "I have read the whole page."

    excerpt = first_excerpt[0]
    parsed = parse_truncation_notice(excerpt)
    assert parsed is not None, "the model must see an excerpt with a notice"
    body, notice = parsed
    assert len(excerpt.encode()) <= 50000 + 1024
    assert notice.excerpt_bytes == len(body.encode())
    saved = Path(notice.file_path or "")
    assert saved.parent == tmp_path / "tool_result"
    assert saved.read_text(encoding="utf-8") == original
    assert "".join(bodies) == original

    # read_file results point at the real file and are never copied.
    assert sorted(p.name for p in (tmp_path / "tool_result").glob("*.txt")) == [saved.name]
    # Stage 2 re-cut the older results to the old limit, same path.
    results = tool_results(agent.state.context)
    assert len(results) > 3
    for block in results[:-2]:
        text = block.output if isinstance(block.output, str) else block.output[0].text
        assert len(text.encode()) <= 3000 + 1024
        old = parse_truncation_notice(text)
        assert old is not None and old[1].file_path == str(saved)


async def test_single_line_json_keeps_its_notice_and_path(tmp_path: Path) -> None:
    payload = json.dumps({"rows": [{"id": i, "name": f"n{i}"} for i in range(8000)]})
    assert "\n" not in payload and len(payload) > 100_000

    def search_logs(query: str) -> str:
        """Search logs.

        Args:
            query (`str`): What to look for.
        """
        return payload

    seen: list[str] = []

    def answer(call: ModelCall) -> list:
        seen.append(last_result_text(call.messages))
        return text_step("ok")

    hook = MemoryCompactionHook(RunningConfig(), tmp_path)
    model = ScriptedChatModel([tool_calls_step(("search_logs", {"query": "x"})), answer])
    agent = await make_agent(hook, model, [allow(search_logs)])
    await agent.reply(UserMsg("user", "search"))
    parsed = parse_truncation_notice(seen[0])
    assert parsed is not None
    body, notice = parsed
    assert notice.next_line == 1 and notice.next_offset == len(body)
    assert "line_offset=" in seen[0]
    assert Path(notice.file_path or "").read_text(encoding="utf-8") == payload
    assert len(tool_results(agent.state.context)) == 1


async def test_output_with_nul_bytes_is_recovered_whole_through_read_file(tmp_path: Path) -> None:
    # find -print0: NUL-separated names, no newline at all; then a NUL-separated CSV.
    names = "".join(f"./src/module_{i:05d}/file.py\x00" for i in range(5000))
    csv = "".join(f"{i}\x00name-{i}\x00{'v' * 20}\n" for i in range(3000))
    output = names + csv
    assert len(output.encode()) > 200_000 and "\x00" in output[:100]
    bodies, _ = await follow_notices(tmp_path, output, RunningConfig())
    assert not any(body.startswith("Error:") for body in bodies), bodies[-1][-200:]
    assert len(bodies) > 3
    assert "".join(bodies) == output
