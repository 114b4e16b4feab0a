"""What an adapter decides about its host's chat model the same way whatever the host: the
window a compactor over it serves, whether its provider counts cached tokens apart, its
identity for what its overflow errors teach, its reported usage in neutral fields, and a
compactor given as a model and the formatter for it (AgentScope 1.x's)."""

from __future__ import annotations

from typing import Any

from copaw_context.core.config.running import DEFAULT_WINDOW_TOKENS
from copaw_context.core.tokens.usage import ReportedUsage

__all__ = [
    "cache_apart",
    "check_formatted_compactor",
    "compactor_context_size",
    "model_key",
    "reported_usage",
]


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


def model_key(model: Any) -> str:
    """A model's identity for what its overflow errors teach: class, name and window (two
    models alike in all three fit the same inputs), bounded for the saved state."""
    name = getattr(model, "model", "")
    size = getattr(model, "context_size", "")
    return f"{type(model).__qualname__}:{name}:{size}"[:200]


def reported_usage(
    usage: Any, model: Any, cache_fields: tuple[str, str] | None = None
) -> ReportedUsage | None:
    """A host's usage object (``usage.input_tokens``) in the engine's neutral fields, None
    when there is none; ``model`` says whether the cache counts apart (:func:`cache_apart`).

    ``cache_fields`` names the attributes of the cache reads and writes (AgentScope 2.x's
    ``ChatUsage``: a missing figure is 0); without them the host dropped those figures
    (AgentScope 1.x: they are None, and an ``input_tokens`` that is no int is None).
    """
    if usage is None:
        return None
    if cache_fields is None:
        value = getattr(usage, "input_tokens", None)
        return ReportedUsage(
            value if isinstance(value, int) else None, None, None, cache_apart(model)
        )
    read, write = cache_fields
    return ReportedUsage(
        input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
        cache_read_tokens=int(getattr(usage, read, 0) or 0),
        cache_write_tokens=int(getattr(usage, write, 0) or 0),
        cache_apart=cache_apart(model),
    )


def check_formatted_compactor(compactor_model: Any, compactor_formatter: Any) -> None:
    """A compactor of a host whose models take formatted messages (AgentScope 1.x): a chat
    model (callable) and, optionally, a formatter (with ``format()``) for it, never a
    formatter alone (``ValueError``; ``TypeError`` for the wrong kind of object)."""
    if compactor_formatter is not None and compactor_model is None:
        raise ValueError(
            "MemoryCompactionHook: compactor_formatter without compactor_model; pass the "
            "model it formats for as compactor_model (or neither, to summarise with the "
            "agent's model and formatter)"
        )
    if compactor_model is not None and not callable(compactor_model):
        raise TypeError(
            f"MemoryCompactionHook: compactor_model must be an AgentScope 1.x chat model "
            f"(called with formatted messages); got {type(compactor_model).__name__}"
        )
    if compactor_formatter is not None and not callable(
        getattr(compactor_formatter, "format", None)
    ):
        raise TypeError(
            f"MemoryCompactionHook: compactor_formatter must be an AgentScope 1.x formatter "
            f"(with format()); got {type(compactor_formatter).__name__}"
        )
