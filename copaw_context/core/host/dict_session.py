"""A ``HostSession`` over dict-block messages (AgentScope 1.x's ``Msg``, QwenPaw's too).

Views, edits and archive records of a message are :mod:`copaw_context.core.host.dict_blocks`'s;
an adapter adds where its messages are (:meth:`DictBlockSession.message`), how one is
rebuilt holding some of its blocks, serialised and loaded, and the rest of the protocol.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from copaw_context.core.host.dict_blocks import (
    archive_id,
    data_url,
    message_view,
    part_keys,
    set_data_text,
    set_result,
    set_text,
)
from copaw_context.core.host.protocol import ArchiveRecord, MessageView
from copaw_context.core.host.session_base import SessionBase

__all__ = ["DictBlockSession"]


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
