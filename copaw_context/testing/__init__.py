"""A scripted chat model for offline tests and demos, for the installed AgentScope major.

`ScriptedChatModel` replays a list of steps. Each model call consumes one step: a list of
content blocks (the reply), a callable that receives the `ModelCall` and returns blocks (sync
or async), or an exception instance that is raised. Every call is recorded, so tests can
assert on what the model actually received; `ModelCall.formatted` is the OpenAI
chat-completions message list a real provider would get, which `openai_pairing_problems`
checks. `text_step` and `tool_calls_step` build the steps.

The same names serve both majors: with AgentScope 2.x the model is a 2.x ``ChatModelBase``
whose blocks are 2.x block objects (``copaw_context.testing._as2``); with 1.x it is a 1.x
``ChatModelBase`` called with formatted messages, whose blocks are 1.x TypedDicts and which
carries an ``OpenAIChatFormatter`` as ``model.formatter`` (``copaw_context.testing._as1``).
The step logic (``_script``) and the pairing check are shared.

The other roles have one host-neutral double each: `ScriptedTextModel` is the compactor's and
memory's text model (``complete(system_prompt, request)``: answers as texts, exceptions or
callables, a window it enforces, a gate, recorded `TextCall` s), `ManualClock` is the clock
for anything that takes ``clock=`` (it moves only when told, its ``sleep`` never waits), and
`CountingStore` is the workspace store: the file store, counting each operation called on it
(``hook.engine.context.workspace_store = CountingStore(workspace)``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from copaw_context._hosts import installed_agentscope_major
from copaw_context.testing._script import ScriptExhaustedError, UnconsumedStepsError
from copaw_context.testing.clock import ManualClock
from copaw_context.testing.counting_store import CountingStore
from copaw_context.testing.memory_model import (
    Answer,
    ContextWindowExceededError,
    ScriptedTextModel,
    TextCall,
)
from copaw_context.testing.pairing import openai_pairing_problems

if TYPE_CHECKING:
    from copaw_context.testing._as2 import (
        ModelBlock,
        ModelCall,
        ScriptedChatModel,
        Step,
        StepResult,
        UsageFunction,
        scaled_usage,
        text_bytes,
        text_step,
        tool_calls_step,
    )
else:
    _IMPLEMENTATION = importlib.import_module(
        "copaw_context.testing._as1"
        if installed_agentscope_major() < 2
        else "copaw_context.testing._as2"
    )
    ModelBlock = _IMPLEMENTATION.ModelBlock
    ModelCall = _IMPLEMENTATION.ModelCall
    ScriptedChatModel = _IMPLEMENTATION.ScriptedChatModel
    Step = _IMPLEMENTATION.Step
    StepResult = _IMPLEMENTATION.StepResult
    UsageFunction = _IMPLEMENTATION.UsageFunction
    scaled_usage = _IMPLEMENTATION.scaled_usage
    text_bytes = _IMPLEMENTATION.text_bytes
    text_step = _IMPLEMENTATION.text_step
    tool_calls_step = _IMPLEMENTATION.tool_calls_step

__all__ = [
    "Answer",
    "ContextWindowExceededError",
    "CountingStore",
    "ManualClock",
    "ModelBlock",
    "ModelCall",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "ScriptedTextModel",
    "Step",
    "StepResult",
    "TextCall",
    "UnconsumedStepsError",
    "UsageFunction",
    "openai_pairing_problems",
    "scaled_usage",
    "text_bytes",
    "text_step",
    "tool_calls_step",
]
