"""Pruning rules with real agents: foreign notices (defects #13b)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.message import TextBlock, UserMsg

from copaw_context import (
    MemoryCompactionHook,
    RunningConfig,
    parse_truncation_notice,
    truncate_text_output,
)
from copaw_context.core.config import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step
from tests.helpers import (
    allow,
    follow_notices,
    lines_text,
    make_agent,
    tool_results,
    workspace_file,
)

FOREIGN_FILE = "/srv/other-agent/tool_result/" + "c" * 32 + ".txt"


def pruning_config(**pruning: Any) -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 500_000,
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": pruning,
                },
            }
        }
    )


def texts_of(block: Any) -> list[str]:
    if isinstance(block.output, str):
        return [block.output]
    return [part.text for part in block.output if isinstance(part, TextBlock)]


def relayed_excerpt(n_lines: int, max_bytes: int, seed: str = "sub") -> str:
    """What a truncated sub-agent reply looks like: an excerpt ending with ITS notice."""
    text = truncate_text_output(
        lines_text(n_lines, seed=seed), max_bytes=max_bytes, file_path=FOREIGN_FILE
    )
    assert parse_truncation_notice(text) is not None
    return text


def tool_returning(name: str, output: object) -> Any:
    def tool(query: str) -> Any:
        """Run the tool.

        Args:
            query (`str`): What to look for.
        """
        return output

    return allow(tool, name=name)


# ------------------------------------------------------------------ foreign notices
async def test_fresh_output_ending_with_a_foreign_notice_is_saved_and_followable(
    tmp_path: Path,
) -> None:
    relayed = relayed_excerpt(3000, 90_000)
    assert len(relayed.encode()) > 50_000
    bodies, seen = await follow_notices(tmp_path, relayed, RunningConfig())
    first = parse_truncation_notice(seen[0])
    assert first is not None
    saved = Path(first[1].file_path or "")
    assert saved.parent == tmp_path / "tool_result", "the notice must name OUR saved copy"
    assert saved.read_text(encoding="utf-8") == relayed
    assert "".join(bodies) == relayed  # the foreign notice too: every byte is reachable


async def test_old_results_recut_our_notices_in_place_and_save_foreign_ones(
    tmp_path: Path,
) -> None:
    relayed = relayed_excerpt(200, 3000)  # fits the recent limit, not the old one
    big = lines_text(300, seed="big")  # cut by stage 1: OUR notice
    notes = relayed_excerpt(30, 1500, seed="note")  # a saved excerpt, someone else's notice
    workspace_file(tmp_path, "notes.txt", notes)
    hook = MemoryCompactionHook(
        pruning_config(
            pruning_recent_n=1,
            pruning_recent_msg_max_bytes=8000,
            pruning_old_msg_max_bytes=500,
        ),
        tmp_path,
    )
    model = ScriptedChatModel(
        [
            tool_calls_step(("relay", {"query": "a"})),
            tool_calls_step(("dump", {"query": "b"})),
            tool_calls_step(("read_file", {"file_path": "notes.txt"})),
            tool_calls_step(("dump", {"query": "c"})),
            text_step("done"),
        ]
    )
    tools = [tool_returning("relay", relayed), tool_returning("dump", big)]
    agent = await make_agent(hook, model, tools)
    await agent.reply(UserMsg("user", "go"))

    fresh = [texts_of(tool_results(call.messages)[-1])[0] for call in model.calls[1:4]]
    assert fresh[0] == relayed, "stage 1 keeps a relayed excerpt that fits as it is"
    assert fresh[2] == notes
    ours = parse_truncation_notice(fresh[1])
    assert ours is not None and Path(ours[1].file_path or "").parent == tmp_path / "tool_result"

    relay_old, dump_old, read_old, _ = (texts_of(b)[0] for b in tool_results(agent.state.context))
    # The relayed excerpt was saved whole; its new notice names that copy, not FOREIGN_FILE.
    parsed = parse_truncation_notice(relay_old)
    assert parsed is not None and len(relay_old.encode()) <= 500 + 1024
    copy = Path(parsed[1].file_path or "")
    assert copy.parent == tmp_path / "tool_result" and copy.read_text(encoding="utf-8") == relayed
    # Our own stage-1 notice is re-cut harder, same file.
    recut = parse_truncation_notice(dump_old)
    assert recut is not None and recut[1].file_path == ours[1].file_path
    assert recut[1].excerpt_bytes <= 500
    # A read_file excerpt that ends with someone's notice keeps pointing at the real file.
    read = parse_truncation_notice(read_old)
    assert read is not None and read[1].file_path == str((tmp_path / "notes.txt").resolve())
    assert sorted((tmp_path / "tool_result").iterdir()) == sorted(
        {copy, Path(ours[1].file_path or ""), *_saved_for_last_dump(agent)}
    )


def _saved_for_last_dump(agent: Any) -> list[Path]:
    last = parse_truncation_notice(texts_of(tool_results(agent.state.context)[-1])[0])
    return [Path(last[1].file_path or "")] if last is not None else []
