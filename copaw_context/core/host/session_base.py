"""What every adapter's ``HostSession`` holds and computes the same way: the agent, what its
hook hands it (:class:`SessionSetup`: the engine's scratch, the thinking policy the host's
formatter follows, the window, the compactor model), the saved state, the name of its
message form, the tool schemas as the JSON a request carries, its archive records, the
files whose ``Read`` result a context still holds, the status lines waiting for the host's
reply stream, and whether a step is the first of a reply."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from copaw_context.core.host.hook_events import fail_open
from copaw_context.core.host.protocol import ArchiveRecord, CompactorModel, Window

__all__ = ["STATUS_KEY", "SessionBase", "SessionSetup", "read_paths", "state_under", "take_status"]

STATUS_KEY = "status_lines"
"""Scratch key of the status lines waiting to be put into the host's reply stream."""

_REPLY_KEY = "checked_reply"
"""Scratch key of the reply whose steps saw every message compared once."""
_NONE = object()


@dataclass(frozen=True, slots=True)
class SessionSetup:
    """What a hook decides for each session it builds (``EngineHook.setup``)."""

    scratch: dict[str, Any]
    """The engine's cache for the agent (not saved)."""
    thinking: Any
    """Whether the model's formatter sends thinking blocks back (the host's policy form)."""
    window: Window
    compactor: CompactorModel | None
    separate_compactor: bool = False
    """Whether ``compactor`` is a model of its own (not the agent's)."""


class SessionBase:
    """The host-neutral half of a ``HostSession`` (an adapter adds the translation)."""

    FORM: ClassVar[str] = ""
    """The name of the host's serialised message form (``message_form``), e.g.
    ``"agentscope2.Msg"``."""

    def __init__(self, agent: Any, setup: SessionSetup, state: MutableMapping[str, Any]) -> None:
        self.agent = agent
        self._scratch = setup.scratch
        self._thinking = setup.thinking
        self._window = setup.window
        self._compactor = setup.compactor
        self._separate_compactor = setup.separate_compactor
        self._state = state

    def context_key(self) -> tuple[int, int] | None:
        """None: every step fingerprints the whole context (a host may do better)."""
        return None

    def part_objects(self, start: int = 0) -> Sequence[Sequence[object]] | None:
        """None: only messages that grew or shrank are viewed again (a host may do better:
        the parts each message holds, so a part replaced in place is seen)."""
        return None

    def others_may_edit(self) -> bool:
        """True: anything may have edited the context before any step (a host that knows
        better saves the step a look at every message)."""
        return True

    @property
    def model_key(self) -> str | None:
        """The model this session's calls go to, for what its overflow errors teach (None:
        one set of figures for every model the agent calls)."""
        return None

    @property
    def primary_model_key(self) -> str | None:
        """The agent's own model (whose figures versions before the keys saved)."""
        return None

    @property
    def agent_name(self) -> str:
        return str(self.agent.name)

    @property
    def message_form(self) -> str:
        return self.FORM

    @property
    def state(self) -> MutableMapping[str, Any]:
        return self._state

    @property
    def scratch(self) -> dict[str, Any]:
        return self._scratch

    def window(self) -> Window:
        return self._window

    def compactor_model(self) -> CompactorModel | None:
        return self._compactor

    def use_model_input(self, model_input: object) -> None:
        """The input about to be sent (see ``HostSession``); this base counts its own."""

    def has_separate_summary_model(self) -> bool:
        return self._separate_compactor

    def awaiting_confirmation(self) -> bool:
        """False: a host that runs every tool call at once has nothing waiting for the user."""
        return False

    async def show_status(self, line: str) -> None:
        """Kept in the scratch until the host's reply stream takes it (:func:`take_status`)."""
        self._scratch.setdefault(STATUS_KEY, []).append(line)

    def first_step_of(self, reply: object) -> bool:
        """Whether this step is the first of the host's ``reply`` (the caller may have edited
        the context since the last one); the next step of the same reply is not."""
        first: bool = self._scratch.get(_REPLY_KEY, _NONE) != reply
        self._scratch[_REPLY_KEY] = reply
        return first

    async def forget_reads(
        self, calls: Iterable[tuple[str, str]], clean: Callable[[set[str]], Awaitable[object]]
    ) -> None:
        """``clean(paths)``: the host forgets its ``Read`` cache of every file but ``paths``,
        those a ``Read`` call among ``calls`` (the kept context's) still holds (as the host's
        own compression does); a failure is logged."""
        with fail_open("could not clean the Read cache"):
            await clean(read_paths(calls))

    def schemas_json(self, tools: Sequence[Any]) -> str:
        """The tool schemas as JSON (the last one reused while the schemas are equal)."""
        tools = list(tools)
        if not tools:
            return ""
        cached = self._scratch.get("tool_schemas")
        if cached is not None and cached[0] == tools:
            return str(cached[1])
        text = json.dumps(tools, ensure_ascii=False, sort_keys=True)
        self._scratch["tool_schemas"] = (tools, text)
        return text

    def record(
        self,
        message: dict[str, Any],
        timestamp: str | None,
        archive_id: str,
        part_keys: Sequence[str],
    ) -> ArchiveRecord:
        """A serialised message as the archive stores it, in this session's form."""
        return ArchiveRecord(
            message=message,
            timestamp=timestamp,
            archive_id=archive_id,
            form=self.FORM,
            part_keys=tuple(part_keys),
        )


def read_paths(calls: Iterable[tuple[str, str]], tool: str = "Read") -> set[str]:
    """The ``file_path`` of every call of ``tool`` among ``(name, JSON input)`` calls (a
    host forgets its read cache of the other files once their result left the context)."""
    paths: set[str] = set()
    for name, tool_input in calls:
        if name != tool:
            continue
        try:
            path = json.loads(tool_input).get("file_path")
        except (ValueError, AttributeError):
            continue
        if isinstance(path, str):
            paths.add(path)
    return paths


def take_status(scratch: dict[str, Any]) -> list[str]:
    """The status lines waiting in an agent's scratch (:meth:`SessionBase.show_status`), taken."""
    lines: list[str] = scratch.pop(STATUS_KEY, None) or []
    return lines


def state_under(store: dict[str, Any], key: str, legacy: str) -> dict[str, Any]:
    """The engine's state in a host's per-agent ``store``, under ``key`` (created when
    missing; moved from ``legacy``, where earlier versions kept it, on first use)."""
    data = store.get(key)
    if not isinstance(data, dict):
        old = store.pop(legacy, None) if key != legacy else None
        data = old if isinstance(old, dict) else {}
        store[key] = data
    return data
