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
import math
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
from agentscope.message import AssistantMsg, TextBlock, ToolResultBlock
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import ToolBase, ToolResponse

from copaw_context.agentscope2 import _context_ops as ops
from copaw_context.agentscope2._agent_state import agent_entry
from copaw_context.agentscope2._commands import parse_command, run_command
from copaw_context.agentscope2._messages import AsMsgHandler, hint_text, tool_result_texts
from copaw_context.agentscope2._pruning import ToolResultPruner
from copaw_context.agentscope2._thinking import thinking_policy
from copaw_context.agentscope2._tools import make_read_file_tool
from copaw_context.agentscope2._usage import prompt_tokens
from copaw_context.core.archive import DialogArchive
from copaw_context.core.config import RunningConfig, load_running_config
from copaw_context.core.events import ContextEvent, EventCallback, emit_event
from copaw_context.core.offload import OffloadStore, referenced_offload_names
from copaw_context.core.overflow import is_context_overflow
from copaw_context.core.tokens import (
    UsageCalibration,
    counter_in_use_is_exact,
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
        # Seconds before the first retry of a compactor call that raised; doubles each time.
        self.compactor_retry_delay = 0.5
        self._handlers: dict[tuple[str, str, int], AsMsgHandler] = {}
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

        The tokenizer is loaded off the event loop the first time a model is seen, and the
        formatter is probed once for whether it sends thinking blocks back.
        """
        light = self.config.light_context_config
        model = agent.model
        key = (light.token_counter, str(model.model), id(getattr(model, "formatter", None)))
        handler = self._handlers.get(key)
        if handler is None:
            counter = await make_token_counter_async(
                light.token_counter,
                model_name=str(model.model),
                estimate_divisor=light.token_count_estimate_divisor,
            )
            handler = AsMsgHandler(counter, count_thinking=await thinking_policy(model))
            self._handlers[key] = handler
        return handler

    def archive_for(self, agent: Any) -> DialogArchive:
        """The dialog archive writer for ``agent``'s current session."""
        return DialogArchive(
            self.dialog_dir, session_id=str(agent.state.session_id), agent_name=agent.name
        )

    def calibrates(self, agent: Any, handler: AsMsgHandler) -> bool:
        """Whether the provider's reported usage corrects our count for this agent's model.

        Only approximations are calibrated: the byte estimate (also when a vocabulary failed
        to load and counting fell back to it) and the ``auto`` fallback for a model family we
        have no vocabulary for. An exact tokenizer is left alone.
        """
        return not counter_in_use_is_exact(
            handler.counter, self.config.light_context_config.token_counter, str(agent.model.model)
        )

    async def agent_stats(self, agent: Any) -> dict[str, int]:
        """Counters for ``agent``: results truncated and offloaded, compactions, and the
        tokens of the last model input (``last_prompt_tokens``)."""
        entry = await agent_entry(self, agent)
        return {**entry.stats, "last_prompt_tokens": entry.last_prompt_tokens}

    async def calibration_for(self, agent: Any) -> UsageCalibration:
        """The usage calibration learned for ``agent`` (a copy)."""
        return (await agent_entry(self, agent)).calibration

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
                    entry = await agent_entry(self, agent)
                    entry.add_stats(truncated=stats.truncated, offloaded=stats.offloaded)
                except Exception:
                    logger.exception("copaw-context: stage-1 truncation failed; result kept as is")
            yield item

    async def on_compress_context(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[None]],
    ) -> None:
        """Stage-2 pruning, token check, compaction and archive (replaces the built-in).

        AgentScope's own inputs still apply: the image limit of the ``context_config`` in
        use, an explicit ``context_config`` (e.g. from its compression tool) for the
        threshold and reserve, and ``instructions`` as a note to the compactor.
        """
        if not self.is_light:
            await next_handler(**input_kwargs)
            return
        explicit_config = input_kwargs.get("context_config")
        try:
            self._align_builtin_hint(agent)
            await self._limit_images(agent, explicit_config or agent.context_config)
            await self._cleanup_offloads(agent)
            stats = await self.pruner.prune_old(agent.state.context)
            entry = await agent_entry(self, agent)
            entry.add_stats(truncated=stats.truncated, offloaded=stats.offloaded)
            if self.config.light_context_config.context_compact_config.enabled:
                await ops.compact(
                    self,
                    agent,
                    note=hint_text(input_kwargs.get("instructions")),
                    context_config=explicit_config,
                )
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
            text = await run_command(self, agent, command)
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
        """Record what the model receives, calibrate against its reported usage, and recover
        once from a provider's "input too long" error by compacting harder."""
        try:
            self.pruner.mark_seen(agent.state.context)  # stage 2 may cut these from now on
        except Exception:
            logger.exception("copaw-context: could not mark tool results as seen")
        measured = await self._measure_input(agent, input_kwargs)
        try:
            response = await next_handler(**input_kwargs)
        except Exception as exc:
            if not (self.is_light and is_context_overflow(exc)):
                raise
            input_kwargs = await self._recover_from_overflow(agent, input_kwargs, exc)
            measured = await self._measure_input(agent, input_kwargs)
            try:
                response = await next_handler(**input_kwargs)
            except Exception as again:
                await self._overflow_event(agent, "retry failed", again)
                raise exc from again
        if isinstance(response, ChatResponse):
            await self._observe_usage(agent, measured, response)
            return response
        return self._observe_stream(agent, measured, response)

    async def _measure_input(
        self, agent: Any, input_kwargs: dict[str, Any]
    ) -> tuple[int, int] | None:
        """(tokens, estimate bytes) of the model input; None if it could not be counted."""
        try:
            handler = await self.handler_for(agent)
            tokens, size = handler.measure_tools(input_kwargs.get("tools") or [])
            for msg in input_kwargs.get("messages") or []:
                msg_tokens, msg_size = handler.measure_message(msg)
                tokens += msg_tokens
                size += msg_size
            entry = await agent_entry(self, agent)
            entry.last_prompt_tokens = tokens
            return tokens, size
        except Exception:
            logger.exception("copaw-context: could not count the model input")
            return None

    async def _recover_from_overflow(
        self, agent: Any, input_kwargs: dict[str, Any], exc: Exception
    ) -> dict[str, Any]:
        """Compact down to half the reserve and rebuild the model input (or re-raise ``exc``)."""
        logger.warning(
            "copaw-context: the model rejected the input as too long (%s); compacting harder "
            "and retrying once",
            exc,
        )
        try:
            await ops.compact(self, agent, trigger="overflow")
            # Private but unavoidable: the model input for the new context. Pinned by
            # tests/test_agentscope_pins.py.
            fresh = await agent._prepare_model_input()
        except Exception as failure:
            logger.exception("copaw-context: overflow recovery failed")
            await self._overflow_event(agent, "recovery failed", failure)
            raise exc from failure
        await self._overflow_event(agent, "compacted, retrying the call once", exc)
        return {**input_kwargs, "messages": fresh["messages"], "tools": fresh["tools"]}

    async def _overflow_event(self, agent: Any, outcome: str, exc: BaseException) -> None:
        await self.emit(
            ContextEvent(
                kind="overflow_recovery",
                agent_name=agent.name,
                session_id=str(agent.state.session_id),
                trigger="overflow",
                message=f"{outcome}: {type(exc).__name__}: {str(exc)[:300]}",
            )
        )

    async def _observe_stream(
        self,
        agent: Any,
        measured: tuple[int, int] | None,
        stream: AsyncGenerator[ChatResponse, None],
    ) -> AsyncGenerator[ChatResponse, None]:
        last: ChatResponse | None = None
        async for chunk in stream:
            last = chunk
            yield chunk
        if last is not None:
            await self._observe_usage(agent, measured, last)

    async def _observe_usage(
        self, agent: Any, measured: tuple[int, int] | None, response: ChatResponse
    ) -> None:
        usage = response.usage
        if usage is None or measured is None:
            return
        try:
            handler = await self.handler_for(agent)
            if not self.calibrates(agent, handler):
                return
            estimated, size = measured
            reported = prompt_tokens(usage, agent.model)
            entry = await agent_entry(self, agent)
            calibration = entry.calibration
            byte_estimate = math.ceil(size / 4)
            if calibration.observe(estimated, reported, byte_estimate=byte_estimate):
                entry.calibration = calibration
            elif entry.warn_once("implausible_usage"):
                logger.warning(
                    "copaw-context: ignoring reported usage of %d input tokens for an input of "
                    "about %d (UTF-8 bytes / 4): outside %.1fx-%.1fx, so not a full prompt count "
                    "(partial streaming usage, cached tokens reported apart, or a proxy); "
                    "calibration keeps x%.2f (logged once per agent)",
                    reported,
                    byte_estimate,
                    UsageCalibration.PLAUSIBLE_LOW,
                    UsageCalibration.PLAUSIBLE_HIGH,
                    calibration.factor,
                )
        except Exception:
            logger.exception("copaw-context: could not use the reported usage")

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

    async def _limit_images(self, agent: Any, context_config: Any) -> None:
        """AgentScope's own ``max_image_num`` rule (oldest images out first)."""
        try:
            # Private but it is AgentScope's own rule, applied as the built-in does. Pinned
            # by tests/test_agentscope_pins.py.
            await agent._limit_context_images(context_config)
        except Exception:
            logger.exception("copaw-context: could not apply AgentScope's image limit")

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
