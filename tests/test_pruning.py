"""ToolResultPruner on hand-built AgentScope blocks: which notices are ours (defects #13b)."""

from __future__ import annotations

from pathlib import Path

from agentscope.message import AssistantMsg, Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.tool import ToolResponse

from copaw_context import parse_truncation_notice, truncate_text_output
from copaw_context.agentscope2._messages import tool_result_texts
from copaw_context.agentscope2._pruning import ToolResultPruner
from copaw_context.core.config import ToolResultPruningConfig
from copaw_context.core.offload import OffloadStore
from tests.helpers import lines_text


def _pruner(workspace: Path) -> ToolResultPruner:
    config = ToolResultPruningConfig(pruning_recent_n=1)  # 50000 recent, 3000 old
    return ToolResultPruner(config, OffloadStore(workspace / "tool_result", 5), workspace)


async def _result(pruner: ToolResultPruner, call_id: str, text: str) -> list[object]:
    """A call and its result as stage 1 leaves them."""
    call = ToolCallBlock(id=call_id, name="dump", input="{}")
    response = ToolResponse(content=[TextBlock(text=text)])
    await pruner.prune_fresh(call, response)
    result = ToolResultBlock(
        id=call_id, name="dump", output=response.content, metadata=response.metadata
    )
    return [call, result]


def _text(context: list[Msg], index: int) -> str:
    blocks = [b for m in context for b in m.content if isinstance(b, ToolResultBlock)]
    return "\n".join(tool_result_texts(blocks[index]))


async def test_our_workspace_relative_notice_is_recut_in_place(tmp_path: Path) -> None:
    workspace = tmp_path.joinpath(*(f"{'w' * 60}{level}" for level in range(8)))
    workspace.mkdir(parents=True)
    pruner = _pruner(workspace)
    big = lines_text(2000)
    context: list[Msg] = [
        AssistantMsg("a", [*await _result(pruner, "c1", big), *await _result(pruner, "c2", "x")])
    ]
    first = parse_truncation_notice(_text(context, 0))
    assert first is not None and first[1].file_path is not None
    assert not Path(first[1].file_path).is_absolute()  # the absolute path is too long
    pruner.mark_seen(context)
    await pruner.prune_old(context)
    again = parse_truncation_notice(_text(context, 0))
    assert again is not None and again[1].file_path == first[1].file_path
    assert again[1].excerpt_bytes <= 3000
    assert len(list((workspace / "tool_result").iterdir())) == 1


async def test_a_foreign_notice_saved_by_stage_two_is_ours_afterwards(tmp_path: Path) -> None:
    pruner = _pruner(tmp_path)
    relayed = truncate_text_output(lines_text(300), max_bytes=20_000, file_path="/else/x.txt")
    context: list[Msg] = [
        AssistantMsg(
            "a", [*await _result(pruner, "c1", relayed), *await _result(pruner, "c2", "y")]
        )
    ]
    assert _text(context, 0) == relayed  # fits the recent limit: stage 1 keeps it
    await pruner.prune_old(context)
    assert _text(context, 0) == relayed, "unseen by the model: still recent"
    pruner.mark_seen(context)
    await pruner.prune_old(context)
    cut = parse_truncation_notice(_text(context, 0))
    assert cut is not None and cut[1].file_path is not None
    saved = Path(cut[1].file_path)
    assert saved.parent == tmp_path / "tool_result"
    assert saved.read_text(encoding="utf-8") == relayed
    await pruner.prune_all(context, 200)  # emergency: harder, same file, no new copy
    harder = parse_truncation_notice(_text(context, 0))
    assert harder is not None and harder[1].file_path == str(saved)
    assert harder[1].excerpt_bytes <= 200
    assert list((tmp_path / "tool_result").iterdir()) == [saved]
