"""A random session of a real agent (any major, through a ``HostDriver``), checked at every
model call and after every turn.

A :class:`Turn` is a user request (or ``/compact``, ``/clear``) and the actions the scripted
model takes for it: tool calls (parallel, reused ids, huge or tiny outputs, CJK), thinking,
and a closing text. The scripted policy checks each model input as the model receives it
(valid for every provider, within the window, the latest request in it) and the suite
checks after each turn that every part is in exactly one of the context and the archive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.events import ContextEvent
from tests.reliability.drivers import HostDriver, ToolCall
from tests.reliability.engine_session import filler
from tests.reliability.invariants import (
    StepFigures,
    archived_keys,
    check_membership,
    check_model_input,
)
from tests.summaries import six_section_summary

__all__ = ["Action", "AgentSession", "Turn", "agent_config", "produce"]


def produce(size: int, seed: int, cjk: bool = False) -> str:
    """Produce the output of a test job.

    Args:
        size (`int`): About how many bytes to produce.
        seed (`int`): Which output.
        cjk (`bool`): Chinese text instead of English.
    """
    return filler(size, seed, cjk)


@dataclass(frozen=True)
class Action:
    """One model step: tool calls (``sizes`` of their outputs) or a closing text."""

    sizes: tuple[int, ...] = ()
    cjk: bool = False
    reuse_ids: bool = False
    thinking: int = 0


@dataclass(frozen=True)
class Turn:
    request: str
    actions: tuple[Action, ...] = ()
    pinned: bool = False


def agent_config(window: int, compactor: str, **light: Any) -> RunningConfig:
    """The suite's agent config (``light``: more ``light_context_config`` settings)."""
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": {"enabled": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": compactor,
                    **light,
                },
            }
        }
    )


@dataclass
class AgentSession:
    driver: HostDriver
    workspace: Path
    window: int
    compactor: str = "extractive"
    figures: StepFigures = field(default_factory=StepFigures)
    created: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    events: list[ContextEvent] = field(default_factory=list)
    compactor_model: Any = None
    light: dict[str, Any] = field(default_factory=dict)
    last_input: list[dict[str, Any]] = field(default_factory=list)

    async def start(self) -> None:
        self.hook = self.driver.hook(
            agent_config(self.window, self.compactor, **self.light),
            self.workspace,
            compactor=self.compactor_model,
            on_event=self.events.append,
        )
        self.model = self.driver.model([self.step] * 4000, context_size=self.window)
        self.agent = await self.driver.agent(self.hook, self.model, [produce])
        self.plan: list[Action] = []
        self.request = ""
        self.seed = 0
        self.reuse_ids = False
        self.reused_in_turn = False

    async def restart(self) -> None:
        """A new process: a new hook and agent restored from the agent's saved state."""
        saved = self.driver.save_state(self.agent)
        seed, reuse_ids = self.seed, self.reuse_ids
        await self.start()
        await self.driver.load_state(self.agent, saved)
        self.seed, self.reuse_ids = seed, reuse_ids

    async def pending(self) -> list[dict[str, Any]]:
        """The pending-archive buffer in the agent's session state."""
        state = await self.driver.engine_state(self.hook, self.agent)
        return list(state.get("pending_archive") or [])

    async def run(self, turn: Turn) -> None:
        """One user turn, then the membership check."""
        self.plan = list(turn.actions)
        self.reused_in_turn = False
        self.request = turn.request
        self.reuse_ids = self.reuse_ids or any(a.reuse_ids for a in turn.actions)
        reply = await self.driver.ask(self.agent, turn.request, pinned=turn.pinned)
        assert reply.strip(), f"no reply to {turn.request[:60]!r}"
        assert not self.problems, self.problems[:3]
        if turn.request in ("/clear", "/new"):
            self.request = ""
        await self.check_membership()

    async def check_membership(self) -> None:
        context = self.driver.context_keys(self.agent)
        self.created.update(context)
        archived = archived_keys(self.workspace / "dialog", await self.pending())
        check_membership(context, archived, self.created, self.figures)
        self.figures.steps += 1

    async def step(self, call: Any) -> list[Any]:
        """The scripted model: a summary for the compactor, else the next planned action,
        after checking the input it received."""
        if not self.driver.tool_schemas(call):
            return self.driver.text_step(six_section_summary(4))
        await self._check(call)
        action = self.plan.pop(0) if self.plan else Action()
        self.seed += 1
        thinking = filler(action.thinking, self.seed) if action.thinking else ""
        if not action.sizes:
            return self.driver.text_step(f"done {self.seed}", thinking)
        # Servers that reuse ids number the calls of each reply from 0 (AgentScope keeps one
        # message per reply, so an id repeats across turns, not within one reply).
        reuse = action.reuse_ids and not self.reused_in_turn
        self.reused_in_turn = self.reused_in_turn or reuse
        calls: list[ToolCall] = [
            (
                "produce",
                {"size": size, "seed": self.seed * 10 + n, "cjk": action.cjk},
                f"call_{n}" if reuse else None,
            )
            for n, size in enumerate(action.sizes)
        ]
        return self.driver.tool_step(calls, thinking)

    async def _check(self, call: Any) -> None:
        self.created.update(self.driver.context_keys(self.agent))
        formatted = await self.driver.provider_inputs(call)
        self.last_input = formatted["openai"]
        try:
            check_model_input(
                formatted,
                self.driver.tool_schemas(call),
                self.window,
                self.figures,
                unique_ids=not self.reuse_ids,
            )
            self._check_request(formatted["openai"])
        except AssertionError as problem:
            self.problems.append(str(problem))

    def _check_request(self, formatted: list[dict[str, Any]]) -> None:
        if not self.request or self.request.startswith("/"):
            return
        head = self.request[:60]
        texts = [_text(m.get("content")) for m in formatted[1:]]
        # Not the summary message (it may quote the request).
        found = [text for text in texts if head in text and "## Goal" not in text]
        assert found, f"the latest request {head!r} is not in the model input"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")
