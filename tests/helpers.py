"""Small helpers shared by the agent-level tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, InjectionConfig
from agentscope.message import Msg, ToolResultBlock, UserMsg
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.core.summary.markdown import (
    find_headings,
    section_index,
    section_level,
    split_title,
    unwrap_code_fence,
)
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import (
    ModelBlock,
    ModelCall,
    ScriptedChatModel,
    text_step,
    tool_calls_step,
)
from tests.summaries import six_section_summary as six_section_summary  # re-exported


def allow(func: Callable[..., Any], name: str | None = None) -> FunctionTool:
    """A FunctionTool that never asks for permission."""
    return FunctionTool(
        func,
        name=name,
        permission=PermissionDecision(behavior=PermissionBehavior.ALLOW, message="test"),
    )


async def make_agent(
    hook: MemoryCompactionHook,
    model: ScriptedChatModel,
    tools: Sequence[FunctionTool] = (),
    *,
    system_prompt: str = "You are a careful assistant.",
    name: str = "assistant",
) -> Agent:
    """A real AgentScope 2.x Agent with the hook and its read_file tool."""
    return Agent(
        name=name,
        system_prompt=system_prompt,
        model=model,
        toolkit=Toolkit(tools=[*await hook.list_tools(), *tools]),
        middlewares=[hook],
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


def tool_results(messages: Sequence[Msg]) -> list[ToolResultBlock]:
    """Every tool result block in ``messages``, in order."""
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def last_result_text(messages: Sequence[Msg]) -> str:
    """The text of the newest tool result the model received."""
    results = tool_results(messages)
    return "\n".join(tool_result_texts(results[-1])) if results else ""


def tool_result_texts(block: Any) -> list[str]:
    """The text parts of a 2.x tool result's output."""
    if isinstance(block.output, str):
        return [block.output]
    return [b.text for b in block.output if getattr(b, "type", None) == "text"]


def lines_text(n_lines: int, width: int = 60, seed: str = "line") -> str:
    """A deterministic multi-line text of about ``n_lines * width`` bytes."""
    return "".join(f"{seed} {i:06d} " + "x" * (width - 13) + "\n" for i in range(n_lines))


def workspace_file(workspace: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``workspace/name`` and return the path."""
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def follow_notices(
    workspace: Path, output: str, config: RunningConfig
) -> tuple[list[str], list[str]]:
    """Run an agent whose tool returns ``output``; the model follows every notice to the end.

    Returns the excerpt bodies the model saw, in order (the first is the tool's excerpt), and
    the whole result texts it saw (body plus notice).
    """

    def run_tool(query: str) -> str:
        """Run the tool.

        Args:
            query (`str`): What to look for.
        """
        return output

    bodies: list[str] = []
    seen: list[str] = []

    follow = notice_follower(bodies, "done reading", seen)

    hook = MemoryCompactionHook(config, workspace)
    model = ScriptedChatModel(
        [tool_calls_step(("run_tool", {"query": "*"}))] + [follow] * 40, context_size=400_000
    )
    agent = await make_agent(hook, model, [allow(run_tool)])
    reply = await agent.reply(UserMsg("user", "Run the tool and read all of it."))
    assert reply.get_text_content() == "done reading", seen[-1][-300:]
    return bodies, seen


def outline(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(preamble lines, [(title, body lines)]) of a summary's text, split at its section
    headings as the summary parser splits it (text after "Goal:" starts the body)."""
    lines = unwrap_code_fence(text).split("\n")
    titles = find_headings(lines, level=section_level(lines))
    rows = sorted(titles)
    sections: list[tuple[str, list[str]]] = []
    for n, row in enumerate(rows):
        title, tail = split_title(titles[row])
        body = lines[row + 1 : rows[n + 1] if n + 1 < len(rows) else len(lines)]
        sections.append((title, [tail, *body] if tail else body))
    return lines[: rows[0] if rows else len(lines)], sections


def section_lines(text: str, index: int) -> list[str]:
    """The non-blank body lines of the first section ``index`` (0..5) of a summary's text."""
    _, sections = outline(text)
    body = next(body for title, body in sections if section_index(title) == index)
    return [line for line in body if line.strip()]


def notice_follower(
    bodies: list[str], done: str, seen: list[str] | None = None
) -> Callable[[ModelCall], list[ModelBlock]]:
    """A scripted model step that follows each truncation notice with the ``read_file`` call
    it names (``bodies`` gets each excerpt, ``seen`` each result's whole text) and answers
    ``done`` once a result carries no notice."""

    def follow(call: ModelCall) -> list[ModelBlock]:
        text = last_result_text(call.messages)
        if seen is not None:
            seen.append(text)
        parsed = parse_truncation_notice(text)
        if parsed is None:
            bodies.append(text)
            return text_step(done)
        body, notice = parsed
        bodies.append(body)
        args: dict[str, object] = {"file_path": notice.file_path, "start_line": notice.next_line}
        if notice.next_offset:
            args["line_offset"] = notice.next_offset
        return tool_calls_step(("read_file", args))

    return follow
