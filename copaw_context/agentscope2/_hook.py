"""``MemoryCompactionHook``: the AgentScope 2.x middleware running the light pipeline.

``on_acting``           stage-1 tool-result truncation + offload, before the result is stored
``on_compress_context`` (AgentScope's pre-reasoning point) stage-2 pruning, token check,
                        compaction, dialog archive, then ``state.summary``/``state.context``
``on_reply``            chat commands: ``/compact [note]``, ``/context``, ``/clear``, ``/new``
``on_model_call``       marks the tool results the model sees (stage 2 waits for that) and
                        calibrates the token estimate with the provider's reported usage
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

from agentscope.event import (
    ReplyEndEvent,
    ReplyStartEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
)
from agentscope.message import AssistantMsg, Msg, TextBlock, ToolResultBlock
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import ToolBase, ToolResponse

from copaw_context.agentscope2 import _context_ops as ops
from copaw_context.agentscope2._commands import parse_command
from copaw_context.agentscope2._messages import AsMsgHandler, tool_result_texts
from copaw_context.agentscope2._pruning import ToolResultPruner
from copaw_context.agentscope2._tools import make_read_file_tool
from copaw_context.core.archive import DialogArchive
from copaw_context.core.config import RunningConfig, load_running_config
from copaw_context.core.events import ContextEvent, EventCallback, emit_event
from copaw_context.core.offload import OffloadStore, referenced_offload_names
from copaw_context.core.tokens import (
    UsageCalibration,
    counter_is_exact,
    make_token_counter_async,
)

__all__ = ["MemoryCompactionHook"]

logger = logging.getLogger("copaw_context")


def _reply_events(agent: Any, text: str) -> list[Any]:
    """A command's answer as the events a streaming client expects, then the final message."""
    block = TextBlock(text=text)
    msg = AssistantMsg(name=agent.name, content=[block])
    session, reply = str(agent.state.session_id), msg.id
    return [
        ReplyStartEvent(session_id=session, reply_id=reply, name=agent.name),
        TextBlockStartEvent(reply_id=reply, block_id=block.id),
        TextBlockDeltaEvent(reply_id=reply, block_id=block.id, delta=text),
        TextBlockEndEvent(reply_id=reply, block_id=block.id),
        ReplyEndEvent(session_id=session, reply_id=reply),
        msg,
    ]


def _formatter_sends_thinking(model: Any) -> bool:
    """Whether the model's formatter passes thinking blocks back to the provider.

    OpenAI-style formatters drop them, so counting them would compact far too early.
    """
    formatter = getattr(model, "formatter", None)
    if formatter is None:
        return True  # unknown: count, to stay on the safe side of the window
    if getattr(formatter, "supports_thinking_input", False) is True:
        return True
    return type(formatter).__name__.startswith(("Anthropic", "DeepSeek"))


