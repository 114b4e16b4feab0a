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


_READ_FILE_DOC = """Read a text file, or continue reading a saved tool output or dialog archive.

Lines are 1-based and inclusive. Long output is cut; the cut text then ends with a
<<<TRUNCATED>>> notice that gives the exact `file_path`, `start_line` (and
`line_offset` when the cut fell inside a very long line) to pass to the next call
to continue exactly where the excerpt stopped. Relative paths are resolved against
the workspace, which holds `{tool_results}/` (saved tool outputs) and `{dialog}/`
(archived conversation history, one JSON message per line; read it from the end).

Args:
    file_path (`str`):
        Path of the file to read, absolute or relative to the workspace.
    start_line (`int | None`, optional):
        First line to read (1-based). Defaults to 1.
    end_line (`int | None`, optional):
        Last line to read (inclusive). Defaults to the end of the file.
    line_offset (`int | None`, optional):
        Number of characters of `start_line` to skip, as given by a truncation
        notice when a single line was longer than the output limit. Defaults to 0.
"""


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

    read_file.__doc__ = _READ_FILE_DOC.replace("{tool_results}", tool_results_dir.strip("/"))
    read_file.__doc__ = read_file.__doc__.replace("{dialog}", dialog_dir.strip("/"))
    return FunctionTool(
        read_file,
        name="read_file",
        is_read_only=True,
        permission=PermissionDecision(
            behavior=PermissionBehavior.ALLOW,
            message="read_file only reads inside the agent workspace.",
        ),
    )
