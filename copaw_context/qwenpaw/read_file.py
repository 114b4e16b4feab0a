"""``read_file`` inside QwenPaw: QwenPaw's own tool, with our reader where our notices point.

QwenPaw's ``read_file(file_path, start_line=None, end_line=None)`` reads any file, relative
paths from the workspace, with its own truncation. Our truncation notices name files in the
offload folder (``tool_results/``) and the dialog archive, and add ``line_offset`` when a cut
fell inside a very long line, which QwenPaw's tool does not take. The agent gets one
``read_file`` with QwenPaw's three parameters (same names, same meaning: 1-based, inclusive)
and ``line_offset`` added:

- a path inside the workspace's offload or dialog folder, or a call with ``line_offset``, is
  read by copaw-context's reader (the exact bytes, confined to the workspace, every notice
  followable to the end);
- any other path goes to QwenPaw's own ``read_file``, unchanged (its reach, its output).

When QwenPaw's ``read_file`` is disabled in the agent's tools, only our saved files are read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentscope.tool import ToolResponse

from copaw_context.agentscope1.tools import make_read_file
from copaw_context.core.tools.read_tool import ReadFileTool

__all__ = ["READ_FILE_DOC", "cooperative_read_file", "reads_ours"]

QwenPawReadFile = Callable[..., Awaitable[ToolResponse]]

READ_FILE_DOC = """Read a file. Relative paths resolve from the workspace.

Use start_line/end_line to read a specific line range. Omit both to read the full file.
Long output is cut; the cut text then ends with a <<<TRUNCATED>>> notice that gives the
exact `file_path`, `start_line` (and `line_offset` when the cut fell inside a very long
line) to pass to the next call to continue exactly where the excerpt stopped. Saved tool
outputs are in `{tool_results}/`, the archived conversation in `{dialog}/` (one JSON message
per line; read it from the end).

Args:
    file_path (`str`):
        Path to the file.
    start_line (`int`, optional):
        First line to read (1-based, inclusive).
    end_line (`int`, optional):
        Last line to read (1-based, inclusive).
    line_offset (`int`, optional):
        Number of characters of `start_line` to skip, as given by a truncation notice
        when a single line was longer than the output limit.
"""


def reads_ours(reader: ReadFileTool, file_path: object) -> bool:
    """Whether ``file_path`` is one of our saved files (offload folder, dialog archive).

    A path that is not text goes to our reader too (its error names what is wrong)."""
    if not isinstance(file_path, str):
        return True
    path = Path(file_path).expanduser()
    if not path.is_absolute():
        path = reader.workspace / path
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: our reader says so
        return True
    for folder in (reader.tool_results_dir, reader.dialog_dir):
        root = (reader.workspace / folder).resolve()
        if resolved == root or resolved.is_relative_to(root):
            return True
    return False


def _disabled(file_path: str) -> ToolResponse:
    text = (
        f"Error: {file_path} is not a saved tool output or archive file, and QwenPaw's "
        "read_file is disabled for this agent (tools settings)."
    )
    return ToolResponse(content=[{"type": "text", "text": text}])


def cooperative_read_file(
    reader: ReadFileTool, qwenpaw_read_file: QwenPawReadFile | None
) -> Callable[..., Any]:
    """The agent's ``read_file``: ours for our files and ``line_offset``, else QwenPaw's
    (``None``: QwenPaw's is disabled, only our files are read)."""
    ours = make_read_file(reader)

    async def read_file(
        file_path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        line_offset: int | None = None,
    ) -> ToolResponse:
        # The docstring (the schema the model reads) is set below.
        if line_offset is not None or reads_ours(reader, file_path):
            response: ToolResponse = await ours(file_path, start_line, end_line, line_offset)
            return response
        if qwenpaw_read_file is None:
            return _disabled(file_path)
        return await qwenpaw_read_file(file_path, start_line, end_line)

    read_file.__doc__ = READ_FILE_DOC.replace(
        "{tool_results}", reader.tool_results_dir.strip("/")
    ).replace("{dialog}", reader.dialog_dir.strip("/"))
    return read_file
