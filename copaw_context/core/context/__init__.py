"""What the pipeline's steps share: the :class:`StepContext` and the :class:`Step` protocol.

It imports no step and no engine, so every step imports it without a circle.
"""

from copaw_context.core.context.step import Step, Turn
from copaw_context.core.context.step_context import (
    FLOOR_BYTES_PER_TOKEN,
    CompactionListener,
    EngineScratch,
    StepContext,
)

__all__ = [
    "FLOOR_BYTES_PER_TOKEN",
    "CompactionListener",
    "EngineScratch",
    "Step",
    "StepContext",
    "Turn",
]
