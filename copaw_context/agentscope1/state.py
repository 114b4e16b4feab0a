"""Per-agent state that survives a restart: a state attribute of the 1.x agent.

A 1.x agent saves ``state_dict()`` (e.g. through ``JSONSession``) and restores it with
``load_state_dict``; an attribute registered with ``register_state`` travels with it. Ours,
``agent.copaw_context``, holds the archive session id and the engine's state
(``core.host.agent_entry``).

A state saved before the hook was attached has no such key, and 1.x's strict loading would
raise ``KeyError`` for it; the agent's ``load_state_dict`` is wrapped (on the instance) so
such a state loads with a fresh entry instead: switching from QwenPaw keeps the sessions.
"""

from __future__ import annotations

import copy
from typing import Any

from copaw_context.core.host.agent_entry import entry_of, loaded_entry, tolerant_load

__all__ = ["STATE_ATTRIBUTE", "agent_state", "register_agent_state"]

STATE_ATTRIBUTE = "copaw_context"
"""Name of the agent attribute (and ``state_dict()`` key) holding our state."""


def register_agent_state(agent: Any) -> None:
    """Give ``agent`` our state attribute, saved and loaded with its ``state_dict`` (a state
    saved before attaching loads too: ``core.host.agent_entry.tolerant_load``)."""
    setattr(agent, STATE_ATTRIBUTE, loaded_entry(getattr(agent, STATE_ATTRIBUTE, None)))
    agent.register_state(
        STATE_ATTRIBUTE, custom_to_json=copy.deepcopy, custom_from_json=loaded_entry
    )
    agent.load_state_dict = tolerant_load(agent.load_state_dict, STATE_ATTRIBUTE)


def agent_state(agent: Any) -> dict[str, Any]:
    """The agent's entry (repaired in place when a load left something else there)."""
    return entry_of(agent, STATE_ATTRIBUTE)
