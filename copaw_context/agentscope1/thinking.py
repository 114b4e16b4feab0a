"""Whether a 1.x formatter sends thinking blocks back to the provider.

Decided by ``core.host.thinking``'s probe over a 1.x conversation (1.x's OpenAI formatter
drops thinking, its Anthropic and DeepSeek formatters send it). An unknown or failing
formatter counts thinking (the safe side).
"""

from __future__ import annotations

from typing import Any

from agentscope.message import Msg

from copaw_context.core.host.thinking import PROBE_MARKER, sends_thinking

__all__ = ["thinking_policy"]

_AGENTSCOPE_LOGGER = "as"  # agentscope._logging.logger


async def thinking_policy(formatter: Any) -> bool:
    """Whether ``formatter`` puts thinking blocks into the model input."""
    conversation = [
        Msg("user", "probe", "user"),
        Msg(
            "assistant",
            [{"type": "thinking", "thinking": PROBE_MARKER}, {"type": "text", "text": "ok"}],
            "assistant",
        ),
        Msg("user", "next", "user"),
    ]
    return await sends_thinking(formatter, conversation, quiet=_AGENTSCOPE_LOGGER)
