"""What every adapter's ``MemoryCompactionHook`` shares, whatever its host: the engine, its
settings (from an agent.json too), the per-agent scratch, what each session gets
(:meth:`EngineHook.setup`), the chat-command reply, the figures, one hook per agent, and
the decisions around each host event (``hook_events.HookEvents``, each fail-open). An
adapter supplies :meth:`session` and translates its host's events."""

from __future__ import annotations

import logging
import os
import warnings
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable, MutableSet
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar

from copaw_context.core.commands import ChatCommand
from copaw_context.core.config.running import RunningConfig, load_running_config
from copaw_context.core.context.report import TokenReport
from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import EventCallback
from copaw_context.core.host.hook_events import HookEvents, fail_open
from copaw_context.core.host.protocol import CompactorModel, HostSession, Window
from copaw_context.core.host.session_base import SessionSetup
from copaw_context.core.steps.model_call import UsageReader
from copaw_context.core.tokens import UsageCalibration
from copaw_context.core.tools.read_tool import ReadFileTool
from copaw_context.core.workspace.location import agent_json_workspace

__all__ = [
    "ANOTHER_HOOK",
    "Attached",
    "EngineHook",
    "HookSurface",
    "fail_open",
    "refuse_another_hook",
    "require_members",
    "token_report",
]

logger = logging.getLogger("copaw_context")

H = TypeVar("H")
T = TypeVar("T")

ANOTHER_HOOK = (
    "attach(): this agent already has another copaw-context hook; an agent takes one hook "
    "(one hook can serve several agents): attach that hook, or build the agent with this one "
    "instead"
)
"""The refusal of a second, different hook on one agent (the same on both majors)."""


def refuse_another_hook(hooks: Iterable[object], hook: object) -> None:
    """One copaw-context hook per agent (ValueError when one of ``hooks``, those already on
    the agent, is another): a second one would run a second pipeline over the same context
    and put a second MEMORY.md into the prompt."""
    if any(isinstance(other, EngineHook) and other is not hook for other in hooks):
        raise ValueError(ANOTHER_HOOK)


def require_members(agent: Any, names: Iterable[str], needs: str) -> None:
    """An agent ``attach()`` can work with has every member of ``names`` (``TypeError``
    naming those it lacks and what it ``needs``, e.g. "an AgentScope 1.x ReActAgent")."""
    missing = [name for name in names if not hasattr(agent, name)]
    if missing:
        raise TypeError(
            f"attach() needs {needs}; {type(agent).__name__} has no {', '.join(missing)}"
        )


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


class HookSurface(Protocol):
    """The members of an :class:`EngineHook` an adapter's wiring calls (the modules that put
    the hook into the host, typed against this so that they import no hook)."""

    @property
    def engine(self) -> ContextEngine: ...

    @property
    def is_light(self) -> bool: ...

    def scratch(self, agent: Any) -> dict[str, Any]: ...

    async def session(self, agent: Any) -> HostSession: ...

    async def command_reply(self, agent: Any, command: ChatCommand) -> str: ...

    async def memory_prompt(self, prompt: str, window: int, *, once: bool = False) -> str: ...

    def repaired(
        self, agent: Any, messages: T, repair: Callable[[T, MutableSet[str]], T | None]
    ) -> T: ...

    def refuse_host_compression(self, enabled: bool, setting: str, remedy: str) -> None: ...

    def takes_call(self, agent: Any) -> bool: ...

    async def model_call(
        self,
        agent: Any,
        session: HostSession,
        model_input: T,
        send: Callable[[T], Awaitable[Any]],
        rebuild: Callable[[], Awaitable[T]],
        usage: UsageReader,
        *,
        fallback: Any = None,
    ) -> Any: ...

    async def before_unhooked_call(
        self, agent: Any, step: Callable[[], Awaitable[None]]
    ) -> None: ...


class EngineHook(HookEvents):
    """The host-neutral half of a ``MemoryCompactionHook`` (a mixin over the engine)."""

    engine: ContextEngine
    compactor_model: Any
    """The model that writes summaries, when not the agent's own (None)."""

    def start_engine(
        self,
        config: RunningConfig | None,
        workspace_dir: str | os.PathLike[str],
        on_event: EventCallback | None,
        compactor_model: Any = None,
    ) -> None:
        """Build the engine for ``config`` (defaults when None) in ``workspace_dir``."""
        workspace = Path(workspace_dir).expanduser().resolve()
        self.engine = ContextEngine(config or RunningConfig(), workspace, on_event=on_event)
        self.compactor_model = compactor_model
        self._closed = False
        self._thinking: dict[int, Any] = {}
        self._scratch: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
        self._pending_tools: weakref.WeakSet[Any] = weakref.WeakSet()

    @classmethod
    def from_agent_json(
        cls,
        path: str | os.PathLike[str],
        workspace_dir: str | os.PathLike[str] | None = None,
        compactor_model: Any | None = None,
        **options: Any,
    ) -> Self:
        """Build the hook from an agent.json (``running`` or ``agents.running``); the
        workspace is the folder that holds it unless ``workspace_dir`` is given. ``options``
        are the hook's other keyword arguments (``on_event``, ...)."""
        build: Callable[..., Self] = cls
        workspace = agent_json_workspace(path, workspace_dir)
        return build(load_running_config(path), workspace, compactor_model, **options)

    async def setup(
        self,
        agent: Any,
        *,
        formatter: Any,
        probe: Callable[[], Awaitable[Any]],
        context_size: Any,
        own_model: Any,
        summariser: Callable[[Any, int | None], CompactorModel],
    ) -> SessionSetup:
        """What a session of ``agent`` gets: the thinking policy of ``formatter`` (``probe``
        runs once per formatter), the window for the model's ``context_size``, and the
        compactor: ``summariser(model, window)`` over :attr:`compactor_model` (no window),
        else over ``own_model``, the agent's, which serves the agent's window."""
        thinking = self._thinking.get(id(formatter))
        if thinking is None:
            thinking = self._thinking[id(formatter)] = await probe()
        window = self.model_window(agent, context_size)
        separate = self.compactor_model is not None
        if separate:
            compactor = summariser(self.compactor_model, None)
        else:
            compactor = summariser(own_model, window.tokens)
        return SessionSetup(self.scratch(agent), thinking, window, compactor, separate)

    def model_window(self, agent: Any, context_size: Any) -> Window:
        """The window of ``agent`` whose model states ``context_size``: the config's rule
        (``RunningConfig.window_for``); a host with a rule of its own overrides this."""
        return Window(*self.config.window_for(context_size))

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
        """``read_file`` bound to the workspace with the configured limits (a saved result
        opened by the engine's file store)."""
        return ReadFileTool.from_config(
            self.config, self.workspace, files=self.engine.context.workspace_store
        )

    def engine_tools(
        self,
        read_file: Callable[[ReadFileTool], T],
        tool: Callable[[Callable[..., Awaitable[str]]], T],
    ) -> list[T]:
        """The tools a host registers for the engine, in its tool form: ``read_file`` of
        :meth:`read_file_tool`, and ``tool`` of each long-term memory tool (none while
        memory is off)."""
        memory = [tool(function) for function in self.engine.memory.tool_functions()]
        return [read_file(self.read_file_tool()), *memory]

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


async def token_report(hook: EngineHook, agent: object) -> TokenReport:
    """Tokens the model would receive now for ``agent`` (what ``/context`` shows)."""
    return await hook.report(agent)
