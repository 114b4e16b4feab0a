"""Whether a model's formatter sends thinking blocks back to the provider.

Decided by ``core.host.thinking``'s probe over a 2.x conversation, once per shape of block
(plain, or carrying a provider's ``signature`` / ``reasoning_item_id``). Anthropic, for
instance, sends only signed thinking back, OpenAI's chat formatter never, DeepSeek,
Moonshot, Volcengine and Gemini always, DashScope when the model accepts
``application/x-thinking``. An unknown or failing formatter counts thinking (safe side).
"""

from __future__ import annotations

from typing import Any

from agentscope.message import AssistantMsg, Msg, TextBlock, ThinkingBlock, UserMsg

from copaw_context.agentscope2.messages import ThinkingPolicy
from copaw_context.core.host.thinking import PROBE_MARKER, thinking_by_fields

__all__ = ["thinking_policy"]

# Fields a provider attaches to its own thinking blocks; a formatter may forward only those.
_PROVIDER_FIELDS = ("signature", "reasoning_item_id")


def _conversation(extra: dict[str, str]) -> list[Msg]:
    block = ThinkingBlock(thinking=PROBE_MARKER, **extra)
    return [
        UserMsg("user", "probe"),
        AssistantMsg("assistant", [block, TextBlock(text="ok")]),
        UserMsg("user", "next"),
    ]


async def thinking_policy(model: Any) -> ThinkingPolicy:
    """``True``/``False`` when the formatter treats every thinking block alike, else a
    per-block predicate keyed on the provider fields the block carries."""
    formatter = getattr(model, "formatter", None)
    return await thinking_by_fields(formatter, _conversation, _PROVIDER_FIELDS)
