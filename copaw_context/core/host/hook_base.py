"""What every adapter's ``MemoryCompactionHook`` shares, whatever its host: the engine, its
settings (from an agent.json too), the per-agent scratch, what each session gets
(:meth:`EngineHook.setup`), the chat-command reply, the figures, and the decisions around
each host event: whether and how stage 1 bounds a fresh result (:meth:`EngineHook.bound_result`),
the pipeline before a reasoning step (:meth:`EngineHook.before_step`), the repaired tool
pairing of a model input (:meth:`EngineHook.repaired`), an input refitted for another model
(:meth:`EngineHook.refit`) and MEMORY.md in the system prompt (:meth:`EngineHook.memory_prompt`),
each fail-open. An adapter supplies :meth:`session` and translates its host's events."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, MutableSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar

from copaw_context.core.commands import ChatCommand
from copaw_context.core.config.running import RunningConfig, load_running_config
from copaw_context.core.context.report import Limits, TokenReport
from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import EventCallback
from copaw_context.core.host.prompt import with_memory
from copaw_context.core.host.protocol import CompactorModel, HostSession, Window
from copaw_context.core.host.session_base import SessionSetup
from copaw_context.core.tokens import UsageCalibration
from copaw_context.core.tools.read_tool import ReadFileTool
from copaw_context.core.workspace.location import agent_json_workspace

__all__ = [
    "ANOTHER_HOOK",
    "CALL_MODEL",
    "Attached",
    "EngineHook",
    "FreshResult",
    "HookSurface",
    "REASONING_CALL",
    "fail_open",
    "refuse_another_hook",
    "warn_replacing_tool",
    "warn_state_dropped",
]

logger = logging.getLogger("copaw_context")

H = TypeVar("H")
T = TypeVar("T")

CALL_MODEL = "call_model"
"""Scratch key of :meth:`EngineHook.calling`: the model a call is being prepared for."""

REASONING_CALL = "reasoning_call"
"""Scratch key of :meth:`EngineHook.mark_reasoning`: the next model call is the reasoning call
(for a host with no hook around its model call, whose model is wrapped instead)."""


@dataclass(frozen=True, slots=True)
class FreshResult:
    """A fresh tool result where its host keeps it, and how to write it back bounded."""

    tool_name: str | None
    tool_input: str | None
    """The call's raw JSON input."""
    parts: list[Any]
    """Its output parts (``str`` for text, the host's data blocks as they are)."""
    meta: dict[str, Any]
    """This package's entry stored with it."""
    write: Callable[[list[Any], dict[str, Any]], None]


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


def refuse_another_hook(hooks: Iterable[object], hook: object) -> None:
    """One copaw-context hook per agent (ValueError when one of ``hooks``, those already on
    the agent, is another): a second one would run a second pipeline over the same context
    and put a second MEMORY.md into the prompt."""
    if any(isinstance(other, EngineHook) and other is not hook for other in hooks):
        raise ValueError(ANOTHER_HOOK)


def warn_replacing_tool(name: str) -> None:
    """Our tool ``name`` replaces the agent's own tool of that name (logged)."""
    logger.warning(
        "copaw-context: replacing the toolkit's %s with copaw-context's (it follows the "
        "truncation notices exactly)",
        name,
    )


