"""The memory summaries left unfinished, in the workspace store (issue 20), on a real
PostgreSQL: a replica stopped mid-summary whose folder is then deleted leaves it to the next
replica of the agent (a new, empty folder), which writes it into the shared daily log once;
two replicas starting together run it once (its lease), and so do a replica running it and
one starting meanwhile; with the store down at the save the
local file keeps it, the summary still runs, and the folder's next start with the store up
writes it. Without a store nothing of this happens (tests/core/memory/test_memory_lifecycle.py
keeps the files' behaviour)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.memory.service import MemoryService
from copaw_context.core.toolresults.store_blobs import StoreBlobs
from copaw_context.testing import ScriptedTextModel
from tests.memory_doubles import record
from tests.pg_server import pg_dsn
from tests.store_replicas import memory_replica, stored_stream

__all__ = ["pg_dsn"]

LESSON = "Never run the migration on the prod database without a backup."
ENTRY = "Lesson: back up prod before a migration"


def settings(dsn: str) -> RunningConfig:
    """The store in ``dsn``; a model call that never times out, a close() that never waits."""
    light = {"store": {"dsn": dsn}, "compactor_timeout_seconds": 3600}
    running = {"light_context_config": light, "memory": {"close_timeout_seconds": 0}}
    return parse_running_config({"running": running})


@pytest.fixture
def agent_id() -> str:
    return f"agent-{uuid.uuid4().hex}"


RESUMING = "summaries left unfinished earlier; running them"
"""What a start logs just before it schedules what it found."""


class _Heard(logging.Handler):
    def __init__(self, text: str, times: int) -> None:
        super().__init__(logging.INFO)
        self.text, self.left, self.event = text, times, asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.left -= 1
            if self.left <= 0:
                self.event.set()


Listen = Callable[[str, int], asyncio.Event]


@pytest.fixture
def heard(caplog: pytest.LogCaptureFixture) -> Iterator[Listen]:
    """``heard(text, times)``: an event set once ``copaw_context`` logged ``text`` ``times``
    times (from then on)."""
    caplog.set_level(logging.INFO, logger="copaw_context")
    logger = logging.getLogger("copaw_context")
    handlers: list[logging.Handler] = []

    def listen(text: str, times: int) -> asyncio.Event:
        handler = _Heard(text, times)
        logger.addHandler(handler)
        handlers.append(handler)
        return handler.event

    yield listen
    for handler in handlers:
        logger.removeHandler(handler)


def pending_files(workspace: Path) -> list[Path]:
    return sorted((workspace / "memory" / ".pending").glob("*.json"))


async def shared_log(dsn: str, agent_id: str, service: MemoryService) -> str:
    """Today's daily log as the database holds it."""
    day = service.tools.files.now().date().isoformat()
    entries = await stored_stream(dsn, agent_id, f"memory/{day}.md")
    return "".join(entry.data.decode() + "\n" for entry in entries)


async def pending_keys(dsn: str, agent_id: str) -> list[str]:
    return [e.key or "" for e in await stored_stream(dsn, agent_id, "memory/.pending.jsonl")]


async def dies_mid_summary(config: RunningConfig, root: Path, agent_id: str) -> None:
    """A replica whose summary never finishes (a hung model, close() not waiting), then
    its folder deleted: only the store still knows the summary."""
    service = memory_replica(config, root, agent_id)
    hung = ScriptedTextModel(gate=asyncio.Event())
    service.bind_model(hung)
    service.on_compaction(record(LESSON))
    await asyncio.wait_for(hung.called.wait(), 60)
    await asyncio.wait_for(service.close(), 60)
    assert len(pending_files(root)) == 1  # the local copy, as without a store
    shutil.rmtree(root)


async def starts(service: MemoryService, model: ScriptedTextModel) -> None:
    """A replica's start: the model bound (what was left is resumed), its jobs done."""
    service.bind_model(model)
    assert service.summariser is not None
    await asyncio.wait_for(service.summariser.drain(), 120)
    await service.close()


