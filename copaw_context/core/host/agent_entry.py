"""The entry a host saves with each agent when it has no state of its own for us
(AgentScope 1.x: an attribute registered with the agent's ``state_dict``): the archive
session id and the engine's state (calibration, statistics, the bare summary, messages
waiting for an unwritable archive). A saved value that is not such an entry, or a damaged
one, loads as a fresh entry (a new session id) instead of failing the agent's load."""

from __future__ import annotations

import copy
import uuid
from typing import Any

__all__ = ["fresh_entry", "loaded_entry"]


def fresh_entry() -> dict[str, Any]:
    """A new entry: a new session id, no engine state yet."""
    return {"session_id": uuid.uuid4().hex, "engine": {}}


def loaded_entry(value: Any) -> dict[str, Any]:
    """A saved entry (a copy, repaired), or a fresh one when the saved value is not ours."""
    if not isinstance(value, dict):
        return fresh_entry()
    data = copy.deepcopy(value)
    if not isinstance(data.get("session_id"), str) or not data["session_id"]:
        data["session_id"] = uuid.uuid4().hex
    if not isinstance(data.get("engine"), dict):
        data["engine"] = {}
    return data
