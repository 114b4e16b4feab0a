"""The reliability suite's AgentScope 1.x driver: ``ReActAgent`` with ``MemoryCompactionHook``.

A 1.x model is called with messages its formatter already made (OpenAI chat-completions
dicts: the 1.x ``ScriptedChatModel`` carries an ``OpenAIChatFormatter``), so a recorded call
holds only that form. To format the same input for Anthropic and DashScope with 1.x's own
formatters, every model of this driver gets a formatter that remembers which ``Msg`` list
it formatted into which output; :meth:`As1Driver.provider_inputs` looks the call's input up
there. The agent formats through the hook's ``MemoryPromptFormatter`` (MEMORY.md added), so
the remembered list is exactly what the model's input was made from.

The agent's model streams (1.x's provider models stream by default; 1.x chunks accumulate),
so the adapter's observed-stream path and ReActAgent's streaming path are exercised; a
separate compactor model (``hook(compactor=...)``) answers whole, so the summariser is
exercised both ways (the agent's own model summarises when no compactor is given).

Status messages (``show_status``) reach a 1.x user as printed messages: :meth:`As1Driver.reply`
records what the agent prints during the reply (a ``pre_print`` hook for that reply only).
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.formatter import (
    AnthropicChatFormatter,
    DashScopeChatFormatter,
    OpenAIChatFormatter,
)
from agentscope.message import Msg
from agentscope.tool import Toolkit, ToolResponse

from copaw_context.agentscope1 import MemoryCompactionHook, part_keys, pin_message
from copaw_context.agentscope1.messages import METADATA_KEY
from copaw_context.agentscope1.session import HIDDEN_MARKS
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import TokenReport
from copaw_context.core.events import EventCallback
from copaw_context.core.summary import render_summary_message
from copaw_context.testing import ModelCall, ScriptedChatModel
from tests.reliability.drivers import SEED_SUMMARY_SOURCES, Reply, ToolCall, archived_records

__all__ = ["As1Driver", "tool_function"]

_ids = itertools.count(1)
_REMEMBERED = 32
"""Inputs remembered per driver: a call is looked up right after its input was formatted
(agents running at once in one process share the driver)."""


def tool_function(function: Callable[..., str]) -> Callable[..., ToolResponse]:
    """A plain function returning text as a 1.x tool function."""

    @functools.wraps(function)
    def tool(*args: Any, **kwargs: Any) -> ToolResponse:
        return ToolResponse(content=[{"type": "text", "text": function(*args, **kwargs)}])

    return tool


def _is_status(msg: Msg) -> bool:
    entry = (msg.metadata or {}).get(METADATA_KEY)
    return isinstance(entry, dict) and entry.get("status") is True


def _key(formatted: list[dict[str, Any]]) -> str:
    return json.dumps(formatted, ensure_ascii=False, sort_keys=True, default=str)


class _Inputs:
    """The ``Msg`` lists of the latest formatted inputs, by their formatted form."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inputs: OrderedDict[str, list[Msg]] = OrderedDict()

    def remember(self, formatted: list[dict[str, Any]], msgs: list[Msg]) -> None:
        copies = [Msg.from_dict(m.to_dict()) for m in msgs]  # the agent edits its memory
        with self._lock:
            self._inputs[_key(formatted)] = copies
            while len(self._inputs) > _REMEMBERED:
                self._inputs.popitem(last=False)

    def msgs(self, formatted: list[dict[str, Any]]) -> list[Msg]:
        with self._lock:
            found = self._inputs.get(_key(formatted))
        assert found is not None, "a model input that no formatter of this driver made"
        return [Msg.from_dict(m.to_dict()) for m in found]


class _RememberingFormatter(OpenAIChatFormatter):
    """The OpenAI formatter, remembering the ``Msg`` list behind each output it made."""

    def __init__(self, memory: _Inputs) -> None:
        super().__init__()
        self._memory = memory

    async def format(self, msgs: list[Msg], **kwargs: Any) -> list[dict[str, Any]]:
        formatted = await super().format(msgs, **kwargs)
        self._memory.remember(formatted, msgs)
        return formatted


