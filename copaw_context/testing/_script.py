"""The step logic every scripted model shares, whatever AgentScope major it plays for.

A script is a list of steps; each model call consumes one: a list of blocks (the reply), a
callable that receives the call and returns blocks (sync or async), or an exception instance
that is raised. The blocks are the host's own (pydantic blocks in 2.x, TypedDicts in 1.x):
the host's model checks and copies them through ``check``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeAlias, TypeVar

__all__ = [
    "Script",
    "ScriptedSteps",
    "ScriptExhaustedError",
    "UnconsumedStepsError",
    "describe_step",
    "split_text",
]

B = TypeVar("B")
C = TypeVar("C")

AnyStep: TypeAlias = Sequence[Any] | Callable[[Any], Any] | BaseException
CheckBlocks: TypeAlias = Callable[[object, str], list[Any]]
"""Checks a step's blocks and returns copies: (blocks, where the step comes from)."""


class ScriptExhaustedError(AssertionError):
    """The model was called after its script ran out of steps."""


class UnconsumedStepsError(AssertionError):
    """`assert_complete` found steps that were never used."""


def describe_step(step: object) -> str:
    """A short description of a step, for error messages."""
    if isinstance(step, BaseException):
        return f"raise {type(step).__name__}({step})"
    if callable(step):
        return getattr(step, "__qualname__", type(step).__name__)
    blocks = step if isinstance(step, list | tuple) else [step]
    names = [
        str(block.get("type", "dict")) if isinstance(block, dict) else type(block).__name__
        for block in blocks
    ]
    return "[" + ", ".join(names) + "]"


def split_text(text: str, pieces: int = 3) -> list[str]:
    """``text`` in about ``pieces`` pieces, as a provider streams it."""
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class Script(Generic[B, C]):
    """The steps of one scripted model and which one is next."""

    def __init__(self, owner: str, check: CheckBlocks) -> None:
        self.owner = owner
        self._check = check
        self._steps: list[AnyStep] = []
        self._next = 0
        self.calls = 0

    def add(self, steps: Iterable[AnyStep]) -> None:
        """Append steps (checked now, so a bad script fails where it is written)."""
        start = len(self._steps)
        self._steps.extend(self._checked(step, start + i) for i, step in enumerate(steps))

    def _checked(self, step: object, index: int) -> AnyStep:
        if isinstance(step, type) and issubclass(step, BaseException):
            raise TypeError(
                f"script step {index}: pass an exception instance, e.g. {step.__name__}('...')"
            )
        if isinstance(step, BaseException) or callable(step):
            return step
        return self._check(step, f"script step {index}")

    @property
    def size(self) -> int:
        return len(self._steps)

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._next

    def assert_complete(self) -> None:
        """Raise `UnconsumedStepsError` unless every step was used."""
        if self.remaining:
            unused = ", ".join(
                describe_step(step) for step in self._steps[self._next : self._next + 5]
            )
            raise UnconsumedStepsError(
                f"ScriptedChatModel {self.owner!r}: {self.remaining} of {len(self._steps)} "
                f"step(s) were never used (called {self.calls} time(s)); next unused: {unused}"
            )

    async def run_next(self, call: C, tool_names: list[str], recent: str) -> list[B]:
        """The blocks of the next step for ``call`` (raising the step's exception)."""
        self.calls += 1
        if self._next >= len(self._steps):
            raise ScriptExhaustedError(
                f"ScriptedChatModel {self.owner!r} was called {self.calls} time(s) but "
                f"its script has only {len(self._steps)} step(s); add steps with add_steps(). "
                f"Tools offered: {tool_names}. Last messages:\n  {recent}"
            )
        index = self._next
        step = self._steps[index]
        self._next += 1
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            result = step(call)
            if inspect.isawaitable(result):
                result = await _awaited(result)
            where = f"script step {index} (callable {describe_step(step)})"
            return self._check(result, where)
        return self._check(step, f"script step {index}")


async def _awaited(result: Awaitable[Any]) -> Any:
    return await result


class ScriptedSteps:
    """What both majors' ``ScriptedChatModel`` offer over their :class:`Script`."""

    _script: Script[Any, Any]

    def add_steps(self, *steps: Any) -> None:
        """Append steps to the script."""
        self._script.add(steps)

    @property
    def remaining(self) -> int:
        """How many steps have not been used yet."""
        return self._script.remaining

    def assert_complete(self) -> None:
        """Raise `UnconsumedStepsError` unless every step was used."""
        self._script.assert_complete()
