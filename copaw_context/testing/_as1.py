"""The scripted chat model for AgentScope 1.x (``agentscope.model.ChatModelBase`` of 1.0).

A 1.x model is called with messages its formatter already made (OpenAI chat-completions
dicts here: the model carries an ``OpenAIChatFormatter`` as ``model.formatter`` for the
agent), so ``ModelCall.messages`` and ``ModelCall.formatted`` are both that list. Blocks are
1.x TypedDicts; a streamed reply is a sequence of accumulated chunks, as 1.x models send.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from agentscope.formatter import OpenAIChatFormatter
from agentscope.model import ChatModelBase, ChatResponse

# 1.x exports ChatUsage from no public module; its own models import it from here. Pinned by
# tests/agentscope1/test_pins.py.
from agentscope.model._model_usage import ChatUsage

from copaw_context.testing._script import Script, ScriptedSteps, split_text

__all__ = [
    "ModelBlock",
    "ModelCall",
    "ScriptedChatModel",
    "Step",
    "StepResult",
    "UsageFunction",
    "scaled_usage",
    "text_bytes",
    "text_step",
    "tool_calls_step",
]

ModelBlock: TypeAlias = dict[str, Any]
"""A block a 1.x chat model may return: a ``text``, ``tool_use`` or ``thinking`` dict."""

StepResult: TypeAlias = Sequence[ModelBlock]

_REQUIRED = {"text": ("text",), "thinking": ("thinking",), "tool_use": ("id", "name", "input")}


@dataclass
class ModelCall:
    """One recorded model call: the formatted messages (OpenAI chat-completions dicts)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_choice: str | None
    formatted: list[dict[str, Any]]

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered in this call."""
        return [str(tool.get("function", {}).get("name", "")) for tool in self.tools]


Step: TypeAlias = (
    StepResult | Callable[[ModelCall], StepResult | Awaitable[StepResult]] | BaseException
)
"""One scripted reply: blocks, a callable producing blocks, or an exception to raise."""

UsageFunction: TypeAlias = Callable[[ModelCall], "tuple[int, int] | ChatUsage"]
"""What a scripted call reports as usage: (input, output) tokens, or a whole ``ChatUsage``."""

_call_ids = itertools.count(1)


def text_step(text: str) -> list[ModelBlock]:
    """A step answering with plain text."""
    return [{"type": "text", "text": text}]


def tool_calls_step(
    *calls: tuple[str, dict[str, Any]], text: str | None = None
) -> list[ModelBlock]:
    """A step calling tools; `calls` are (name, arguments) pairs.

    Ids are generated unique per process ("call_<n>"); `text`, if given,
    precedes the calls like a model's preamble.
    """
    if not calls:
        raise ValueError("tool_calls_step needs at least one (name, arguments) pair")
    blocks: list[ModelBlock] = [{"type": "text", "text": text}] if text else []
    for name, arguments in calls:
        if not isinstance(arguments, dict):
            raise TypeError(
                f"tool_calls_step: arguments of {name!r} must be a dict, got "
                f"{type(arguments).__name__}; pass e.g. ('{name}', {{'x': 1}})"
            )
        blocks.append(
            {
                "type": "tool_use",
                "id": f"call_{next(_call_ids)}",
                "name": name,
                "input": dict(arguments),
                "raw_input": json.dumps(arguments, ensure_ascii=False),
            }
        )
    return blocks


def _check_blocks(blocks: object, where: str) -> list[ModelBlock]:
    if not isinstance(blocks, list | tuple):
        raise TypeError(
            f"{where}: expected a list of text/tool_use/thinking block dicts, "
            f"got {type(blocks).__name__}"
        )
    checked: list[ModelBlock] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in _REQUIRED:
            raise TypeError(
                f"{where}: {block!r} is not a model output block; use a dict of type "
                '"text", "tool_use" or "thinking" (text_step, tool_calls_step)'
            )
        missing = [key for key in _REQUIRED[kind] if key not in block]
        if missing:
            raise TypeError(f"{where}: the {kind} block {block!r} lacks {', '.join(missing)}")
        checked.append(copy.deepcopy(block))  # the agent keeps (and may change) what it gets
    return checked


def _preview(message: dict[str, Any], limit: int = 160) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(b.get("text", f"<{b.get('type')}>")) for b in content)
    calls = [f"<tool_call {c['function']['name']}>" for c in message.get("tool_calls") or ()]
    text = " ".join([str(content or ""), *calls]).strip().replace("\n", " ")
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{message.get('role')}: {text}"


def _default_usage(call: ModelCall) -> tuple[int, int]:
    payload = json.dumps([call.formatted, call.tools], ensure_ascii=False, default=str)
    return len(payload.encode("utf-8")) // 4, 10


def text_bytes(call: ModelCall) -> int:
    """UTF-8 bytes of the text the call carries (messages' text, tool calls, schemas)."""
    total = len(json.dumps(call.tools, ensure_ascii=False).encode("utf-8")) if call.tools else 0
    for message in call.formatted:
        content = message.get("content")
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            text = part.get("text", "") if isinstance(part, dict) else part
            if isinstance(text, str):
                total += len(text.encode("utf-8", "replace"))
        for tool_call in message.get("tool_calls") or ():
            arguments = tool_call.get("function", {}).get("arguments", "")
            total += len(str(arguments).encode("utf-8", "replace"))
    return total


def scaled_usage(tokens_per_4_bytes: float, output_tokens: int = 10) -> UsageFunction:
    """A usage function reporting ``tokens_per_4_bytes`` x (text bytes / 4) input tokens."""

    def usage(call: ModelCall) -> tuple[int, int]:
        return int(text_bytes(call) / 4 * tokens_per_4_bytes), output_tokens

    return usage


class ScriptedChatModel(ChatModelBase, ScriptedSteps):
    """A 1.x `ChatModelBase` that replays scripted steps instead of calling an API."""

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        stream: bool = False,
        context_size: int = 32768,
        model_name: str = "scripted",
        usage: UsageFunction | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(model_name, stream)
        self.context_size = context_size
        self.formatter = OpenAIChatFormatter()
        self.name = name or model_name
        self.calls: list[ModelCall] = []
        self._usage = usage or _default_usage
        self._script: Script[ModelBlock, ModelCall] = Script(self.name, _check_blocks)
        self.add_steps(*steps)

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise TypeError(
                "a 1.x chat model is called with formatted messages (a list of dicts); "
                f"got {type(messages).__name__}"
            )
        formatted = copy.deepcopy(messages)
        call = ModelCall(formatted, copy.deepcopy(tools or []), tool_choice, formatted)
        self.calls.append(call)
        recent = "\n  ".join(_preview(m) for m in messages[-3:])
        blocks = await self._script.run_next(call, call.tool_names, recent)
        reported = self._usage(call)
        if isinstance(reported, ChatUsage):
            usage = reported
        else:
            usage = ChatUsage(input_tokens=reported[0], output_tokens=reported[1], time=0.0)
        if not self.stream:
            return _response(blocks, usage=usage)
        return _stream_accumulated(blocks, usage)


async def _stream_accumulated(
    blocks: list[ModelBlock], usage: ChatUsage
) -> AsyncGenerator[ChatResponse, None]:
    """Yield what a 1.x model streams: each chunk holds everything received so far."""
    response_id = f"scripted-{next(_call_ids)}"
    done: list[ModelBlock] = []
    for block in blocks:
        if block["type"] in ("text", "thinking"):
            key = block["type"]
            so_far = ""
            for piece in split_text(str(block[key])):
                so_far += piece
                yield _response([*done, {**block, key: so_far}], id=response_id)
        done.append(block)
        yield _response(list(done), id=response_id)
    yield _response(list(done), id=response_id, usage=usage)


def _response(blocks: list[ModelBlock], **fields: Any) -> ChatResponse:
    # The blocks are checked TypedDict-shaped dicts (see _check_blocks).
    return ChatResponse(content=cast(Any, blocks), **fields)
