"""Pruning rules with real agents: foreign notices (defects #13b), whole results, parallel
results the model has not seen yet (defects #9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.message import Base64Source, DataBlock, TextBlock, UserMsg
from agentscope.tool import ToolChunk

from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.toolresults.truncation import (
    TRUNCATION_NOTICE_MARKER,
    parse_truncation_notice,
    truncate_text_output,
)
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.helpers import (
    allow,
    follow_notices,
    lines_text,
    make_agent,
    tool_results,
    workspace_file,
)

FOREIGN_FILE = "/srv/other-agent/tool_result/" + "c" * 32 + ".txt"


def per_step() -> RunningConfig:
    """The defaults, but stage 2 re-cuts each result once old and seen (no batches)."""
    pruning = {"pruning_batch_ratio": 0}
    return parse_running_config(
        {"running": {"light_context_config": {"tool_result_pruning_config": pruning}}}
    )


def pruning_config(**pruning: Any) -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 500_000,
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    # stage 2 re-cuts each result once old and seen (no batches)
                    "tool_result_pruning_config": {"pruning_batch_ratio": 0, **pruning},
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
    bodies, seen = await follow_notices(tmp_path, relayed, per_step())
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
    assert sorted((tmp_path / "tool_result").glob("*.txt")) == sorted(
        {copy, Path(ours[1].file_path or ""), *_saved_for_last_dump(agent)}
    )


def _saved_for_last_dump(agent: Any) -> list[Path]:
    last = parse_truncation_notice(texts_of(tool_results(agent.state.context)[-1])[0])
    return [Path(last[1].file_path or "")] if last is not None else []


# ------------------------------------------------------------------ whole results
async def test_a_result_with_many_text_blocks_is_bounded_as_a_whole(tmp_path: Path) -> None:
    parts = [lines_text(500, seed=seed) for seed in ("aaa", "bbb", "ccc")]  # 30 KB each
    images = [
        DataBlock(source=Base64Source(data=f"iVBORw0KGgo{i}" * 500, media_type="image/png"))
        for i in range(2)
    ]
    a, b, c = (TextBlock(text=part) for part in parts)
    # AgentScope merges adjacent text blocks: separate text blocks sit between data blocks.
    chunk = ToolChunk(content=[a, images[0], b, images[1], c])
    seen: list[Any] = []

    def look(call: ModelCall) -> Any:
        seen.append(tool_results(call.messages)[0])
        return tool_calls_step(("small", {"query": str(len(seen))}))

    hook = MemoryCompactionHook(per_step(), tmp_path)  # 50000 recent, 3000 old, n=2
    model = ScriptedChatModel(
        [tool_calls_step(("multi", {"query": "x"})), look, look, look, text_step("done")]
    )
    tools = [tool_returning("multi", chunk), tool_returning("small", "ok")]
    agent = await make_agent(hook, model, tools)
    await agent.reply(UserMsg("user", "go"))

    fresh = texts_of(seen[0])
    assert sum(len(t.encode()) for t in fresh) <= 50_000 + 1024
    assert sum(TRUNCATION_NOTICE_MARKER in t for t in fresh) == 1
    assert fresh[0] == parts[0]  # text that fits keeps its place
    body, notice = parse_truncation_notice(fresh[-1]) or ("", None)
    assert notice is not None and notice.excerpt_bytes == len(body.encode())
    saved = Path(notice.file_path or "").read_text(encoding="utf-8")
    assert saved == parts[1] + "\n" + parts[2]  # nothing lost: every cut block is saved
    assert [b for b in seen[0].output if isinstance(b, DataBlock)] == images

    old = tool_results(agent.state.context)[0]
    old_texts = texts_of(old)
    assert sum(len(t.encode()) for t in old_texts) <= 3000 + 1024
    assert sum(TRUNCATION_NOTICE_MARKER in t for t in old_texts) == 1
    old_notice = parse_truncation_notice(old_texts[-1])
    assert old_notice is not None
    # The stage-2 copy holds what the model saw (the chain continues at the first file).
    assert Path(old_notice[1].file_path or "").read_text(encoding="utf-8") == "\n".join(fresh)
    assert [b for b in old.output if isinstance(b, DataBlock)] == images


async def test_an_old_result_is_bounded_as_a_whole_too(tmp_path: Path) -> None:
    parts = [lines_text(30, seed=seed) for seed in ("aaa", "bbb", "ccc")]  # under 2 KB each
    one, two = (
        DataBlock(source=Base64Source(data=f"iVBORw0KGgo{i}" * 50, media_type="image/png"))
        for i in range(2)
    )
    a, b, c = (TextBlock(text=part) for part in parts)
    chunk = ToolChunk(content=[a, one, b, two, c])
    hook = MemoryCompactionHook(per_step(), tmp_path)  # old limit 3000, n=2
    model = ScriptedChatModel(
        [
            tool_calls_step(("shots", {"query": "x"})),
            tool_calls_step(("small", {"query": "1"})),
            tool_calls_step(("small", {"query": "2"})),
            text_step("done"),
        ]
    )
    tools = [tool_returning("shots", chunk), tool_returning("small", "ok")]
    agent = await make_agent(hook, model, tools)
    await agent.reply(UserMsg("user", "go"))
    fresh = texts_of(tool_results(model.calls[1].messages)[0])
    assert fresh == parts  # 5.3 KB in all: fits the recent limit

    old = texts_of(tool_results(agent.state.context)[0])
    assert sum(len(t.encode()) for t in old) <= 3000 + 1024
    assert sum(TRUNCATION_NOTICE_MARKER in t for t in old) == 1
    assert old[0] == parts[0]
    notice = parse_truncation_notice(old[-1])
    assert notice is not None
    saved = Path(notice[1].file_path or "").read_text(encoding="utf-8")
    assert saved == parts[1] + "\n" + parts[2]
    output = tool_results(agent.state.context)[0].output
    assert [x for x in output if isinstance(x, DataBlock)] == [one, two]


# ------------------------------------------------------------------ parallel results
async def test_parallel_results_stay_whole_until_the_model_has_seen_them(tmp_path: Path) -> None:
    outputs = {str(i): lines_text(100, seed=f"part{i}") for i in range(4)}  # 6 KB each
    assert all(6000 <= len(o.encode()) < 8000 for o in outputs.values())

    def fetch(part: str) -> str:
        """Fetch one part.

        Args:
            part (`str`): Which part.
        """
        return outputs[part]

    seen: list[list[str]] = []

    def look(call: ModelCall) -> Any:
        seen.append([texts_of(b)[0] for b in tool_results(call.messages)])
        return tool_calls_step(("ping", {"query": "x"})) if len(seen) == 1 else text_step("ok")

    hook = MemoryCompactionHook(
        pruning_config(
            pruning_recent_n=2, pruning_recent_msg_max_bytes=8000, pruning_old_msg_max_bytes=1000
        ),
        tmp_path,
    )
    model = ScriptedChatModel(
        [tool_calls_step(*(("fetch", {"part": str(i)}) for i in range(4))), look, look]
    )
    agent = await make_agent(hook, model, [allow(fetch), tool_returning("ping", "pong")])
    await agent.reply(UserMsg("user", "fetch all four parts"))

    assert seen[0] == [outputs[str(i)] for i in range(4)], "the model must see all four whole"
    older, newest = seen[1][:3], seen[1][3:]
    assert newest == [outputs["3"], "pong"]
    for text, original in zip(older, [outputs[str(i)] for i in range(3)], strict=True):
        parsed = parse_truncation_notice(text)
        assert parsed is not None and len(text.encode()) <= 1000 + 1024
        assert Path(parsed[1].file_path or "").read_text(encoding="utf-8") == original
