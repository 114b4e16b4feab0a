"""agent.json as copaw-context reads it inside QwenPaw 1.1: the same rules as inside QwenPaw
2.2 (:mod:`copaw_context.core.config.inside_qwenpaw`), under the names the 1.1 host uses."""

from __future__ import annotations

from copaw_context.core.config.inside_qwenpaw import (
    QWENPAW_OFFLOAD_DIR,
    qwenpaw_defaults,
    without_own_memory,
)
from copaw_context.core.config.inside_qwenpaw import load_inside_qwenpaw as load_qwenpaw_config
from copaw_context.core.config.inside_qwenpaw import (
    load_inside_qwenpaw_or_defaults as load_qwenpaw_config_or_defaults,
)

__all__ = [
    "QWENPAW_OFFLOAD_DIR",
    "load_qwenpaw_config",
    "load_qwenpaw_config_or_defaults",
    "qwenpaw_defaults",
    "without_own_memory",
]
