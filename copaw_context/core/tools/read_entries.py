"""``read_file`` entries on their way from a tool's response to stage 1, by call id.

A host that puts only a response's content into the stored tool result (AgentScope 1.x) hands
``read_file``'s entry (which file, from which line) over through its toolkit's
``postprocess_func`` instead, keyed by the call id, until stage 1 stores it with the result.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from copaw_context.core.host.views import METADATA_KEY

__all__ = ["ReadEntries"]

_MAX_ENTRIES = 256


class ReadEntries:
    """``read_file`` entries by call id, from the toolkit's postprocess to stage 1."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def postprocess(self, tool_call: Any, response: Any) -> None:
        """The toolkit's ``postprocess_func``: keep the entry, leave the response as is."""
        entry = (response.metadata or {}).get(METADATA_KEY)
        call_id = tool_call.get("id") if isinstance(tool_call, dict) else None
        if isinstance(entry, dict) and isinstance(call_id, str):
            self._entries[call_id] = dict(entry)
            while len(self._entries) > _MAX_ENTRIES:  # results never stored (interrupted)
                self._entries.popitem(last=False)

    def pop(self, call_id: str) -> dict[str, Any]:
        return self._entries.pop(call_id, {})
