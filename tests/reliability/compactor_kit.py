"""A compactor that fails on cue, the events it causes, and one turn of a session."""

from __future__ import annotations

from typing import Any

from tests.reliability.agent_session import Action, Turn
from tests.reliability.engine_session import filler

__all__ = ["WINDOW", "Events", "turn"]


WINDOW = 12000


class Events(list[Any]):
    """The session's events; for each, how many compactor calls had been made by then."""

    def __init__(self, calls: list[int]) -> None:
        super().__init__()
        self.calls = calls
        self.marks: list[int] = []

    def append(self, event: Any) -> None:
        super().append(event)
        self.marks.append(len(self.calls))


def turn(number: int) -> Turn:
    request = f"request {number}: " + filler(200, number)
    return Turn(request, (Action(sizes=(9000, 2000)), Action(sizes=(6000,), thinking=200)))