async def test_a_replica_that_never_comes_back_leaves_its_summary_to_the_next(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = settings(pg_dsn)
    await dies_mid_summary(config, tmp_path / "a", agent_id)
    (opened,) = await pending_keys(pg_dsn, agent_id)
    assert opened.startswith("open/")

    b = memory_replica(config, tmp_path / "b", agent_id)
    answers = ScriptedTextModel([f"- {ENTRY}"])
    await starts(b, answers)
    assert len(answers.calls) == 1 and LESSON in answers.calls[0].request
    assert (await shared_log(pg_dsn, agent_id, b)).count(ENTRY) == 1
    assert (await b.tools.files.read_log(b.tools.files.now().date())).count(ENTRY) == 1
    assert await pending_keys(pg_dsn, agent_id) == [opened, "done/" + opened[5:]]
    assert pending_files(tmp_path / "b") == []

    c = memory_replica(config, tmp_path / "c", agent_id)  # a later start: nothing left
    later = ScriptedTextModel([f"- {ENTRY}"])
    await starts(c, later)
    assert later.calls == [] and (await shared_log(pg_dsn, agent_id, c)).count(ENTRY) == 1


async def test_two_replicas_starting_together_run_it_once(
    pg_dsn: str, tmp_path: Path, agent_id: str, heard: Listen
) -> None:
    config = settings(pg_dsn)
    await dies_mid_summary(config, tmp_path / "a", agent_id)
    b = memory_replica(config, tmp_path / "b", agent_id)
    c = memory_replica(config, tmp_path / "c", agent_id)
    # The first call waits until both replicas have read the summary as open and scheduled
    # it: the second then waits for the first's lease, and finds it done.
    both = asyncio.Event()

    async def answer(request: str) -> str:
        await both.wait()
        return f"- {ENTRY}"

    models = [ScriptedTextModel(default=answer) for _ in (b, c)]
    resumed = heard(RESUMING, 2)
    for service, model in zip((b, c), models, strict=True):
        service.bind_model(model)
    summarisers = [s.summariser for s in (b, c)]
    assert summarisers[0] is not None and summarisers[1] is not None

    await asyncio.wait_for(resumed.wait(), 60)
    assert all(s.pending == 1 for s in summarisers)
    both.set()
    await asyncio.wait_for(asyncio.gather(*(s.drain() for s in summarisers)), 120)
    await asyncio.gather(b.close(), c.close())
    assert sum(len(m.calls) for m in models) == 1
    assert (await shared_log(pg_dsn, agent_id, b)).count(ENTRY) == 1
    keys = await pending_keys(pg_dsn, agent_id)
    assert [k.partition("/")[0] for k in keys] == ["open", "done"]


async def test_a_replica_starting_while_another_runs_the_summary_leaves_it_to_it(
    pg_dsn: str, tmp_path: Path, agent_id: str, heard: Listen
) -> None:
    config = settings(pg_dsn)
    a = memory_replica(config, tmp_path / "a", agent_id)
    gate = asyncio.Event()
    slow = ScriptedTextModel([f"- {ENTRY}"], gate=gate)
    a.bind_model(slow)
    a.on_compaction(record(LESSON))
    await asyncio.wait_for(slow.called.wait(), 60)  # saved, open in the store, running

    b = memory_replica(config, tmp_path / "b", agent_id)
    idle = ScriptedTextModel([f"- {ENTRY}"])
    resumed = heard(RESUMING, 1)
    b.bind_model(idle)
    assert a.summariser is not None and b.summariser is not None

    await asyncio.wait_for(resumed.wait(), 60)  # b read it as open: it waits for a's lease
    assert b.summariser.pending == 1
    gate.set()
    await asyncio.wait_for(asyncio.gather(a.summariser.drain(), b.summariser.drain()), 120)
    assert len(slow.calls) == 1 and idle.calls == []
    assert (await shared_log(pg_dsn, agent_id, b)).count(ENTRY) == 1
    await asyncio.gather(a.close(), b.close())


async def test_a_store_down_at_the_save_keeps_the_local_file_and_the_summary_runs(
    pg_dsn: str, tmp_path: Path, agent_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    down = settings("postgresql://nobody@127.0.0.1:1/none")
    service = memory_replica(down, tmp_path / "ws", agent_id)
    first = ScriptedTextModel([f"- {ENTRY}"])
    service.bind_model(first)
    assert service.summariser is not None
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        service.on_compaction(record(LESSON))
        await asyncio.wait_for(service.summariser.drain(), 120)
    await service.close()
    assert len(first.calls) == 1  # the summary ran
    assert "kept only in this replica's folder" in caplog.text
    assert len(pending_files(tmp_path / "ws")) == 1  # its log could not be written: kept

    up = settings(pg_dsn)  # the same folder's next start, the store back
    again = MemoryService(up, tmp_path / "ws", store=StoreBlobs(up, tmp_path / "ws"))
    second = ScriptedTextModel([f"- {ENTRY}"])
    await starts(again, second)
    assert len(second.calls) == 1
    assert (await shared_log(pg_dsn, agent_id, again)).count(ENTRY) == 1
    assert pending_files(tmp_path / "ws") == []
    keys = await pending_keys(pg_dsn, agent_id)
    assert [k.partition("/")[0] for k in keys] == ["open", "done"]
