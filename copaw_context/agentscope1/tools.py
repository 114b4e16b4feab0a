"""``read_file`` and the memory tools as AgentScope 1.x tool functions.

A 1.x tool returns a ``ToolResponse``; the core's tools return text, so each is wrapped
(same name, signature and docstring, which 1.x turns into the JSON schema). 1.x puts only a
response's content into the ``ToolResultBlock``; ``read_file``'s entry (which file, from
which line) reaches the hook through the toolkit's ``postprocess_func`` instead
(``core.tools.read_entries.ReadEntries``), keyed by the call id, until stage 1 stores it
with the result.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentscope.tool import ToolResponse

from copaw_context.core.host.views import METADATA_KEY
from copaw_context.core.tools.file_reader import ReadResult
from copaw_context.core.tools.read_tool import ReadFileTool

__all__ = ["as_tool_function", "make_read_file"]


def _response(text: str, metadata: dict[str, Any] | None = None) -> ToolResponse:
    return ToolResponse(content=[{"type": "text", "text": text}], metadata=metadata)


def as_tool_function(function: Callable[..., Awaitable[str]]) -> Callable[..., Any]:
    """``function`` (returning text) as a 1.x tool function returning a ``ToolResponse``."""

    @functools.wraps(function)
    async def tool(*args: Any, **kwargs: Any) -> ToolResponse:
        return _response(await function(*args, **kwargs))

    return tool


def make_read_file(workspace: Path | ReadFileTool, **options: Any) -> Callable[..., Any]:
    """The ``read_file`` tool function: a :class:`ReadFileTool`, or one built from
    ``workspace`` and its options (see :func:`copaw_context.agentscope2.make_read_file_tool`)."""

    def respond(result: ReadResult, entry: dict[str, Any] | None) -> ToolResponse:
        return _response(result.text, {METADATA_KEY: entry} if entry else None)

    return ReadFileTool.of(workspace, **options).function(respond)
