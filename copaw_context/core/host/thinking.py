"""Whether a host's formatter sends thinking blocks back to the provider.

Decided from the formatter's behaviour, not its class name: a tiny conversation holding a
thinking block with a marker text is formatted (once per shape of block the host has: plain,
or carrying a provider's fields), and the marker is looked for in the result. An adapter
builds the conversation in its host's messages. An unknown or failing formatter counts
thinking (the safe side).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from copaw_context.core.host.views import ThinkingSent

__all__ = ["PROBE_MARKER", "sends_thinking", "thinking_by_fields"]

logger = logging.getLogger("copaw_context")

PROBE_MARKER = "copaw-context-thinking-probe-5e1f"
"""The thinking text of the probe's conversation."""


class _ProbeNoise(logging.Filter):
    """Drops what a formatter logs about the probe's thinking block ("Unsupported block type
    thinking", AgentScope 1.x's formatters)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "thinking" not in record.getMessage()


async def sends_thinking(
    formatter: Any, conversation: Sequence[Any], *, quiet: str | None = None
) -> bool:
    """Whether ``formatter`` puts the thinking block of ``conversation`` (a user message, an
    assistant message with a thinking block of :data:`PROBE_MARKER` and a text, a user
    message) into the model input; the host's logger ``quiet`` says nothing about that
    block meanwhile."""
    if formatter is None or not callable(getattr(formatter, "format", None)):
        return True
    noise = _ProbeNoise()
    if quiet is not None:
        logging.getLogger(quiet).addFilter(noise)
    try:
        formatted = await formatter.format(list(conversation))
        return PROBE_MARKER in json.dumps(formatted, ensure_ascii=False, default=str)
    except Exception as exc:  # an unknown formatter: count thinking, stay under the window
        logger.debug("copaw-context: thinking probe failed on %r: %s", formatter, exc)
        return True
    finally:
        if quiet is not None:
            logging.getLogger(quiet).removeFilter(noise)


async def thinking_by_fields(
    formatter: Any,
    conversation: Callable[[dict[str, str]], Sequence[Any]],
    fields: Sequence[str],
) -> ThinkingSent:
    """``True``/``False`` when ``formatter`` treats every thinking block alike, else a
    per-block predicate keyed on the provider ``fields`` the block carries
    (``conversation(extra)``: the probe with a thinking block carrying ``extra``)."""
    if formatter is None or not callable(getattr(formatter, "format", None)):
        return True
    plain = await sends_thinking(formatter, conversation({}))
    by_field = {
        name: await sends_thinking(formatter, conversation({name: "copaw-probe"}))
        for name in fields
    }
    if all(by_field.values()) and plain:
        return True
    if not plain and not any(by_field.values()):
        return False

    def sent(block: Any) -> bool:
        present = [name for name in fields if getattr(block, name, None)]
        return any(by_field[name] for name in present) if present else plain

    return sent
