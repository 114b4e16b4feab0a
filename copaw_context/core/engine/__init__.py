"""The engine: the pipeline of ``core/steps/`` composed over one ``StepContext``."""

from copaw_context.core.context.step import Step, Turn
from copaw_context.core.context.step_context import CompactionListener, StepContext
from copaw_context.core.engine.engine import ContextEngine
from copaw_context.core.steps.measure import InputMeasure

__all__ = ["CompactionListener", "ContextEngine", "InputMeasure", "Step", "StepContext", "Turn"]
