"""The entry a host saves with each agent when it has no state of its own for us
(AgentScope 1.x: an attribute registered with the agent's ``state_dict``): the archive
session id and the engine's state (calibration, statistics, the bare summary, messages
waiting for an unwritable archive). A saved value that is not such an entry, or a damaged
one, loads as a fresh entry (a new session id) instead of failing the agent's load; so does a
state saved before the hook was attached, which has no entry at all (:func:`tolerant_load`)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["entry_of", "fresh_entry", "loaded_entry", "tolerant_load"]

_TOLERANT = "_copaw_context_tolerant"


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


def entry_of(holder: Any, attribute: str) -> dict[str, Any]:
    """The entry ``holder`` keeps as ``attribute`` (repaired in place when a load left
    something else there)."""
    data = getattr(holder, attribute, None)
    if not isinstance(data, dict) or not isinstance(data.get("engine"), dict):
        data = loaded_entry(data)
        setattr(holder, attribute, data)
    return data


def tolerant_load(load: Callable[[dict[str, Any], bool], None], key: str) -> Callable[..., None]:
    """A host's ``load(state_dict, strict)`` that loads a state saved without ``key`` (before
    the hook was attached: strict loading would raise ``KeyError``) with a fresh entry there;
    ``load`` itself when it is one already."""
    if getattr(load, _TOLERANT, False):
        return load

    def load_state_dict(state_dict: dict[str, Any], strict: bool = True) -> None:
        if isinstance(state_dict, dict) and key not in state_dict:
            state_dict = {**state_dict, key: fresh_entry()}  # saved before attaching
        load(state_dict, strict)

    setattr(load_state_dict, _TOLERANT, True)
    return load_state_dict
