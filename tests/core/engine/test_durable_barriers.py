"""The engine's barriers on the background group commit: a saved output is on disk before the
archive that names it is written, before a model call returns (a host saves its state after
the reply) and when the engine closes; the step itself never waits for it.

Every sync is held (``sync_gate``) until a barrier starts waiting; code that waited sees the
syncs recorded first, code that did not would run on with them held."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.engine import ContextEngine
from copaw_context.core.store import file_streams
from copaw_context.core.workspace import durable
from tests.core.sync_gate import SyncGate
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result, text, user


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


async def test_a_compaction_archives_only_once_the_saved_outputs_are_on_disk(
    tmp_path: Path, sync_gate: SyncGate, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = ContextEngine(engine_config(window=4000), tmp_path)
    host = FakeHost(conversation(14), window=4000)
    real_append = file_streams.append_lines

    def append_lines(path: Path, *args: Any) -> Any:
        sync_gate.note("archive", path.name)
        sync_gate.open.set()  # without a barrier: the syncs come after the lines
        return real_append(path, *args)

    monkeypatch.setattr(file_streams, "append_lines", append_lines)
    sync_gate.open_at_barrier()
    saved = await engine.context.store.save("full output\n" * 500)
    assert saved.read_text() == "full output\n" * 500  # readable while its sync is held
    event = await asyncio.wait_for(engine.before_reasoning(host), 60)
    assert event is not None and event.kind == "compaction"
    assert sync_gate.before(("file", saved.name), "archive"), sync_gate.events
    assert list(tmp_path.rglob("*.jsonl"))
    await engine.close()


async def test_a_model_call_returns_once_the_outputs_saved_before_it_are_on_disk(
    tmp_path: Path, sync_gate: SyncGate
) -> None:
    engine = ContextEngine(engine_config(), tmp_path)
    host = FakeHost(conversation(2))
    sync_gate.open_at_barrier()
    saved = await engine.context.store.save("output\n" * 100)

    async def send(model_input: str) -> str:
        return f"reply to {model_input}"

    async def rebuild() -> str:
        return "input"

    reply = await asyncio.wait_for(
        engine.call_model(host, "input", send, rebuild, lambda response: None), 60
    )
    sync_gate.note("returned")
    sync_gate.open.set()
    assert reply == "reply to input"
    assert sync_gate.before(("file", saved.name), "returned"), sync_gate.events
    await engine.close()


async def test_close_leaves_every_saved_output_on_disk(tmp_path: Path, sync_gate: SyncGate) -> None:
    engine = ContextEngine(engine_config(), tmp_path)
    sync_gate.open_at_barrier()
    saved = [await engine.context.store.save(f"output {n}\n" * 100) for n in range(3)]
    await asyncio.wait_for(engine.close(), 60)
    sync_gate.note("closed")
    sync_gate.open.set()
    assert durable.pending() == 0
    for path in saved:
        assert sync_gate.before(("file", path.name), "closed"), sync_gate.events


async def test_a_step_that_saves_does_not_wait_for_the_disk(
    tmp_path: Path, sync_gate: SyncGate
) -> None:
    """Stage 1 and the step before a model call finish with every sync held."""
    engine = ContextEngine(engine_config(window=32768), tmp_path)
    host = FakeHost(conversation(1))
    big = "line of a long tool output\n" * 4000
    parts, entry, _ = await engine.context.pruning.bound_fresh("grep", "{}", [big], {})
    assert entry.get("offloaded"), "stage 1 saved the output"
    await asyncio.wait_for(engine.before_reasoning(host), 60)
    assert Path(entry["offloaded"][0]).read_text() == big
    assert durable.pending() >= 1  # still held: the step did not wait
    sync_gate.open.set()
    await engine.close()
