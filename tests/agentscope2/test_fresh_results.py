"""The model sees every tool result at least once before it can be compacted.

Found from outside: with the default 50 KB recent limit and any window up to ~64k tokens, the
newest results did not fit the 10% reserve and were archived before the model saw them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.message import Msg, ToolResultBlock, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.cli.demo import demo_policy, make_demo_tools
from copaw_context.core.archive.store import read_archive
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.helpers import allow, make_agent, tool_results


def config(window: int) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "light_context_config": {"token_counter": "o200k_base", "compactor": "extractive"},
            }
        }
    )


def build_log(target: str) -> str:
    """Return the build log of a target.

    Args:
        target (`str`): The build target.
    """
    lines = [
        f"[{i:06d}] cc -O2 -c src/module_{i % 50}.c -o build/m{i % 50}.o  # ok" for i in range(3000)
    ]
    return "\n".join([*lines, "src/parser.c:412:9: error: 'tok' undeclared"]) + "\n"


async def test_parallel_50kb_results_reach_the_model_in_a_32k_window(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(32_000), tmp_path, on_event=events.append)
    model = ScriptedChatModel(
        [
            tool_calls_step(("build_log", {"target": "all"}), ("build_log", {"target": "parser"})),
            text_step("the error is in src/parser.c"),
        ],
        context_size=32_000,
    )
    agent = await make_agent(hook, model, [allow(build_log)])
    await agent.reply(UserMsg("user", "Build all and parser, tell me the error line."))
    seen = tool_results(model.calls[1].messages)
    assert len(seen) == 2, "both results must reach the model"
    for block in seen:
        text = block.output if isinstance(block.output, str) else block.output[0].text
        cut = parse_truncation_notice(text)
        assert cut is not None and cut[1].file_path, "cut to fit, with the way to the rest"
    report = await hook.report(agent)
    assert report.total <= report.threshold


def result_ids(call: ModelCall) -> set[str]:
    return {b.id for m in call.messages for b in m.content if isinstance(b, ToolResultBlock)}


def archived_result_ids(workspace: Path) -> set[str]:
    ids: set[str] = set()
    for path in (workspace / "dialog").glob("*.jsonl"):
        for record in read_archive(path):
            ids.update(
                b.id
                for b in Msg.model_validate(record["message"]).content
                if isinstance(b, ToolResultBlock)
            )
    return ids


async def test_no_result_is_archived_unseen_in_a_long_session(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(16_000), tmp_path)
    policy = demo_policy(60, parallel_every=3)
    model = ScriptedChatModel([policy] * 300, context_size=16_000)
    agent = await make_agent(hook, model, make_demo_tools(seed=11))
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    archived = archived_result_ids(tmp_path)
    assert len(archived) > 20
    seen = set().union(*(result_ids(call) for call in model.calls))
    assert archived <= seen, f"{len(archived - seen)} result(s) archived before the model saw them"
