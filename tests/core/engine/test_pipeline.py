"""The engine's pipeline is data: a tuple of named steps, run in order, that a caller may
change; the engine exposes what a host calls and nothing else."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from copaw_context.core.context.step import Step, Turn
from copaw_context.core.engine import ContextEngine
from copaw_context.core.host.protocol import HostSession
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result, text, user

PIPELINE = ("memory", "flush", "cleanup", "prune", "compact", "manifest")
HOST_METHODS = {
    "on_tool_result",
    "before_reasoning",
    "call_model",
    "run_command",
    "report",
    "add_compaction_listener",
    "close",
}
DOCS = Path(__file__).parents[3] / "docs" / "architecture.md"


def test_the_pipeline_is_a_tuple_of_steps_in_the_documented_order(tmp_path: Path) -> None:
    engine = ContextEngine(engine_config(), tmp_path)
    assert isinstance(engine.pipeline, tuple)
    assert all(isinstance(step, Step) for step in engine.pipeline)
    assert tuple(step.name for step in engine.pipeline) == PIPELINE
    documented = re.search(r"pipeline = \((.*?)\n\)", DOCS.read_text(encoding="utf-8"), re.S)
    assert documented is not None, "docs/architecture.md shows the pipeline tuple"
    assert tuple(re.findall(r'"(\w+)"', documented.group(1))) == PIPELINE


def test_the_engine_exposes_only_what_a_host_calls(tmp_path: Path) -> None:
    engine = ContextEngine(engine_config(), tmp_path)
    methods = {
        name
        for name, member in inspect.getmembers(type(engine))
        if not name.startswith("_") and callable(member)
    }
    assert methods == HOST_METHODS
    for name in HOST_METHODS:
        assert getattr(ContextEngine, name).__doc__, f"{name} says when a host calls it"


def conversation(turns: int) -> list[FakeMessage]:
    messages: list[FakeMessage] = []
    for n in range(turns):
        messages.append(user(f"question {n}: " + "details " * 120))
        messages.append(
            FakeMessage(
                "assistant",
                [call(f"c{n}", "grep", "{}"), result(f"c{n}", "match " * 120), text(f"a{n}")],
            )
        )
    return messages


class _Recorder:
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    async def run(self, host: HostSession, turn: Turn) -> None:
        self.seen.append(self.name)


async def test_a_changed_pipeline_is_what_runs(tmp_path: Path) -> None:
    engine = ContextEngine(engine_config(window=4000), tmp_path)
    seen: list[str] = []
    first, *rest = engine.pipeline
    engine.pipeline = (first, _Recorder("before", seen), *rest, _Recorder("after", seen))
    host = FakeHost(conversation(14), window=4000)
    event = await engine.before_reasoning(host)
    assert seen == ["before", "after"]
    assert event is not None and event.kind == "compaction"  # the compact step still ran
    engine.pipeline = (first, _Recorder("only", seen))
    host = FakeHost(conversation(14), window=4000)
    assert await engine.before_reasoning(host) is None  # no compact step: no compaction
    assert seen[-1] == "only" and len(host.messages) == 28


def test_the_fake_host_is_a_whole_host_session() -> None:
    from copaw_context.core.host.protocol import HostSession

    members = {
        name
        for name in dir(HostSession)
        if not name.startswith("_") and name not in {"register", "mro"}
    }
    missing = sorted(name for name in members if not hasattr(FakeHost(), name))
    assert missing == []
    assert isinstance(FakeHost(), HostSession)
