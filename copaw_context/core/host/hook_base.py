"""What every adapter's ``MemoryCompactionHook`` shares, whatever its host: the engine, its
settings, the chat-command reply and the figures. An adapter supplies :meth:`session`."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator, Iterator
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from copaw_context.core.commands import ChatCommand
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import TokenReport
from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import EventCallback
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.tokens import UsageCalibration
from copaw_context.core.tools.read_tool import ReadFileTool

__all__ = ["ANOTHER_HOOK", "Attached", "EngineHook", "fail_open"]

logger = logging.getLogger("copaw_context")

H = TypeVar("H")


@contextlib.contextmanager
def fail_open(what: str) -> Iterator[None]:
    """A failure inside the package never kills the agent's reply: ``what`` failed (and what
    is kept instead) is logged with the traceback, and the host goes on as if we were not
    there. Every adapter wraps its calls into the engine in this."""
    try:
        yield
    except Exception:
        logger.exception("copaw-context: %s", what)


ANOTHER_HOOK = (
    "attach(): this agent already has another copaw-context hook; an agent takes one hook "
    "(one hook can serve several agents): attach that hook, or build the agent with this one "
    "instead"
)
"""The refusal of a second, different hook on one agent (the same on both majors)."""


class Attached(Generic[H]):
    """What ``hook.attach(agent)`` returns: the attaching is already done when it returns;
    awaiting this (``await hook.attach(agent)``, as before) finishes any asynchronous rest
    now instead of on the hook's first call, and gives the hook."""

    __slots__ = ("_finish", "hook")

    def __init__(self, hook: H, finish: Callable[[], Awaitable[None]] | None = None) -> None:
        self.hook = hook
        self._finish = finish

    def __await__(self) -> Generator[Any, None, H]:
        return self._done().__await__()

    async def _done(self) -> H:
        if self._finish is not None:
            await self._finish()
        return self.hook

    def __repr__(self) -> str:
        return f"Attached({self.hook!r})"


class EngineHook(ABC):
    """The host-neutral half of a ``MemoryCompactionHook`` (a mixin over the engine)."""

    engine: ContextEngine

    def start_engine(
        self,
        config: RunningConfig | None,
        workspace_dir: str | os.PathLike[str],
        on_event: EventCallback | None,
    ) -> None:
        """Build the engine for ``config`` (defaults when None) in ``workspace_dir``."""
        workspace = Path(workspace_dir).expanduser().resolve()
        self.engine = ContextEngine(config or RunningConfig(), workspace, on_event=on_event)
        self._closed = False

    @abstractmethod
    async def session(self, agent: Any) -> HostSession:
        """The engine's view of ``agent`` (the adapter's own)."""

    @property
    def config(self) -> RunningConfig:
        return self.engine.config

    @property
    def workspace(self) -> Path:
        return self.engine.workspace

    @property
    def is_light(self) -> bool:
        """Whether this hook manages the context (``context_manager_backend == "light"``)."""
        return self.engine.is_light

    @property
    def compactor_retry_delay(self) -> float:
        """Seconds before the first retry of a compactor call that raised (doubles each time)."""
        return self.engine.context.compactor_retry_delay

    @compactor_retry_delay.setter
    def compactor_retry_delay(self, value: float) -> None:
        self.engine.context.compactor_retry_delay = value

    def read_file_tool(self) -> ReadFileTool:
        """``read_file`` bound to the workspace with the configured limits."""
        return ReadFileTool.from_config(self.config, self.workspace)

    async def close(self) -> None:
        """Stop background work: the memory consolidation schedule, and wait for the memory
        summaries still running (without this they are lost at exit)."""
        self._closed = True
        await self.engine.close()

    async def __aenter__(self) -> Self:
        """``async with MemoryCompactionHook(...) as hook:`` closes the hook on the way out."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (``async with`` runs it on the way out) and the hook was
        not used since (using it opens it again: close it again before exiting)."""
        return self._closed and self.engine.memory.closed

    @property
    def pending(self) -> int:
        """Memory summaries still running (:meth:`close` waits for them)."""
        return self.engine.memory.pending

    def __del__(self) -> None:
        engine = getattr(self, "engine", None)
        if engine is None:
            return
        try:
            if self.closed:
                return
        except Exception:  # half-built
            return
        try:
            pending = engine.memory.pending
        except Exception:  # half-built or interpreter shutdown
            return
        if pending:
            text = (
                f"copaw-context: {type(self).__name__} collected with {pending} memory "
                "summaries still running and never closed; their inputs are kept in "
                "<memory_dir>/.pending/ and are summarised at the next start. Use `async with "
                "hook:` or `await hook.close()` before exiting"
            )
            # A WARNING log is visible by default; the ResourceWarning is for -X dev and tests.
            logger.warning("%s", text)
            warnings.warn(text, ResourceWarning, stacklevel=2, source=self)

    async def command_reply(self, agent: Any, command: ChatCommand) -> str:
        """The reply to a chat command (a failure is reported, never raised)."""
        try:
            session = await self.session(agent)
            return await self.engine.run_command(session, command.name, command.argument)
        except Exception as exc:
            logger.exception("copaw-context: /%s failed", command.name)
            return f"**/{command.name} failed:** {type(exc).__name__}: {exc}. Nothing was removed."

    async def report(self, agent: Any) -> TokenReport:
        """Tokens the model would receive now for ``agent``, by part (as ``/context``)."""
        return await self.engine.report(await self.session(agent))

    async def agent_stats(self, agent: Any) -> dict[str, int]:
        """Counters for ``agent``: results truncated and offloaded, compactions, and the
        tokens of the last model input (``last_prompt_tokens``)."""
        state = self.engine.context.state(await self.session(agent))
        return {**state.stats, "last_prompt_tokens": state.last_prompt_tokens}

    async def calibration_for(self, agent: Any) -> UsageCalibration:
        """The usage calibration learned for ``agent`` (a copy)."""
        return self.engine.context.state(await self.session(agent)).calibration

    async def calibrates(self, agent: Any) -> bool:
        """Whether reported usage corrects the count for ``agent``'s model."""
        session = await self.session(agent)
        context = self.engine.context
        return context.calibrates(session, await context.meter(session))
