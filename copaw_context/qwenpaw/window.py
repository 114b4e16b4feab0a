"""The window inside QwenPaw: the size QwenPaw itself works with, unless agent.json says
otherwise.

QwenPaw writes ``running.max_input_length: 131072`` (its own default) into every agent.json,
yet sizes its context from the active model's ``max_input_length`` in the provider's model
list (``config.get_model_max_input_length``). So 131072 in the file means "QwenPaw's
default", and the window is QwenPaw's model size; any other value is the user's and wins.
"""

from __future__ import annotations

from qwenpaw.config.config import get_model_max_input_length, load_agent_config

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.host.protocol import Window

__all__ = ["MODEL_SOURCE", "QWENPAW_DEFAULT_MAX_INPUT_LENGTH", "qwenpaw_window"]

QWENPAW_DEFAULT_MAX_INPUT_LENGTH = 131072
"""What QwenPaw 1.1 writes as ``running.max_input_length`` into every agent.json."""

MODEL_SOURCE = "QwenPaw's active model (its provider's max_input_length)"
"""Where the window comes from when it is QwenPaw's model size (``/context`` shows it)."""


def qwenpaw_window(config: RunningConfig, agent_id: str) -> Window:
    """The window for QwenPaw agent ``agent_id`` configured by ``config``."""
    if config.max_input_length_is_set and config.max_input_length != (
        QWENPAW_DEFAULT_MAX_INPUT_LENGTH
    ):
        return Window(config.max_input_length, "running.max_input_length")
    size = get_model_max_input_length(load_agent_config(agent_id))
    return Window(size, MODEL_SOURCE)
