"""A ``HostSession`` over dict-block messages (AgentScope 1.x's ``Msg``, QwenPaw's too).

Views, edits and archive records of a message are :mod:`copaw_context.core.host.dict_blocks`'s;
an adapter adds where its messages are (:meth:`DictBlockSession.message`), how one is
rebuilt holding some of its blocks, serialised and loaded, and the rest of the protocol.
:func:`fresh_dict_result` finds a fresh tool result among such messages for stage 1;
:func:`visible_entries`, :func:`committed_entries` and :func:`loaded_entries` keep a context
held as ``(message, marks)`` entries (AgentScope 1.x's ``InMemoryMemory.content``), whose
entries with a hidden mark are not the engine's and keep their places.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from copaw_context.core.host.dict_blocks import (
    archive_id,
    data_url,
    find_result,
    message_view,
    part_keys,
    result_meta,
    result_parts,
    set_data_text,
    set_result,
    set_text,
)
from copaw_context.core.host.hook_events import FreshResult
from copaw_context.core.host.protocol import ArchiveRecord, MessageView
from copaw_context.core.host.session_base import SessionBase

__all__ = [
    "DictBlockSession",
    "committed_entries",
    "fresh_dict_result",
    "loaded_entries",
    "visible_entries",
]

Entry = tuple[Any, list[str]]
"""A message and its marks."""


class DictBlockSession(SessionBase, ABC):
    """The dict-block half of a ``HostSession`` (``_thinking`` is one bool for all)."""

    @abstractmethod
    def message(self, index: int) -> Any:
        """Context message ``index`` (the host's own object, edited in place)."""

    @abstractmethod
    def with_blocks(self, msg: Any, parts: Sequence[int]) -> Any:
        """A copy of ``msg`` holding only the blocks at ``parts`` (same id)."""

    @abstractmethod
    def to_dict(self, msg: Any) -> dict[str, Any]:
        """``msg`` in the archive's form (:attr:`FORM`)."""

    @abstractmethod
    def from_dict(self, data: Mapping[str, Any], number: int) -> Any:
        """A message read from a file, checked (``ValueError`` naming message ``number``)."""

    def view(self, index: int, first_part: int = 0) -> MessageView:
        return message_view(self.message(index), self._thinking, first_part)

    def views_of(self, messages: Sequence[Mapping[str, Any]]) -> list[MessageView]:
        return [
            message_view(self.from_dict(m, n), self._thinking) for n, m in enumerate(messages, 1)
        ]

    def set_tool_result(
        self, index: int, part: int, output: Sequence[Any], meta: dict[str, Any]
    ) -> None:
        set_result(self.message(index), part, output, meta)

    def set_text(self, index: int, part: int, text: str) -> None:
        set_text(self.message(index), part, text)

    def data_url(self, index: int, part: int) -> str:
        return data_url(self.message(index), part)

    def set_data_text(self, index: int, part: int, text: str) -> None:
        set_data_text(self.message(index), part, text)

    def archive_record(self, index: int, parts: Sequence[int] | None) -> ArchiveRecord:
        msg = self.message(index)
        if parts is not None:
            msg = self.with_blocks(msg, parts)
        return self.record(self.to_dict(msg), msg.timestamp, archive_id(msg), part_keys(msg))


def fresh_dict_result(
    newest_first: Iterable[Any],
    tool_call: object,
    entries: Callable[[str], dict[str, Any]],
) -> FreshResult | None:
    """The newest stored result of the dict-block ``tool_call`` (``id``, ``name``, ``input``
    or ``raw_input``) among messages ``newest_first``, as stage 1 takes it: its metadata
    entry with ``entries(call_id)`` over it (what the tool's response carried). None when
    the call has no id or its result is not there."""
    call_id = tool_call.get("id") if isinstance(tool_call, dict) else None
    if not isinstance(tool_call, dict) or not isinstance(call_id, str):
        return None
    found = find_result(newest_first, call_id)
    if found is None:
        return None
    msg, part, block = found
    meta = {**result_meta(msg, call_id), **entries(call_id)}
    raw = tool_call.get("raw_input") or json.dumps(tool_call.get("input") or {})
    return FreshResult(
        str(tool_call.get("name")),
        str(raw),
        result_parts(block),
        meta,
        lambda parts, meta: set_result(msg, part, parts, meta),
    )


def visible_entries(entries: Sequence[Entry], hidden: frozenset[str]) -> list[int]:
    """The indices of the ``entries`` that are the engine's context: no mark in ``hidden``."""
    return [i for i, (_, marks) in enumerate(entries) if not hidden.intersection(marks)]


def committed_entries(
    entries: Sequence[Entry],
    visible: Sequence[int],
    keep: Sequence[tuple[int, Sequence[int] | None]],
    rebuild: Callable[[Any, Sequence[int]], Any],
) -> list[Entry]:
    """``entries`` after a commit of ``keep`` (context indices, i.e. into ``visible``, each
    with the parts it keeps or None for all, ``rebuild(msg, parts)``): the kept context
    entries with their marks, and every hidden entry in its place."""
    kept: dict[int, Entry] = {}
    for index, parts in keep:
        msg, marks = entries[visible[index]]
        kept[visible[index]] = (msg if parts is None else rebuild(msg, parts), marks)
    shown = set(visible)
    return [kept.get(i, entry) for i, entry in enumerate(entries) if i in kept or i not in shown]


def loaded_entries(
    entries: Sequence[Entry], hidden: frozenset[str], loaded: list[Any]
) -> list[Entry]:
    """The hidden ``entries``, then the ``loaded`` messages (no marks) as the context."""
    return [e for e in entries if hidden.intersection(e[1])] + [(m, []) for m in loaded]
