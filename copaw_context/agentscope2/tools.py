"""The ``read_file`` tool as an AgentScope 2.x ``FunctionTool`` bound to a workspace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

from agentscope.message import TextBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk

from copaw_context.agentscope2.messages import METADATA_KEY
from copaw_context.core.file_reader import read_text_file
from copaw_context.core.tool_docs import read_file_doc

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


def make_read_file_tool(
    workspace: Path,
    *,
    extra_roots: Sequence[Path] = (),
    max_bytes: int = 50000,
    exempt_extensions: Sequence[str] = (".md",),
    exempt_max_bytes: int | None = None,
    tool_results_dir: str = "tool_result",
    dialog_dir: str = "dialog",
) -> FunctionTool:
    """Build the ``read_file`` tool (permission ALLOW) reading inside ``workspace``.

    ``tool_results_dir`` and ``dialog_dir`` name the folders in the description the model sees.
    Saved outputs (``tool_results_dir`` and ``dialog_dir/requests``) are always read as
    text, NUL bytes included, so every notice pointing at them can be followed.
    """
    roots = tuple(Path(r) for r in extra_roots)
    # An absolute folder stays absolute: Path("/ws") / "/abs" == Path("/abs").
    text_dirs = (workspace / tool_results_dir, workspace / dialog_dir / "requests")

    async def read_file(
        file_path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        line_offset: int | None = None,
    ) -> ToolChunk:
        # The docstring (the schema the model reads) is set below: read_file_doc.
        result = await read_text_file(
            file_path,
            start_line,
            end_line,
            line_offset,
            workspace=workspace,
            extra_roots=roots,
            max_bytes=max_bytes,
            exempt_extensions=exempt_extensions,
            exempt_max_bytes=exempt_max_bytes,
            text_dirs=text_dirs,
        )
        metadata: dict[str, object] = {}
        if result.ok and result.path is not None:
            metadata[METADATA_KEY] = {
                "read_file": {
                    "path": str(result.path),
                    "start_line": result.start_line,
                    "line_offset": result.line_offset,
                    "total_lines": result.total_lines,
                }
            }
        return ToolChunk(
            content=[TextBlock(text=result.text)],
            state=ToolResultState.SUCCESS if result.ok else ToolResultState.ERROR,
            is_last=True,
            metadata=metadata,
        )

    read_file.__doc__ = read_file_doc(tool_results_dir, dialog_dir)
    return FunctionTool(
        read_file,
        name="read_file",
        is_read_only=True,
        permission=PermissionDecision(
            behavior=PermissionBehavior.ALLOW,
            message="read_file only reads inside the agent workspace.",
        ),
    )