def _anthropic_turns(formatted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the Anthropic API evaluates: consecutive turns of one role combined into one
    (its documented behaviour). 1.x's formatter gives each tool result its own user message;
    the results of parallel calls reach the API as one user turn."""
    turns: list[dict[str, Any]] = []
    for message in formatted:
        previous = turns[-1] if turns else None
        if (
            previous is not None
            and previous["role"] in ("user", "assistant")
            and previous["role"] == message["role"]
            and isinstance(previous["content"], list)
            and isinstance(message["content"], list)
        ):
            previous["content"] = [*previous["content"], *message["content"]]
        else:
            turns.append(dict(message))
    return turns


class As1Driver:
    name = "agentscope1"

    def __init__(self) -> None:
        self._inputs = _Inputs()

    def hook(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        compactor: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> MemoryCompactionHook:
        if compactor is not None:
            compactor.stream = False  # the summariser's whole-reply path (see the docstring)
        return MemoryCompactionHook(
            config,
            workspace,
            compactor_model=compactor,
            compactor_formatter=getattr(compactor, "formatter", None),
            on_event=on_event,
        )

    def model(self, steps: Sequence[Any], *, context_size: int) -> ScriptedChatModel:
        model = ScriptedChatModel(steps, context_size=context_size, stream=True)
        model.formatter = _RememberingFormatter(self._inputs)
        return model

    async def agent(
        self,
        hook: MemoryCompactionHook,
        model: ScriptedChatModel,
        tools: Sequence[Callable[..., str]] = (),
        *,
        system_prompt: str = "You are a careful assistant.",
        name: str = "assistant",
    ) -> ReActAgent:
        toolkit = Toolkit()
        for function in tools:
            toolkit.register_tool_function(tool_function(function))
        agent = ReActAgent(
            name=name,
            sys_prompt=system_prompt,
            model=model,
            formatter=model.formatter,
            toolkit=toolkit,
            max_iters=50,
        )
        agent.set_console_output_enabled(False)
        await hook.attach(agent)
        return agent

    async def ask(
        self, agent: ReActAgent, text: str | Sequence[str], *, pinned: bool = False
    ) -> str:
        blocks = [{"type": "text", "text": t} for t in text] if not isinstance(text, str) else []
        request = Msg("user", text if isinstance(text, str) else blocks, "user")
        if pinned:
            pin_message(request)
        reply = await agent(request)
        return reply.get_text_content() or ""

    async def reply(self, agent: ReActAgent, text: str) -> Reply:
        printed: list[Msg] = []

        def record(agent: Any, kwargs: dict[str, Any]) -> None:
            if kwargs.get("last", True):
                printed.append(kwargs["msg"])

        agent.register_instance_hook("pre_print", "driver_reply", record)
        try:
            reply = await agent(Msg("user", text, "user"))
        finally:
            agent.remove_instance_hook("pre_print", "driver_reply")
        status = [str(m.content) for m in printed if _is_status(m)]
        return Reply(reply.get_text_content() or "", status)

    async def seed(self, agent: ReActAgent, turns: int, result_bytes: int = 1500) -> None:
        history: list[Msg] = []
        for t in range(turns):
            call_id = f"seed_call_{t}"
            output = "build ok line\n" * (result_bytes // 14)
            history += [
                Msg("user", f"Request {t}: check module m{t}. Never touch prod.yaml.", "user"),
                Msg(
                    "assistant",
                    [
                        {"type": "text", "text": f"Checking m{t}."},
                        {
                            "type": "tool_use",
                            "id": call_id,
                            "name": "run_build",
                            "input": {"target": f"m{t}"},
                        },
                    ],
                    "assistant",
                ),
                Msg(
                    "system",
                    [
                        {
                            "type": "tool_result",
                            "id": call_id,
                            "name": "run_build",
                            "output": [{"type": "text", "text": output}],
                        }
                    ],
                    "system",
                ),
                Msg("assistant", f"Module m{t} builds.", "assistant"),
            ]
        await agent.memory.add(history)

    async def set_summary(self, agent: ReActAgent, text: str) -> None:
        message = render_summary_message(text, SEED_SUMMARY_SOURCES)
        await agent.memory.update_compressed_summary(message)

    async def summary(self, agent: ReActAgent) -> str:
        with_summary = await agent.memory.get_memory(prepend_summary=True)
        without = await agent.memory.get_memory(prepend_summary=False)
        return with_summary[0].get_text_content() or "" if len(with_summary) > len(without) else ""

    def text_step(self, text: str, thinking: str = "") -> list[Any]:
        head: list[Any] = [{"type": "thinking", "thinking": thinking}] if thinking else []
        return [*head, {"type": "text", "text": text}]

    def tool_step(self, calls: Sequence[ToolCall], thinking: str = "") -> list[Any]:
        head: list[Any] = [{"type": "thinking", "thinking": thinking}] if thinking else []
        return [
            *head,
            *(
                {
                    "type": "tool_use",
                    "id": call_id or f"as1_call_{next(_ids)}",
                    "name": name,
                    "input": dict(arguments),
                    "raw_input": json.dumps(arguments, ensure_ascii=False),
                }
                for name, arguments, call_id in calls
            ),
        ]

    def _context(self, agent: ReActAgent) -> list[Msg]:
        return [m for m, marks in agent.memory.content if not HIDDEN_MARKS.intersection(marks)]

    def context_keys(self, agent: ReActAgent) -> list[str]:
        return [key for m in self._context(agent) for key in part_keys(m)]

    def context_roles(self, agent: ReActAgent) -> list[str]:
        return [m.role for m in self._context(agent)]

    def archived_keys(self, workspace: Path) -> list[str]:
        records = archived_records(workspace)
        return [key for r in records for key in part_keys(Msg.from_dict(r["message"]))]

    async def provider_inputs(self, call: ModelCall) -> dict[str, list[dict[str, Any]]]:
        msgs = self._inputs.msgs(call.formatted)
        return {
            "openai": list(call.formatted),
            "anthropic": _anthropic_turns(await AnthropicChatFormatter().format(msgs)),
            "dashscope": await DashScopeChatFormatter().format(msgs),
        }

    def tool_schemas(self, call: ModelCall) -> str:
        return json.dumps(call.tools, ensure_ascii=False) if call.tools else ""

    async def engine_state(
        self, hook: MemoryCompactionHook, agent: ReActAgent
    ) -> MutableMapping[str, Any]:
        return (await hook.session(agent)).state

    async def report(self, hook: MemoryCompactionHook, agent: ReActAgent) -> TokenReport:
        return await hook.report(agent)

    def save_state(self, agent: ReActAgent) -> str:
        return json.dumps(agent.state_dict(), ensure_ascii=False)

    async def load_state(self, agent: ReActAgent, saved: str) -> None:
        agent.load_state_dict(json.loads(saved))
