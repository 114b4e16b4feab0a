"""A random session driven through the ContextEngine and the fake host, checked every step.

``Op`` s are what a session does (a user turn, assistant text, single or parallel tool calls
with huge or tiny outputs, a pending call, thinking, a pin, ``/compact``, ``/clear``,
``/new``); :class:`EngineSession` applies them the way an agent framework would (a fresh
result bounded by stage 1 before it is stored, the pre-reasoning pipeline and the model-call
measure before every model call) and checks the invariants of docs/reliability.md after
each step (see :mod:`tests.reliability.invariants`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.engine import ContextEngine
from copaw_context.core.host.protocol import PartView
from copaw_context.testing import ScriptedTextModel
from tests.fake_host import FakeHost, FakeMessage, call, result, text
from tests.reliability.invariants import StepFigures, check_step
from tests.reliability.render import render_input
from tests.summaries import six_section_summary

__all__ = ["EngineSession", "Op", "OpKind", "TOOL_SCHEMAS", "engine_config"]

OpKind = Literal["user", "text", "tools", "pending", "thinking", "pin", "compact", "clear", "new"]

TOOL_SCHEMAS = json.dumps(
    [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"Run {name} on the workspace and return its output.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "A path."}},
                },
            },
        }
        for name in ("grep", "cat", "run_build")
    ]
)
_WORDS = [
    "build",
    "parser",
    "error",
    "warning",
    "module",
    "cache",
    "config",
    "retry",
    "shard",
    "worker",
    "deploy",
]
_CJK = "数据库压缩归档上下文窗口摘要工具结果错误配置部署缓存"
_ids = itertools.count(1)


@dataclass(frozen=True)
class Op:
    """One thing a session does; sizes are in bytes (about)."""

    kind: OpKind
    size: int = 0
    count: int = 1
    cjk: bool = False
    sent: bool = True


def filler(size: int, seed: int, cjk: bool = False) -> str:
    """About ``size`` bytes of text, lines of words (CJK: 3 bytes a character)."""
    if cjk:
        chars = max(1, size // 3)
        body = "".join(_CJK[(seed + i) % len(_CJK)] for i in range(chars))
        return "\n".join(body[i : i + 40] for i in range(0, len(body), 40))
    words = [f"{_WORDS[(seed + i) % len(_WORDS)]}{(seed * 7 + i) % 97}" for i in range(size // 8)]
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return "\n".join(lines) or f"ok {seed}"


def engine_config(window: int, compactor: str, recent_n: int = 2) -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": {"enabled": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": compactor,
                    "tool_result_pruning_config": {"pruning_recent_n": recent_n},
                },
            }
        }
    )


@dataclass
class EngineSession:
    """One agent's context in a fake host, driven by the engine."""

    workspace: Path
    window: int
    compactor: str = "extractive"
    reuse_ids: bool = False
    recent_n: int = 2
    figures: StepFigures = field(default_factory=StepFigures)

    def __post_init__(self) -> None:
        self.engine = ContextEngine(
            engine_config(self.window, self.compactor, self.recent_n), self.workspace
        )
        model = ScriptedTextModel(default=lambda request: six_section_summary(3))
        self.host = FakeHost(
            window=self.window, tool_schemas=TOOL_SCHEMAS, compactor=model, model_name="gpt-4o"
        )
        self.created: set[str] = set()
        self.latest_user: str | None = None
        self.seed = 0

    # ------------------------------------------------------------------ ops
    async def apply(self, op: Op) -> None:
        """Apply ``op``; run a checked step when a model call would follow it."""
        self.seed += 1
        if op.kind in ("compact", "clear", "new"):
            await self._command(op)
        elif op.kind == "user":
            self._user(op)
            await self.step()
        elif op.kind == "tools":
            await self._tools(op.count, op.size, op.cjk)
            await self.step()
        elif op.kind == "pending":
            await self._pending(op)
        elif op.kind == "text":
            self._reply().parts.append(text(filler(op.size, self.seed, op.cjk)))
        elif op.kind == "thinking":
            thought = PartView("thinking", filler(op.size, self.seed), sent=op.sent)
            self._reply().parts.append(thought)
        elif op.kind == "pin":
            self._pin()

    def _user(self, op: Op) -> None:
        message = FakeMessage("user", [text(filler(op.size, self.seed, op.cjk))], name="user")
        self.host.messages.append(message)
        self.latest_user = message.msg_id

    def _reply(self) -> FakeMessage:
        """The assistant reply being written (a new one after a user turn; a model is only
        called after a user turn, so an empty context gets one first)."""
        if not self.host.messages:
            self._user(Op("user", size=40))
        if self.host.messages[-1].role != "assistant":
            self.host.messages.append(FakeMessage("assistant", []))
        return self.host.messages[-1]

    def _call_ids(self, count: int) -> list[str]:
        if self.reuse_ids:  # some servers number the calls of each turn from 0
            return [f"call_{i}" for i in range(count)]
        return [f"call_{next(_ids)}" for _ in range(count)]

    async def _results(self, ids: list[str], size: int, cjk: bool) -> list[PartView]:
        parts: list[PartView] = []
        for n, call_id in enumerate(ids):
            output = filler(size, self.seed + n, cjk)
            bounded, meta = await self.engine.on_tool_result(
                self.host, "grep", json.dumps({"path": f"src/m{n}.py"}), [output], {}
            )
            parts.append(result(call_id, str(bounded[0]), "grep", **meta))
        return parts

    async def _tools(self, count: int, size: int, cjk: bool) -> None:
        ids = self._call_ids(count)
        reply = self._reply()
        reply.parts += [
            call(i, "grep", json.dumps({"path": f"src/m{n}.py"})) for n, i in enumerate(ids)
        ]
        reply.parts += await self._results(ids, size, cjk)

    async def _pending(self, op: Op) -> None:
        """A call without its result through one pre-reasoning pass (awaiting confirmation),
        then answered."""
        ids = self._call_ids(op.count)
        reply = self._reply()
        reply.parts += [call(i, "grep", json.dumps({"path": "src/x.py"})) for i in ids]
        self.host.awaiting = True
        await self.step(model_call=False)
        self.host.awaiting = False
        self._reply().parts += await self._results(ids, op.size, op.cjk)
        await self.step()

    def _pin(self) -> None:
        small = [m for m in self.host.messages if sum(len(p.text) for p in m.parts) < 300]
        if small and sum(m.pinned for m in self.host.messages) < 2:
            small[self.seed % len(small)].pinned = True

    async def _command(self, op: Op) -> None:
        self._remember()
        note = "keep the module names" if op.kind == "compact" else ""
        reply = await self.engine.run_command(self.host, op.kind, note)
        assert reply.strip(), f"/{op.kind} gave no reply"
        if op.kind in ("clear", "new") and not self.host.awaiting:
            self.latest_user = None
        ids = [m.msg_id for m in self.host.messages]
        if op.kind == "compact" and self.latest_user is not None and self.latest_user not in ids:
            # /compact took a finished turn whole: the request left with its answer (the
            # membership check below finds both in the archive), and nothing of it stayed.
            assert not self.host.awaiting, "/compact took the request of an open turn"
            self.latest_user = None
        await check_step(self, model_call=False)

    # ------------------------------------------------------------------ steps
    def _remember(self) -> None:
        for message in self.host.messages:
            ids = message.ids()
            for index, part in enumerate(message.parts):
                self.created.add(f"{message.msg_id}/{part.kind}:{ids[index]}")

    async def step(self, *, model_call: bool = True) -> None:
        """The pre-reasoning pipeline and (unless a call is pending) the model-call measure,
        then the checks."""
        self._remember()
        await self.engine.before_reasoning(self.host)
        if model_call:
            await self.engine.input_meter.measure(self.host)
        await check_step(self, model_call=model_call)

    def context_keys(self) -> list[str]:
        keys: list[str] = []
        for message in self.host.messages:
            ids = message.ids()
            keys += [f"{message.msg_id}/{p.kind}:{ids[i]}" for i, p in enumerate(message.parts)]
        return keys

    def model_input(self) -> dict[str, list[dict[str, Any]]]:
        """The host's context as each provider would receive it."""
        return render_input(self.host.system_prompt, self.host.summary, self.host.messages)
