"""What an adapter decides about its host's chat model the same way whatever the host: the
window a compactor over it serves, and whether its provider counts cached tokens apart."""

from __future__ import annotations

from typing import Any

from copaw_context.core.config.running import DEFAULT_WINDOW_TOKENS

__all__ = ["cache_apart", "compactor_context_size"]


def compactor_context_size(size: object, window: int | None) -> int:
    """The window of a compactor over a model that states ``size``: that size, capped by the
    agent's ``window`` when it is the agent's own model (``window`` given); a model that
    states none serves that window (or QwenPaw's 131072, ``DEFAULT_WINDOW_TOKENS``)."""
    stated = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
    if stated is None:
        return window or DEFAULT_WINDOW_TOKENS
    return stated if window is None else min(stated, window)


def cache_apart(model: Any) -> bool:
    """Whether ``model``'s provider counts cached input tokens apart from ``input_tokens``
    (Anthropic's models, by class name), as ``ReportedUsage.cache_apart`` says."""
    return any(cls.__name__.startswith("Anthropic") for cls in type(model).__mro__)