def warn_state_dropped(agent_name: str, held: int) -> None:
    """An agent that already holds ``held`` messages, but not our saved state, is attached
    (logged: its session was loaded before the hook was there to keep its state)."""
    logger.warning(
        "copaw-context: %s already holds %d messages; if they come from a session saved "
        "with the hook attached, attach the hook before loading the session: AgentScope "
        "dropped the hook's saved state (archive session id, calibration, messages "
        "waiting for the archive)",
        agent_name,
        held,
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


class EngineHook(ABC):
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

    @abstractmethod
    async def session(self, agent: Any) -> HostSession:
        """The engine's view of ``agent`` (the adapter's own)."""

    def scratch(self, agent: Any) -> dict[str, Any]:
        """The engine's cache for ``agent`` (not saved)."""
        return self._scratch.setdefault(agent, {})

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
        window = Window(*self.config.window_for(context_size))
        separate = self.compactor_model is not None
        if separate:
            compactor = summariser(self.compactor_model, None)
        else:
            compactor = summariser(own_model, window.tokens)
        return SessionSetup(self.scratch(agent), thinking, window, compactor, separate)

    def tools_pending(self, agent: Any) -> None:
        """Add the tools to ``agent``'s toolkit on the hook's next call (see ``attach``)."""
        self._pending_tools.add(agent)

    def take_pending_tools(self, agent: Any) -> bool:
        """Whether ``agent``'s tools are still to be added (they are not any more: once)."""
        if agent not in self._pending_tools:
            return False
        self._pending_tools.discard(agent)
        return True

    @contextlib.contextmanager
    def calling(self, agent: Any, model: Any) -> Iterator[None]:
        """Meanwhile ``agent``'s call goes to ``model`` (a fallback, say): what the host builds
        for it meanwhile, such as the system prompt with MEMORY.md bounded by the window, is
        for that model (:meth:`called_model`)."""
        scratch = self.scratch(agent)
        scratch[CALL_MODEL] = model
        try:
            yield
        finally:
            scratch.pop(CALL_MODEL, None)

    def called_model(self, agent: Any, default: Any) -> Any:
        """The model of :meth:`calling`, else ``default`` (the agent's own)."""
        return self.scratch(agent).get(CALL_MODEL) or default

    # ------------------------------------------------------------ host events
    def refuse_host_compression(self, enabled: bool, setting: str, remedy: str) -> None:
        """The host's own compression (``setting``, on when ``enabled``) and ours cannot both
        manage one context: refused (ValueError) while this hook manages it; ``remedy``
        says how to build the agent without it."""
        if self.is_light and enabled:
            raise ValueError(
                f"attach(): the agent's own compression ({setting}) is on; copaw-context "
                f"replaces it. {remedy}, or set running.context_manager_backend to "
                '"native" to keep AgentScope\'s'
            )

    def mark_reasoning(self, agent: Any) -> None:
        """The next model call of ``agent`` is its reasoning call (the pipeline just ran)."""
        self.scratch(agent)[REASONING_CALL] = True

    def takes_call(self, agent: Any) -> bool:
        """Whether this model call of ``agent`` goes through the engine: only the reasoning
        call marked by :meth:`mark_reasoning` (the mark is taken), while the context is
        managed; other calls (query rewriting, a summary after the step limit) go as they are."""
        return bool(self.scratch(agent).pop(REASONING_CALL, False)) and self.is_light

    async def bound_result(
        self,
        agent: Any,
        fresh: Callable[[], FreshResult | None],
        *,
        pruning_only: bool = False,
    ) -> None:
        """Stage 1 on a fresh tool result of ``agent``, found by ``fresh()`` (None: nothing
        to bound) and written back bounded, when the context is managed (with
        ``pruning_only``, only while pruning is on: ``fresh`` is not even called). A failure
        keeps the result as it is (logged)."""
        if not self.is_light or (pruning_only and not self.engine.context.pruning.enabled):
            return
        with fail_open("stage-1 truncation failed; result kept as is"):
            found = fresh()
            if found is None:
                return
            session = await self.session(agent)
            parts, meta = await self.engine.on_tool_result(
                session, found.tool_name, found.tool_input, found.parts, found.meta
            )
            found.write(parts, meta)

    async def before_step(
        self,
        agent: Any,
        prepare: Callable[[HostSession], Awaitable[tuple[str, Limits | None]]] | None = None,
    ) -> bool | None:
        """The engine's pipeline before ``agent``'s reasoning step: ``prepare(session)``
        first, which gives the compactor's note and explicit limits. None: the context is not
        managed (the host's own rules apply); False: it failed and the context is kept
        (logged); True: it ran."""
        if not self.is_light:
            return None
        with fail_open("context management failed this step; context kept"):
            session = await self.session(agent)
            note, limits = ("", None) if prepare is None else await prepare(session)
            await self.engine.before_reasoning(session, note=note, limits=limits)
            return True
        return False

    async def limit_data(
        self, session: HostSession, most: int, limit: Callable[[], Awaitable[None]]
    ) -> None:
        """The host's own limit on data blocks (``limit()``), when the context holds more than
        ``most`` of them (messages may change in place: the ledger views them again)."""
        ledger, _ = await self.engine.context.sync(session)
        if ledger.data > most:  # else nothing to limit
            await limit()
            ledger.reset()

    def repaired(
        self, agent: Any, messages: T, repair: Callable[[T, MutableSet[str]], T | None]
    ) -> T:
        """The messages of a model input with their tool pairing repaired by ``repair``
        (None: nothing to repair; each repair logged once per agent); as they are when the
        context is not managed or the check failed (logged). The context is not changed."""
        if not self.is_light:
            return messages
        result = messages
        with fail_open("could not check the tool pairing of the input"):
            repaired = repair(messages, self.scratch(agent).setdefault("pair_repairs", set()))
            if repaired is not None:
                result = repaired
        return result

    async def refit(
        self,
        session: HostSession,
        model_input: T,
        rebuild: Callable[[], Awaitable[T]],
        calling: contextlib.AbstractContextManager[None],
    ) -> T:
        """``model_input`` for a call to a model other than the one the step before fitted
        the context to (a fallback): compact for its window (inside ``calling``), and
        ``rebuild()`` the input when that changed it, or when the system prompt carries
        MEMORY.md (bounded by the window); as it is when the context is not managed or this
        failed (logged)."""
        if not self.is_light:
            return model_input
        fitted = model_input
        with fail_open("could not fit the input to the fallback model"):
            with calling:
                event = await self.engine.before_reasoning(session)
            if event is not None or self.engine.memory.enabled:
                fitted = await rebuild()
        return fitted

    async def memory_prompt(self, prompt: str, window: int, *, once: bool = False) -> str:
        """``prompt`` and the MEMORY.md block (bounded by the ``window`` in tokens) after it;
        with ``once``, unless the prompt already holds MEMORY.md (:func:`with_memory`)."""
        block = await self.engine.memory.prompt_block(window)
        if once:
            return with_memory(prompt, block)
        return f"{prompt}\n\n{block}" if block else prompt

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