class MemoryCompactionHook(MiddlewareBase):
    """Light context management for an AgentScope 2.x ``Agent``.

    Example::

        hook = MemoryCompactionHook.from_agent_json("agent.json", workspace_dir="ws")
        agent = Agent(name="a", system_prompt="...", model=model,
                      toolkit=Toolkit(tools=[*await hook.list_tools(), *my_tools]),
                      middlewares=[hook])
    """

    def __init__(
        self,
        config: RunningConfig | None = None,
        workspace_dir: str | os.PathLike[str] = ".",
        compactor_model: ChatModelBase | None = None,
        *,
        on_event: EventCallback | None = None,
    ) -> None:
        self.config = config or RunningConfig()
        self.workspace = Path(workspace_dir).expanduser().resolve()
        self.compactor_model = compactor_model
        self.on_event = on_event
        light = self.config.light_context_config
        pruning = light.tool_result_pruning_config
        self.store = OffloadStore(
            self.workspace / pruning.tool_results_cache, pruning.offload_retention_days
        )
        self.dialog_dir = self.workspace / light.dialog_path
        # Full texts of oversized user requests: kept with the archive, never TTL-cleaned.
        self.request_store = OffloadStore(self.dialog_dir / "requests", retention_days=36500)
        self.extra_read_roots = [
            self.workspace / Path(r).expanduser() for r in light.extra_read_roots
        ]  # an absolute root stays absolute: Path("/ws") / "/abs" == Path("/abs")
        self.pruner = ToolResultPruner(pruning, self.store, self.workspace)
        self.calibration = UsageCalibration()
        self.stats: dict[str, int] = {"truncated": 0, "offloaded": 0, "compactions": 0}
        self.last_prompt_tokens = 0
        self._handlers: dict[str, AsMsgHandler] = {}
        self._tools: list[ToolBase] | None = None

    @classmethod
    def from_agent_json(
        cls,
        path: str | os.PathLike[str],
        workspace_dir: str | os.PathLike[str],
        compactor_model: ChatModelBase | None = None,
        *,
        on_event: EventCallback | None = None,
    ) -> MemoryCompactionHook:
        """Build the hook from an agent.json (``running`` or ``agents.running``)."""
        return cls(load_running_config(path), workspace_dir, compactor_model, on_event=on_event)

    @property
    def is_light(self) -> bool:
        """Whether this hook replaces AgentScope's built-in compression."""
        return self.config.context_manager_backend == "light"

    async def list_tools(self) -> list[ToolBase]:
        """``read_file`` bound to the workspace (add it to the agent's ``Toolkit``)."""
        if self._tools is None:
            light = self.config.light_context_config
            pruning = light.tool_result_pruning_config
            self._tools = [
                make_read_file_tool(
                    self.workspace,
                    extra_roots=self.extra_read_roots,
                    max_bytes=pruning.pruning_recent_msg_max_bytes,
                    exempt_extensions=pruning.exempt_file_extensions,
                    exempt_max_bytes=pruning.effective_exempt_recent_max_bytes,
                    tool_results_dir=pruning.tool_results_cache,
                    dialog_dir=light.dialog_path,
                )
            ]
        return list(self._tools)

    async def handler_for(self, agent: Any) -> AsMsgHandler:
        """The :class:`AsMsgHandler` (and its token cache) for the agent's model.

        The tokenizer is loaded off the event loop the first time a model is seen.
        """
        light = self.config.light_context_config
        model = agent.model
        count_thinking = _formatter_sends_thinking(model)
        key = f"{light.token_counter}:{model.model}:{count_thinking}"
        handler = self._handlers.get(key)
        if handler is None:
            counter = await make_token_counter_async(
                light.token_counter,
                model_name=str(model.model),
                estimate_divisor=light.token_count_estimate_divisor,
            )
            handler = AsMsgHandler(counter, count_thinking=count_thinking)
            self._handlers[key] = handler
        return handler

    def archive_for(self, agent: Any) -> DialogArchive:
        """The dialog archive writer for ``agent``'s current session."""
        return DialogArchive(
            self.dialog_dir, session_id=str(agent.state.session_id), agent_name=agent.name
        )

    def calibrates(self, agent: Any) -> bool:
        """Whether the provider's reported usage corrects our count for this agent's model.

        Only approximations are calibrated: the byte estimate and the ``auto`` fallback for a
        model family we have no vocabulary for. An exact tokenizer is left alone.
        """
        return not counter_is_exact(
            self.config.light_context_config.token_counter, str(agent.model.model)
        )

    # ------------------------------------------------------------------- hooks
    async def on_acting(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        """Stage 1: bound a fresh tool result before the agent stores it."""
        tool_call = input_kwargs["tool_call"]
        async for item in next_handler(**input_kwargs):
            if isinstance(item, ToolResponse) and self.is_light:
                self._relax_builtin_truncation(agent)
                try:
                    stats = await self.pruner.prune_fresh(tool_call, item)
                    self.stats["truncated"] += stats.truncated
                    self.stats["offloaded"] += stats.offloaded
                except Exception:
                    logger.exception("copaw-context: stage-1 truncation failed; result kept as is")
            yield item

    async def on_compress_context(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[None]],
    ) -> None:
        """Stage-2 pruning, token check, compaction and archive (replaces the built-in)."""
        if not self.is_light:
            await next_handler(**input_kwargs)
            return
        try:
            self._align_builtin_hint(agent)
            await self._cleanup_offloads(agent)
            stats = await self.pruner.prune_old(agent.state.context)
            self.stats["truncated"] += stats.truncated
            self.stats["offloaded"] += stats.offloaded
            if self.config.light_context_config.context_compact_config.enabled:
                await ops.compact(self, agent, force=False, note="")
        except Exception:
            # The context manager must never kill the agent's reply.
            logger.exception("copaw-context: context management failed this step; context kept")

    async def on_reply(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        """Answer ``/compact``, ``/context``, ``/clear`` and ``/new`` without the model."""
        command = parse_command(input_kwargs.get("inputs"))
        if command is None:
            async for item in next_handler(**input_kwargs):
                yield item
            return
        try:
            text = await ops.run_command(self, agent, command)
        except Exception as exc:
            logger.exception("copaw-context: /%s failed", command.name)
            text = f"**/{command.name} failed:** {type(exc).__name__}: {exc}. Nothing was removed."
        for item in _reply_events(agent, text):
            yield item

    async def on_model_call(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[Any]],
    ) -> Any:
        """Record what the model receives and calibrate against its reported usage."""
        try:
            self.pruner.mark_seen(agent.state.context)  # stage 2 may cut these from now on
        except Exception:
            logger.exception("copaw-context: could not mark tool results as seen")
        estimated = 0
        try:
            handler = await self.handler_for(agent)
            messages: list[Msg] = input_kwargs.get("messages") or []
            estimated = sum(handler.count_message(m) for m in messages)
            estimated += handler.count_tools(input_kwargs.get("tools") or [])
            self.last_prompt_tokens = estimated
        except Exception:
            logger.exception("copaw-context: could not count the model input")
        response = await next_handler(**input_kwargs)
        if isinstance(response, ChatResponse):
            self._observe_usage(estimated, response)
            return response
        return self._observe_stream(estimated, response)

    async def _observe_stream(
        self, estimated: int, stream: AsyncGenerator[ChatResponse, None]
    ) -> AsyncGenerator[ChatResponse, None]:
        last: ChatResponse | None = None
        async for chunk in stream:
            last = chunk
            yield chunk
        if last is not None:
            self._observe_usage(estimated, last)

    def _observe_usage(self, estimated: int, response: ChatResponse) -> None:
        usage = response.usage
        if usage is not None and usage.input_tokens and estimated:
            self.calibration.observe(estimated, int(usage.input_tokens))

    # ---------------------------------------------------------------- helpers
    def _align_builtin_hint(self, agent: Any) -> None:
        """Make AgentScope's "context will be compressed at N tokens" hint name our threshold."""
        try:
            size = int(agent.model.context_size)
            window = self.config.max_input_length if self.config.max_input_length_is_set else size
            ratio = self.config.compact_threshold_tokens(window) / size
            cfg = agent.context_config
            if 0 < ratio <= 0.9 and cfg.trigger_ratio != ratio:
                if cfg.context_buffer_ratio >= ratio:
                    cfg.context_buffer_ratio = ratio / 4  # AgentScope needs buffer < trigger
                cfg.trigger_ratio = ratio
        except (AttributeError, TypeError, ValueError, ZeroDivisionError):
            logger.debug("copaw-context: could not align AgentScope's context hint")

    def _relax_builtin_truncation(self, agent: Any) -> None:
        """Keep AgentScope's own tool-result cut (counted in tokens) off our bounded text.

        Our stage 1 already bounds every text result to at most the largest byte limit; a
        token never takes less than one byte, so a limit of that many tokens never fires.
        """
        pruning = self.config.light_context_config.tool_result_pruning_config
        if not pruning.enabled:
            return  # nothing of ours bounds the results: leave AgentScope's own cut in place
        ceiling = max(
            pruning.pruning_recent_msg_max_bytes, pruning.effective_exempt_recent_max_bytes
        )
        try:
            if agent.context_config.tool_result_limit < ceiling:
                agent.context_config.tool_result_limit = ceiling
        except (AttributeError, TypeError, ValueError):
            logger.debug("copaw-context: could not raise the built-in tool_result_limit")

    async def _cleanup_offloads(self, agent: Any) -> None:
        def referenced() -> set[str]:
            texts: list[str] = []
            for msg in agent.state.context:
                for block in msg.content:
                    if isinstance(block, ToolResultBlock):
                        texts.extend(tool_result_texts(block))
                    elif isinstance(block, TextBlock):
                        texts.append(block.text)
            if isinstance(agent.state.summary, str):
                texts.append(agent.state.summary)
            return referenced_offload_names(texts)  # bare names count too (summaries)

        try:
            await self.store.maybe_cleanup(referenced)
        except Exception:
            logger.exception("copaw-context: offload cleanup failed")

    async def emit(self, event: ContextEvent) -> None:
        """Send ``event`` to logging and the ``on_event`` callback."""
        await emit_event(event, self.on_event)

    def now(self) -> float:
        """Monotonic clock (separate so tests can reason about durations)."""
        return time.monotonic()
