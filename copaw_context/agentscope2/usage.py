"""A 2.x ``ChatUsage`` in the engine's neutral fields (``core.tokens.usage.ReportedUsage``)."""

from __future__ import annotations

from typing import Any

from copaw_context.core.host.models import cache_apart
from copaw_context.core.tokens.usage import ReportedUsage

__all__ = ["reported_usage"]


def reported_usage(usage: Any, model: Any) -> ReportedUsage:
    """``usage``'s input figures; Anthropic's models count cache reads and writes apart."""
    return ReportedUsage(
        input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
        cache_read_tokens=int(getattr(usage, "cache_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
        cache_apart=cache_apart(model),
    )
