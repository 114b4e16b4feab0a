"""``read_file`` and the memory tools as AgentScope 1.x tool functions.

A 1.x tool returns a ``ToolResponse``; the core's tools return text, so each is wrapped
(same name, signature and docstring, which 1.x turns into the JSON schema). 1.x puts only a
response's content into the ``ToolResultBlock``; ``read_file``'s entry (which file, from
which line) reaches the hook through the toolkit's ``postprocess_func`` instead, keyed by
the call id, until stage 1 stores it with the result.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentscope.tool import ToolResponse

from copaw_context.agentscope1.messages import METADATA_KEY
from copaw_context.core.tools.read_tool import ReadFileTool

__all__ = ["ReadEntries", "as_tool_function", "make_read_file"]

_MAX_ENTRIES = 256


def _response(text: str, metadata: dict[str, Any] | None = None) -> ToolResponse:
    return ToolResponse(content=[{"type": "text", "text": text}], metadata=metadata)


def as_tool_function(function: Callable[..., Awaitable[str]]) -> Callable[..., Any]:
    """``function`` (returning text) as a 1.x tool function returning a ``ToolResponse``."""

    @functools.wraps(function)
    async def tool(*args: Any, **kwargs: Any) -> ToolResponse:
        return _response(await function(*args, **kwargs))

    return tool


class ReadEntries:
    """``read_file`` entries by call id, from the toolkit's postprocess to stage 1."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def postprocess(self, tool_call: Any, response: ToolResponse) -> None:
        """The toolkit's ``postprocess_func``: keep the entry, leave the response as is."""
        entry = (response.metadata or {}).get(METADATA_KEY)
        call_id = tool_call.get("id") if isinstance(tool_call, dict) else None
        if isinstance(entry, dict) and isinstance(call_id, str):
            self._entries[call_id] = dict(entry)
            while len(self._entries) > _MAX_ENTRIES:  # results never stored (interrupted)
                self._entries.popitem(last=False)

    def pop(self, call_id: str) -> dict[str, Any]:
        return self._entries.pop(call_id, {})


def make_read_file(workspace: Path | ReadFileTool, **options: Any) -> Callable[..., Any]:
    """The ``read_file`` tool function: a :class:`ReadFileTool`, or one built from
    ``workspace`` and its options (see :func:`copaw_context.agentscope2.make_read_file_tool`)."""
    reader = (
        workspace if isinstance(workspace, ReadFileTool) else ReadFileTool(workspace, **options)
    )

    async def read_file(
        file_path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        line_offset: int | None = None,
    ) -> ToolResponse:
        # The docstring (the schema the model reads) is set below.
        result, entry = await reader.read(file_path, start_line, end_line, line_offset)
        return _response(result.text, {METADATA_KEY: entry} if entry else None)

    read_file.__doc__ = reader.doc
    return read_file
