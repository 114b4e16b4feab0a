"""The scripted chat model for AgentScope 2.x (``agentscope.model.ChatModelBase``).

Every call is recorded with deep-copied messages (2.x ``Msg`` objects) and what
``OpenAIChatFormatter`` makes of them, so tests can assert on what the model received.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import (
    DataBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope.tool import ToolChoice

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

ModelBlock: TypeAlias = TextBlock | ToolCallBlock | ThinkingBlock | DataBlock
"""A block a chat model may return."""

StepResult: TypeAlias = Sequence[ModelBlock]


@dataclass
class ModelCall:
    """One recorded model call.

    `formatted` is what `OpenAIChatFormatter` makes of `messages`, i.e. the
    OpenAI chat-completions message list a real provider would receive.
    """

    messages: list[Msg]
    tools: list[dict[str, Any]]
    tool_choice: ToolChoice | None
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

_ALLOWED_BLOCKS = (TextBlock, ToolCallBlock, ThinkingBlock, DataBlock)
_call_ids = itertools.count(1)


def text_step(text: str) -> list[ModelBlock]:
    """A step answering with plain text."""
    return [TextBlock(text=text)]


def tool_calls_step(
    *calls: tuple[str, dict[str, Any]], text: str | None = None
) -> list[ModelBlock]:
    """A step calling tools; `calls` are (name, arguments) pairs.

    Ids are generated unique per process ("call_<n>"); `text`, if given,
    precedes the calls like a model's preamble.
    """
    if not calls:
        raise ValueError("tool_calls_step needs at least one (name, arguments) pair")
    blocks: list[ModelBlock] = [TextBlock(text=text)] if text else []
    for name, arguments in calls:
        if not isinstance(arguments, dict):
            raise TypeError(
                f"tool_calls_step: arguments of {name!r} must be a dict, got "
                f"{type(arguments).__name__}; pass e.g. ('{name}', {{'x': 1}})"
            )
        blocks.append(
            ToolCallBlock(
                id=f"call_{next(_call_ids)}",
                name=name,
                input=json.dumps(arguments, ensure_ascii=False),
            )
        )
    return blocks


def _check_blocks(blocks: object, where: str) -> list[ModelBlock]:
    if not isinstance(blocks, list | tuple):
        raise TypeError(
            f"{where}: expected a list of TextBlock/ToolCallBlock/ThinkingBlock/DataBlock, "
            f"got {type(blocks).__name__}"
        )
    checked: list[ModelBlock] = []
    for block in blocks:
        if not isinstance(block, _ALLOWED_BLOCKS):
            raise TypeError(
                f"{where}: {type(block).__name__} is not a model output block; "
                "use TextBlock, ToolCallBlock, ThinkingBlock or DataBlock"
            )
        # Copy: the agent mutates blocks (e.g. ToolCallBlock.state) after saving them.
        checked.append(block.model_copy(deep=True))
    return checked


def _preview(msg: Msg, limit: int = 160) -> str:
    parts: list[str] = []
    for block in msg.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock | ToolResultBlock):
            parts.append(f"<{block.type} {block.name} id={block.id}>")
        else:
            parts.append(f"<{block.type}>")
    text = " ".join(parts).replace("\n", " ")
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{msg.role}: {text}"


def _default_usage(call: ModelCall) -> tuple[int, int]:
    payload = json.dumps([call.formatted, call.tools], ensure_ascii=False, default=str)
    return len(payload.encode("utf-8")) // 4, 10


def text_bytes(call: ModelCall) -> int:
    """UTF-8 bytes of the text the call carries (messages' text parts and tool schemas)."""
    total = len(json.dumps(call.tools, ensure_ascii=False).encode("utf-8")) if call.tools else 0
    for msg in call.messages:
        for block in msg.content:
            for name in ("text", "thinking", "input", "hint"):
                value = getattr(block, name, None)
                if isinstance(value, str):
                    total += len(value.encode("utf-8", "replace"))
            if isinstance(block, ToolResultBlock):
                outputs = [block.output] if isinstance(block.output, str) else block.output
                for part in outputs:
                    text = part if isinstance(part, str) else getattr(part, "text", "")
                    total += len(text.encode("utf-8", "replace"))
    return total


def scaled_usage(tokens_per_4_bytes: float, output_tokens: int = 10) -> UsageFunction:
    """A usage function reporting ``tokens_per_4_bytes`` x (text bytes / 4) input tokens.

    E.g. ``scaled_usage(1.5)`` plays a provider whose tokenizer counts 1.5x the bytes/4
    estimate (CJK-heavy input), ``scaled_usage(0)`` one that reports no usage figure.
    """

    def usage(call: ModelCall) -> tuple[int, int]:
        return int(text_bytes(call) / 4 * tokens_per_4_bytes), output_tokens

    return usage


class ScriptedChatModel(ChatModelBase, ScriptedSteps):
    """A `ChatModelBase` that replays scripted steps instead of calling an API."""

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
        super().__init__(
            credential=CredentialBase(),
            model=model_name,
            parameters=ChatModelBase.Parameters(),
            stream=stream,
            max_retries=0,
            context_size=context_size,
        )
        # Not part of ChatModelBase, but the Agent reads model.formatter.
        self.formatter = OpenAIChatFormatter()
        self.name = name or model_name
        self.calls: list[ModelCall] = []
        self._usage = usage or _default_usage
        self._script: Script[ModelBlock, ModelCall] = Script(self.name, _check_blocks)
        self.add_steps(*steps)

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        call = ModelCall(
            messages=[msg.model_copy(deep=True) for msg in messages],
            tools=copy.deepcopy(tools or []),
            tool_choice=tool_choice.model_copy(deep=True) if tool_choice else None,
            formatted=await self.formatter.format(messages),
        )
        self.calls.append(call)
        recent = "\n  ".join(_preview(msg) for msg in messages[-3:])
        blocks = await self._script.run_next(call, call.tool_names, recent)
        reported = self._usage(call)
        if isinstance(reported, ChatUsage):
            usage = reported
        else:
            input_tokens, output_tokens = reported
            usage = ChatUsage(input_tokens=input_tokens, output_tokens=output_tokens, time=0.0)
        if not self.stream:
            return ChatResponse(content=blocks, is_last=True, usage=usage)
        return _stream_deltas(blocks, usage)


async def _stream_deltas(
    blocks: list[ModelBlock], usage: ChatUsage
) -> AsyncGenerator[ChatResponse, None]:
    """Yield deltas the way a provider streams; `ChatModelBase` accumulates them."""
    for block in blocks:
        if isinstance(block, TextBlock):
            for piece in split_text(block.text):
                yield ChatResponse(content=[TextBlock(id=block.id, text=piece)], is_last=False)
        elif isinstance(block, ThinkingBlock):
            for piece in split_text(block.thinking):
                thinking = block.model_copy(update={"thinking": piece})
                yield ChatResponse(content=[thinking], is_last=False)
        elif isinstance(block, ToolCallBlock):
            for piece in split_text(block.input, 2):
                delta = ToolCallBlock(id=block.id, name=block.name, input=piece)
                yield ChatResponse(content=[delta], is_last=False)
        else:
            yield ChatResponse(content=[block], is_last=False)
    yield ChatResponse(content=[], is_last=False, usage=usage)
