"""One replica of an agent for the multi-replica test (issue 20): an OS process with its own
folder, sharing one PostgreSQL store (the same agent id) with the others.

``python -m tests.reliability.replica_worker turns DSN FOLDER AGENT_ID WORKER [compaction]``
takes turns on the sessions as AgentScope's agent service does: a session lock (a lease
with a time limit, renewed), the saved agent state loaded, a new agent and hook over this
replica's folder, one user turn, the state saved, the lock released; until every session has
had :data:`TURNS` turns. Each turn's tools print a large output (offloaded: its notice names
a blob of the store), edit MEMORY.md and log a note; turn 1's request is oversized (cut, the
whole saved as a blob of ``dialog/requests/``); the small window makes compactions
(an LLM compactor, scripted). With ``compaction`` the process SIGKILLs itself in its first
compaction, right after the archive append and the context's commit, before the turn's
state is saved: the next replica redoes that turn from the state before it.

``python -m tests.reliability.replica_worker consolidate DSN FOLDER AGENT_ID WORKER
[consolidation]`` runs the daily consolidation once (one replica at a time: the store's
lease, of 600 s); with ``consolidation`` it SIGKILLs itself inside the consolidation's model
call, holding the lease, which the next replica takes at once (the advisory lock went with
the process).

Everything runs on the installed AgentScope major (:func:`available_drivers`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import ContextEvent
from copaw_context.core.memory.shared import SharedMemory
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import Lease
from copaw_context.testing import ScriptedTextModel
from tests.reliability.drivers import HostDriver, available_drivers
from tests.reliability.engine_session import filler
from tests.summaries import six_section_summary

__all__ = ["SESSIONS", "TURNS", "code", "replica_config", "service_id"]

SESSIONS = ("alpha", "beta")
TURNS = 6
WINDOW = 4000
_SESSION_LEASE = 8.0


def code(session: str, turn: int) -> str:
    """The fact planted in ``session``'s turn ``turn`` (one word, found by recall)."""
    return f"K{session}{turn:02d}q"


def service_id(agent_id: str) -> str:
    """Where the service's own records (session states, session locks) live in the store."""
    return f"service-{agent_id}"


def replica_config(dsn: str) -> RunningConfig:
    light = {
        "token_counter": "o200k_base",
        "compactor": "llm",
        "store": {"dsn": dsn},
        "tool_result_pruning_config": {
            "pruning_recent_msg_max_bytes": 3000,
            "pruning_old_msg_max_bytes": 600,
        },
    }
    memory = {"summarise_on_compact": False}
    return parse_running_config(
        {"running": {"max_input_length": WINDOW, "memory": memory, "light_context_config": light}}
    )


def job(seed: int, size: int) -> str:
    """Run a job and return its log.

    Args:
        seed (`int`): Which job.
        size (`int`): About how many bytes of log.
    """
    return f"BEGIN job {seed}\n{filler(size, seed)}\nEND job {seed}\n"


class Policy:
    """The scripted agent model: a job, a MEMORY.md edit and a log note, then an answer."""

    def __init__(self, driver: HostDriver, session: str, turn: int) -> None:
        self.driver, self.session, self.turn = driver, session, turn

    def __call__(self, call: Any) -> list[Any]:
        if call.formatted[-1].get("role") == "tool":
            return self.driver.text_step(f"done with turn {self.turn}")
        fact = code(self.session, self.turn)
        ids = [f"{self.session}-{self.turn}-{n}-{uuid.uuid4().hex[:8]}" for n in range(3)]
        return self.driver.tool_step(
            [
                ("job", {"seed": self.turn, "size": 7000}, ids[0]),
                ("memory_edit", {"section": "Codes", "content": f"- code {fact}"}, ids[1]),
                ("memory_append_log", {"text": f"- note {fact}"}, ids[2]),
            ]
        )


def compactor_step(driver: HostDriver) -> Any:
    def answer(call: Any) -> list[Any]:
        return driver.text_step(six_section_summary(3))

    return answer


async def _renew(store: PostgresStore, held: list[Lease]) -> None:
    while True:
        await asyncio.sleep(_SESSION_LEASE / 4)
        renewed = await store.renew_lease(held[0], _SESSION_LEASE)
        if renewed is None:
            return
        held[0] = renewed


async def one_turn(
    driver: HostDriver, service: PostgresStore, folder: Path, dsn: str, session: str, kill: bool
) -> bool:
    """One turn of ``session`` under its lock; ``False`` when it had all its turns."""
    key = f"sessions/{session}.json"
    doc = await service.get_document(key)
    saved = json.loads(doc.data) if doc.data else {"turn": 0, "agent": None}
    turn = saved["turn"]
    if turn >= TURNS:
        return False

    def on_event(event: ContextEvent) -> None:
        if kill and event.kind == "compaction":  # archived and committed, state not saved
            os.kill(os.getpid(), signal.SIGKILL)

    config = replica_config(dsn)
    compactor = driver.model([compactor_step(driver)] * 20, context_size=WINDOW)
    hook = driver.hook(config, folder, compactor=compactor, on_event=on_event)
    model = driver.model([Policy(driver, session, turn)] * 10, context_size=WINDOW)
    agent = await driver.agent(hook, model, [job])
    if saved["agent"]:
        await driver.load_state(agent, saved["agent"])
    request = f"turn {turn} of {session}: remember the code {code(session, turn)}. "
    await driver.ask(agent, request + filler(12_000 if turn == 1 else 1500, turn))  # 1: cut
    await hook.close()
    record = {"turn": turn + 1, "agent": driver.save_state(agent)}
    await service.put_document(key, json.dumps(record).encode(), doc.version)
    return True


async def take_turns(dsn: str, folder: Path, agent_id: str, worker: int, kill: bool) -> None:
    driver = available_drivers()[0]
    service = PostgresStore(dsn, service_id(agent_id), max_connections=2)
    await service.open()
    try:
        busy = True
        while busy:
            busy = False
            for session in SESSIONS[worker % 2 :] + SESSIONS[: worker % 2]:
                lease = await service.acquire_lease(f"session/{session}", _SESSION_LEASE)
                if lease is None:
                    busy = True  # another replica has its turn
                    continue
                held = [lease]
                renewing = asyncio.ensure_future(_renew(service, held))
                try:
                    busy = await one_turn(driver, service, folder, dsn, session, kill) or busy
                finally:
                    renewing.cancel()
                    await service.release_lease(held[0])
            await asyncio.sleep(0.05 * (worker + 1))
    finally:
        await service.close()


async def consolidate(dsn: str, folder: Path, kill: bool) -> None:
    # Longer than the test: a killed holder's lease is free at once only by its advisory lock.
    SharedMemory.lease_seconds = 600.0

    def answer(request: str) -> str:
        if kill:  # holding the lease, MEMORY.md not written yet
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError("the consolidation model is down: the extractive merge folds")

    context = StepContext(replica_config(dsn), folder)
    consolidator = context.memory.consolidator(ScriptedTextModel(default=answer))
    try:
        await consolidator.consolidate()
    finally:
        await context.close_store()


def main(argv: list[str]) -> None:
    action, dsn, folder, agent_id, worker, *flags = argv
    if action == "turns":
        asyncio.run(take_turns(dsn, Path(folder), agent_id, int(worker), "compaction" in flags))
    else:
        asyncio.run(consolidate(dsn, Path(folder), "consolidation" in flags))


if __name__ == "__main__":
    main(sys.argv[1:])
