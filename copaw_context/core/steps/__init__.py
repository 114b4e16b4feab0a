"""The pipeline's steps, each over the engine's ``StepContext`` (``core/context/step_context.py``).

In the order ``ContextEngine.pipeline`` runs them before a reasoning step: ``memory``
(:mod:`.memory`), ``flush`` (:mod:`.archive`), ``cleanup`` (:mod:`.offload_cleanup`), ``prune``
(:mod:`.prune`, also stage 1 on each fresh result), ``compact`` (:mod:`.compact`, with
its :class:`~.cut.Cutter` (:mod:`.cut`), :mod:`.fresh_share`, :mod:`.data_fit`,
:mod:`.summary_room`, :mod:`.compactor_input` and :mod:`.compact_events`), ``manifest``
(:mod:`.offload_cleanup`).
Around the model call: :mod:`.model_call` (with :mod:`.measure` and :mod:`.recover`).
"""

from copaw_context.core.steps.archive import FlushPendingArchive
from copaw_context.core.steps.compact import Compact
from copaw_context.core.steps.measure import InputMeasure, InputMeter
from copaw_context.core.steps.memory import AttachMemory
from copaw_context.core.steps.model_call import ModelCaller
from copaw_context.core.steps.offload_cleanup import (
    OffloadCleanup,
    OffloadManifest,
    OffloadReferences,
)
from copaw_context.core.steps.prune import Pruner
from copaw_context.core.steps.recover import OverflowRecovery

__all__ = [
    "AttachMemory",
    "Compact",
    "FlushPendingArchive",
    "InputMeasure",
    "InputMeter",
    "ModelCaller",
    "OffloadCleanup",
    "OffloadManifest",
    "OffloadReferences",
    "OverflowRecovery",
    "Pruner",
]
