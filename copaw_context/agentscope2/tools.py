"""The ``read_file`` tool as an AgentScope 2.x ``FunctionTool`` bound to a workspace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from agentscope.message import TextBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk

from copaw_context.core.host.views import METADATA_KEY
from copaw_context.core.tools.file_reader import ReadResult
from copaw_context.core.tools.read_tool import ReadFileTool

__all__ = ["allowed_tool", "make_read_file_tool"]


def allowed_tool(function: Callable[..., Awaitable[str]]) -> FunctionTool:
    """A tool of ours (it only touches the workspace) that runs without asking."""
    return FunctionTool(
        cast(Any, function),  # returns text, which FunctionTool wraps as its ToolChunk does
        permission=PermissionDecision(
            behavior=PermissionBehavior.ALLOW,
            message=f"{function.__name__} only works inside the agent workspace.",
        ),
    )


def make_read_file_tool(workspace: Path | ReadFileTool, **options: Any) -> FunctionTool:
    """The ``read_file`` tool (permission ALLOW): a :class:`ReadFileTool`, or one built from
    ``workspace`` and its options (``extra_roots``, ``max_bytes``, ``exempt_extensions``,
    ``exempt_max_bytes``, ``tool_results_dir``, ``dialog_dir``)."""

    def respond(result: ReadResult, entry: dict[str, Any] | None) -> ToolChunk:
        return ToolChunk(
            content=[TextBlock(text=result.text)],
            state=ToolResultState.SUCCESS if result.ok else ToolResultState.ERROR,
            is_last=True,
            metadata={METADATA_KEY: entry} if entry else {},
        )

    return FunctionTool(
        ReadFileTool.of(workspace, **options).function(respond),
        name="read_file",
        is_read_only=True,
        permission=PermissionDecision(
            behavior=PermissionBehavior.ALLOW,
            message="read_file only reads inside the agent workspace.",
        ),
    )
