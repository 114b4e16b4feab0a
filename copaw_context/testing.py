"""A scripted AgentScope 2.x chat model for offline tests and demos.

`ScriptedChatModel` replays a list of steps. Each model call consumes one step:
a list of content blocks (the reply), a callable that receives the `ModelCall`
and returns blocks (sync or async), or an exception instance that is raised.
Every call is recorded with deep-copied messages, so tests can assert on what
the model actually received. `openai_pairing_problems` checks that an OpenAI
chat-completions message list pairs every tool call with its tool messages.
"""

from __future__ import annotations

import copy
import inspect
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

__all__ = [
    "ModelBlock",
    "ModelCall",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "Step",
    "StepResult",
    "UnconsumedStepsError",
    "UsageFunction",
    "openai_pairing_problems",
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


class ScriptExhaustedError(AssertionError):
    """The model was called after its script ran out of steps."""


class UnconsumedStepsError(AssertionError):
    """`assert_complete` found steps that were never used."""


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
    if not isinstance(blocks, (list, tuple)):
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


def _check_step(step: object, index: int) -> Step:
    if isinstance(step, type) and issubclass(step, BaseException):
        raise TypeError(
            f"script step {index}: pass an exception instance, e.g. {step.__name__}('...')"
        )
    if isinstance(step, BaseException) or callable(step):
        return step
    return _check_blocks(step, f"script step {index}")


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


class ScriptedChatModel(ChatModelBase):
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
        self._steps: list[Step] = []
        self._next = 0
        self.add_steps(*steps)

    def add_steps(self, *steps: Step) -> None:
        """Append steps to the script."""
        start = len(self._steps)
        self._steps.extend(_check_step(step, start + i) for i, step in enumerate(steps))

    @property
    def remaining(self) -> int:
        """How many steps have not been used yet."""
        return len(self._steps) - self._next

    def assert_complete(self) -> None:
        """Raise `UnconsumedStepsError` unless every step was used."""
        if self.remaining:
            unused = ", ".join(
                _describe_step(step) for step in self._steps[self._next : self._next + 5]
            )
            raise UnconsumedStepsError(
                f"ScriptedChatModel {self.name!r}: {self.remaining} of {len(self._steps)} "
                f"step(s) were never used (called {len(self.calls)} time(s)); "
                f"next unused: {unused}"
            )

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
        if self._next >= len(self._steps):
            recent = "\n  ".join(_preview(msg) for msg in messages[-3:])
            raise ScriptExhaustedError(
                f"ScriptedChatModel {self.name!r} was called {len(self.calls)} time(s) but "
                f"its script has only {len(self._steps)} step(s); add steps with add_steps(). "
                f"Tools offered: {call.tool_names}. Last messages:\n  {recent}"
            )
        step = self._steps[self._next]
        self._next += 1
        blocks = await self._run_step(step, call)
        reported = self._usage(call)
        if isinstance(reported, ChatUsage):
            usage = reported
        else:
            input_tokens, output_tokens = reported
            usage = ChatUsage(input_tokens=input_tokens, output_tokens=output_tokens, time=0.0)
        if not self.stream:
            return ChatResponse(content=blocks, is_last=True, usage=usage)
        return _stream_deltas(blocks, usage)

    async def _run_step(self, step: Step, call: ModelCall) -> list[ModelBlock]:
        index = self._next - 1
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            result = step(call)
            if inspect.isawaitable(result):
                result = await result
            return _check_blocks(result, f"script step {index} (callable {_describe_step(step)})")
        return [block.model_copy(deep=True) for block in step]


def _describe_step(step: Step) -> str:
    if isinstance(step, BaseException):
        return f"raise {type(step).__name__}({step})"
    if callable(step):
        return getattr(step, "__qualname__", type(step).__name__)
    return "[" + ", ".join(type(block).__name__ for block in step) + "]"


def _split(text: str, pieces: int = 3) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


async def _stream_deltas(
    blocks: list[ModelBlock], usage: ChatUsage
) -> AsyncGenerator[ChatResponse, None]:
    """Yield deltas the way a provider streams; `ChatModelBase` accumulates them."""
    for block in blocks:
        if isinstance(block, TextBlock):
            for piece in _split(block.text):
                yield ChatResponse(content=[TextBlock(id=block.id, text=piece)], is_last=False)
        elif isinstance(block, ThinkingBlock):
            for piece in _split(block.thinking):
                thinking = block.model_copy(update={"thinking": piece})
                yield ChatResponse(content=[thinking], is_last=False)
        elif isinstance(block, ToolCallBlock):
            for piece in _split(block.input, 2):
                delta = ToolCallBlock(id=block.id, name=block.name, input=piece)
                yield ChatResponse(content=[delta], is_last=False)
        else:
            yield ChatResponse(content=[block], is_last=False)
    yield ChatResponse(content=[], is_last=False, usage=usage)


def openai_pairing_problems(
    formatted: list[dict[str, Any]], *, pending_ok: bool = True
) -> list[str]:
    """Check tool-call pairing in an OpenAI chat-completions message list.

    OpenAI requires each `tool` message to sit in the contiguous run of tool
    messages right after the assistant message whose `tool_calls` holds its
    id, and every tool call to be answered there. With `pending_ok`, calls of
    the last assistant message may still be unanswered. Returns readable
    problems; an empty list means the sequence is valid.
    """
    problems: list[str] = []
    call_origin: dict[str, int] = {}
    call_names: dict[str, str] = {}
    answered: set[str] = set()
    last_assistant = max(
        (i for i, msg in enumerate(formatted) if msg.get("role") == "assistant"), default=-1
    )
    run_owner = -1
    run_pending: list[str] = []

    def close_run() -> None:
        if run_owner < 0 or (pending_ok and run_owner == last_assistant):
            return
        for call_id in run_pending:
            problems.append(
                f"message {run_owner}: tool call {call_id!r} ({call_names[call_id]}) has no "
                "tool message in the run directly after it"
            )

    for index, msg in enumerate(formatted):
        role = msg.get("role")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not call_id:
                problems.append(f"message {index}: tool message without a tool_call_id")
            elif call_id in answered:
                problems.append(f"message {index}: second tool message for call {call_id!r}")
            elif call_id in run_pending:
                run_pending.remove(call_id)
                answered.add(call_id)
            elif call_id in call_origin:
                answered.add(call_id)
                problems.append(
                    f"message {index}: tool message for call {call_id!r} is not in the run of "
                    f"tool messages directly after its assistant message {call_origin[call_id]}"
                )
            else:
                problems.append(
                    f"message {index}: tool message for unknown call {call_id!r} "
                    "(no earlier assistant message has a tool_call with this id)"
                )
            name = msg.get("name")
            if call_id in call_names and name and name != call_names[call_id]:
                problems.append(
                    f"message {index}: tool message named {name!r} answers call {call_id!r} "
                    f"of {call_names[call_id]!r}"
                )
            continue
        close_run()
        run_owner, run_pending = -1, []
        if role == "assistant" and msg.get("tool_calls"):
            run_owner = index
            for tool_call in msg["tool_calls"]:
                call_id = tool_call.get("id")
                if not call_id:
                    problems.append(f"message {index}: tool call without an id")
                    continue
                if call_id in run_pending or (call_id in call_origin and call_id not in answered):
                    problems.append(
                        f"message {index}: duplicate tool call id {call_id!r} "
                        f"(still unanswered from message {call_origin[call_id]})"
                    )
                    continue
                # Reusing an id after its call was answered is valid (some servers do it).
                answered.discard(call_id)
                call_origin[call_id] = index
                call_names[call_id] = str(tool_call.get("function", {}).get("name", "?"))
                run_pending.append(call_id)
    close_run()
    return problems
