"""The decisions a hook takes around each event of its host, the same for every host, each
fail-open (:func:`fail_open`): whether and how stage 1 bounds a fresh tool result
(:meth:`HookEvents.bound_result`), the pipeline before a reasoning step (``before_step``,
with the host's own data limit, ``limit_data``), the repaired tool pairing of a model input
(``repaired``), the model call and an input refitted for another model (``model_call``,
``refit``, ``calling``), MEMORY.md in the system prompt (``memory_prompt``), which model
call is the engine's (``mark_reasoning``, ``takes_call``, ``before_unhooked_call``), tools
added on the next call (``tools_pending``), the host's own compression refused
(``refuse_host_compression``) and which reply input is a chat command (:func:`command_of`).
``EngineHook`` (``hook_base.py``) is one; an adapter translates its host's events into these
calls."""

from __future__ import annotations

import contextlib
import logging
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, MutableSet
from dataclasses import dataclass
from typing import Any, TypeVar

from copaw_context.core.commands import ChatCommand, parse_command
from copaw_context.core.context.report import Limits
from copaw_context.core.engine import ContextEngine
from copaw_context.core.host.prompt import with_memory
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.model_call import UsageReader

__all__ = [
    "CALL_MODEL",
    "REASONING_CALL",
    "FreshResult",
    "HookEvents",
    "command_of",
    "fail_open",
    "user_command",
    "warn_replacing_tool",
    "warn_state_dropped",
]

logger = logging.getLogger("copaw_context")

T = TypeVar("T")

CALL_MODEL = "call_model"
"""Scratch key of :meth:`HookEvents.calling`: the model a call is being prepared for."""

REASONING_CALL = "reasoning_call"
"""Scratch key of :meth:`HookEvents.mark_reasoning`: the next model call is the reasoning call
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


def command_of(inputs: object, user_text: Callable[[object], str | None]) -> ChatCommand | None:
    """The chat command a host's reply ``inputs`` hold: only a lone message (one, or a list
    of one) that ``user_text`` reads as a user's text (None: not a user message) can be one."""
    if isinstance(inputs, list):
        if len(inputs) != 1:
            return None
        inputs = inputs[0]
    return parse_command(user_text(inputs))


def user_command(inputs: object, message_type: type) -> ChatCommand | None:
    """:func:`command_of` over a host's messages of ``message_type`` (both AgentScope majors'
    ``Msg``): only a ``"user"`` message's text (``get_text_content()``) can hold a command."""

    def user_text(msg: object) -> str | None:
        if not isinstance(msg, message_type):
            return None
        message: Any = msg  # a host's Msg: ``role`` and ``get_text_content()``
        if message.role != "user":
            return None
        text: str | None = message.get_text_content()
        return text

    return command_of(inputs, user_text)


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


class HookEvents(ABC):
    """The host-neutral decisions of a hook over its ``engine`` (a mixin of ``EngineHook``,
    which sets the scratch and the pending tools up in ``start_engine``)."""

    engine: ContextEngine
    _scratch: weakref.WeakKeyDictionary[Any, dict[str, Any]]
    _pending_tools: weakref.WeakSet[Any]

    @abstractmethod
    async def session(self, agent: Any) -> HostSession:
        """The engine's view of ``agent`` (the adapter's own)."""

    def scratch(self, agent: Any) -> dict[str, Any]:
        """The engine's cache for ``agent`` (not saved)."""
        return self._scratch.setdefault(agent, {})

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
        if self.engine.is_light and enabled:
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
        return bool(self.scratch(agent).pop(REASONING_CALL, False)) and self.engine.is_light

    async def before_unhooked_call(self, agent: Any, step: Callable[[], Awaitable[None]]) -> None:
        """The pipeline (``step()``, the host's pre-reasoning) before a model call of ``agent``
        that runs no hook of its own (AgentScope 1.x's summary after ``max_iters``); that call
        then goes to the model as it is, not through the engine: its prompt ends with the
        host's own hint, which a recovery could not rebuild."""
        await step()
        self.takes_call(agent)

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
        if not self.engine.is_light or (pruning_only and not self.engine.context.pruning.enabled):
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
        if not self.engine.is_light:
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
        ``most`` of them (messages may change in place: the ledger views them again). A
        failure of the host's limit keeps the blocks (logged)."""
        ledger, _ = await self.engine.context.sync(session)
        if ledger.data > most:  # else nothing to limit
            with fail_open("could not apply the host's own limit on data blocks"):
                await limit()
            ledger.reset()

    def repaired(
        self, agent: Any, messages: T, repair: Callable[[T, MutableSet[str]], T | None]
    ) -> T:
        """The messages of a model input with their tool pairing repaired by ``repair``
        (None: nothing to repair; each repair logged once per agent); as they are when the
        context is not managed or the check failed (logged). The context is not changed."""
        if not self.engine.is_light:
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
        if not self.engine.is_light:
            return model_input
        fitted = model_input
        with fail_open("could not fit the input to the fallback model"):
            with calling:
                event = await self.engine.before_reasoning(session)
            if event is not None or self.engine.memory.enabled:
                fitted = await rebuild()
        return fitted

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
    ) -> Any:
        """``agent``'s model call through the engine (``ContextEngine.call_model``). To a
        ``fallback`` model (not the one the step before fitted the context to) the input is
        refitted first (:meth:`refit`), and its usage does not calibrate the agent's count."""
        if fallback is not None:
            calling = self.calling(agent, fallback)
            model_input = await self.refit(session, model_input, rebuild, calling)
        calibrate = fallback is None
        return await self.engine.call_model(
            session, model_input, send, rebuild, usage, calibrate=calibrate
        )

    async def memory_prompt(self, prompt: str, window: int, *, once: bool = False) -> str:
        """``prompt`` and the MEMORY.md block (bounded by the ``window`` in tokens) after it;
        with ``once``, unless the prompt already holds MEMORY.md (:func:`with_memory`)."""
        block = await self.engine.memory.prompt_block(window)
        if once:
            return with_memory(prompt, block)
        return f"{prompt}\n\n{block}" if block else prompt
