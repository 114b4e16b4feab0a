"""Room for AgentScope's runtime-state hint, appended to the context after our step.

AgentScope 2.x (``injection_config.inject_runtime_state``, on by default) appends a hint
with the time and the context length after ``on_compress_context`` and before the model
call, so the input we fit to the window grows by it (about 100 tokens). The planning count
adds a text as large as the hint would be; the model-call count (which sees the hint in the
context) does not. The host's ``injection_config`` is read as AgentScope 2.x has it
(``inject_runtime_state``, ``template``, ``timezone``, ``extra_fields``); the fields are sized
by the widest values AgentScope fills in.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["runtime_hint_allowance"]

logger = logging.getLogger("copaw_context")

_FIELDS = {
    "current-time": "2026-12-31T23:59:59+00:00",
    "context-length": "Your current context contains 999999 tokens. When reaching 999999 "
    "tokens, your context will be compressed. No task is in progress, so judge by yourself "
    "whether the context should be compressed now by calling `compress_context`.",
}


def runtime_hint_allowance(agent: Any) -> str:
    """A text as large as the hint AgentScope will append ("" when it appends none)."""
    cfg = getattr(agent, "injection_config", None)
    if cfg is None or getattr(cfg, "inject_runtime_state", False) is not True:
        return ""
    try:
        fields = {**_FIELDS, "timezone": str(cfg.timezone)}
        fields.update({str(k): str(v) for k, v in dict(cfg.extra_fields or {}).items()})
        state = "\n".join(f"<{k}>{v}</{k}>" for k, v in fields.items())
        return "\n" + str(cfg.template).replace("{runtime_state}", state)
    except (AttributeError, TypeError, ValueError):
        logger.debug("copaw-context: could not size AgentScope's runtime-state hint")
        return ""
