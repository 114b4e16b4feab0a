"""Whether a model's formatter sends thinking blocks back to the provider.

Decided from the formatter's behaviour, not its class name: a tiny conversation holding a
thinking block with a marker text is formatted once per shape of block (plain, or carrying
a provider's ``signature`` / ``reasoning_item_id``), and the marker is looked for in the
result. Anthropic, for instance, sends only signed thinking back, OpenAI's chat formatter
never, DeepSeek, Moonshot, Volcengine and Gemini always, DashScope when the model accepts
``application/x-thinking``. An unknown or failing formatter counts thinking (safe side).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agentscope.message import AssistantMsg, TextBlock, ThinkingBlock, UserMsg

from copaw_context.agentscope2.messages import ThinkingPolicy

__all__ = ["thinking_policy"]

logger = logging.getLogger("copaw_context")

_MARKER = "copaw-context-thinking-probe-5e1f"
# Fields a provider attaches to its own thinking blocks; a formatter may forward only those.
_PROVIDER_FIELDS = ("signature", "reasoning_item_id")


async def _sends(formatter: Any, extra: dict[str, str]) -> bool:
    block = ThinkingBlock(thinking=_MARKER, **extra)
    conversation = [
        UserMsg("user", "probe"),
        AssistantMsg("assistant", [block, TextBlock(text="ok")]),
        UserMsg("user", "next"),
    ]
    try:
        formatted = await formatter.format(conversation)
        return _MARKER in json.dumps(formatted, ensure_ascii=False, default=str)
    except Exception as exc:  # an unknown formatter: count thinking, stay under the window
        logger.debug("copaw-context: thinking probe failed on %r: %s", formatter, exc)
        return True


async def thinking_policy(model: Any) -> ThinkingPolicy:
    """``True``/``False`` when the formatter treats every thinking block alike, else a
    per-block predicate keyed on the provider fields the block carries."""
    formatter = getattr(model, "formatter", None)
    if formatter is None or not callable(getattr(formatter, "format", None)):
        return True
    plain = await _sends(formatter, {})
    by_field = {name: await _sends(formatter, {name: "copaw-probe"}) for name in _PROVIDER_FIELDS}
    if all(by_field.values()) and plain:
        return True
    if not plain and not any(by_field.values()):
        return False

    def sent(block: ThinkingBlock) -> bool:
        fields = [name for name in _PROVIDER_FIELDS if getattr(block, name, None)]
        return any(by_field[name] for name in fields) if fields else plain

    return sent
