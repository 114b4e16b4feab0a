"""The window inside QwenPaw 2.2: the size QwenPaw itself works with, unless agent.json says
otherwise.

QwenPaw writes ``running.max_input_length: 131072`` (its own default) into every agent.json,
yet sizes the context from the active model: its model factory sets the model's
``context_size`` from the provider (the model's ``max_input_length`` on QwenPaw's Models
page, else QwenPaw's table of known models), and AgentScope's compression trigger follows
that. So 131072 in the file means "QwenPaw's default", and the window is the model's
``context_size``; any other value is the user's and wins. The same rule as the QwenPaw 1.1
host's.
"""

from __future__ import annotations

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.host.protocol import Window

__all__ = ["MODEL_SOURCE", "QWENPAW_DEFAULT_MAX_INPUT_LENGTH", "qwenpaw_window"]

QWENPAW_DEFAULT_MAX_INPUT_LENGTH = 131072
"""What QwenPaw writes as ``running.max_input_length`` into every agent.json."""

MODEL_SOURCE = "QwenPaw's active model (its provider's max_input_length)"
"""Where the window comes from when it is QwenPaw's model size (``/context`` shows it)."""


def qwenpaw_window(config: RunningConfig, context_size: object) -> Window:
    """The window for a QwenPaw 2.2 agent whose model states ``context_size``."""
    if config.max_input_length_is_set and config.max_input_length != (
        QWENPAW_DEFAULT_MAX_INPUT_LENGTH
    ):
        return Window(config.max_input_length, "running.max_input_length")
    if isinstance(context_size, int) and not isinstance(context_size, bool) and context_size > 0:
        return Window(context_size, MODEL_SOURCE)
    return Window(QWENPAW_DEFAULT_MAX_INPUT_LENGTH, "QwenPaw's default max_input_length")
