"""The prompt size a provider reported, from AgentScope's ``ChatUsage``."""

from __future__ import annotations

from typing import Any

__all__ = ["prompt_tokens"]


def _is_anthropic(model: Any) -> bool:
    return any(cls.__name__.startswith("Anthropic") for cls in type(model).__mro__)


def prompt_tokens(usage: Any, model: Any) -> int:
    """All input tokens of the call, cached ones included.

    OpenAI, DashScope, Gemini and most compatible servers report cached tokens as a part of
    ``input_tokens``; Anthropic reports cache reads and writes apart from it. A cached share
    larger than ``input_tokens`` can only be reported apart, whoever the provider is.
    """
    reported = int(getattr(usage, "input_tokens", 0) or 0)
    cached = int(getattr(usage, "cache_input_tokens", 0) or 0)
    created = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    if _is_anthropic(model) or cached + created > reported:
        return reported + cached + created
    return reported
