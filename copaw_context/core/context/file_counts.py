"""The offload file names a ledger's parts reference, counted as parts come and go.

The session's offload manifest is recorded twice a step; rebuilding the names from every
part cost 1.4 ms a step at 1,000 messages. The counts are kept as the ledger adds and removes
a message's entry, so reading them costs the number of names, not of parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

__all__ = ["OffloadCounts"]


class _Part(Protocol):
    @property
    def offloads(self) -> frozenset[str]: ...


class _Message(Protocol):
    @property
    def parts(self) -> Iterable[_Part]: ...


class OffloadCounts:
    """Per offload file name, how many parts of the ledger's messages reference it."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, message: _Message) -> None:
        """Count the names ``message``'s parts reference."""
        counts = self._counts
        for part in message.parts:
            for name in part.offloads:
                counts[name] = counts.get(name, 0) + 1

    def remove(self, message: _Message) -> None:
        """Uncount the names ``message``'s parts reference (as :meth:`add` counted them)."""
        counts = self._counts
        for part in message.parts:
            for name in part.offloads:
                if counts[name] > 1:
                    counts[name] -= 1
                else:
                    del counts[name]

    def names(self) -> set[str]:
        """Every name some part references (a new set)."""
        return set(self._counts)
