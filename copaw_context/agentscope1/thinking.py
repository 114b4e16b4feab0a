"""Whether a 1.x formatter sends thinking blocks back to the provider.

Decided from the formatter's behaviour, not its class name: a tiny conversation holding a
thinking block with a marker text is formatted, and the marker is looked for in the result
(1.x's OpenAI formatter drops thinking, its Anthropic and DeepSeek formatters send it). An
unknown or failing formatter counts thinking (the safe side).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agentscope.message import Msg

__all__ = ["thinking_policy"]

logger = logging.getLogger("copaw_context")

_MARKER = "copaw-context-thinking-probe-5e1f"
_AGENTSCOPE_LOGGER = "as"  # agentscope._logging.logger


class _ProbeNoise(logging.Filter):
    """Drops the "Unsupported block type thinking" warning our probe makes 1.x log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "thinking" not in record.getMessage()


async def thinking_policy(formatter: Any) -> bool:
    """Whether ``formatter`` puts thinking blocks into the model input."""
    if formatter is None or not callable(getattr(formatter, "format", None)):
        return True
    conversation = [
        Msg("user", "probe", "user"),
        Msg(
            "assistant",
            [{"type": "thinking", "thinking": _MARKER}, {"type": "text", "text": "ok"}],
            "assistant",
        ),
        Msg("user", "next", "user"),
    ]
    noise = _ProbeNoise()
    logging.getLogger(_AGENTSCOPE_LOGGER).addFilter(noise)
    try:
        formatted = await formatter.format(conversation)
        return _MARKER in json.dumps(formatted, ensure_ascii=False, default=str)
    except Exception as exc:  # an unknown formatter: count thinking, stay under the window
        logger.debug("copaw-context: thinking probe failed on %r: %s", formatter, exc)
        return True
    finally:
        logging.getLogger(_AGENTSCOPE_LOGGER).removeFilter(noise)
