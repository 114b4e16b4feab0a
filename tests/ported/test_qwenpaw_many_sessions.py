"""Ports QwenPaw's many chats of one agent workspace (its runner serves every chat of an
agent from one workspace): twenty sessions at once (asyncio.gather) in one workspace, with
twenty hooks or one hook shared by twenty agents (tests/agentscope2/test_shared_hook.py's
layout). Every model input of every session fits its window and is paired, every part is in
its context or the shared archive exactly once, every notice in a context names a file that
holds the full text."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from copaw_context.core.toolresults.offload_names import referenced_offload_paths
from tests.reliability.agent_session import Action, AgentSession, Turn, produce
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver

AGENTS = 20
WINDOW = 4000


def _turns(n: int, round_: int) -> list[Turn]:
    big = (60_000, 12_000) if n % 2 else (2000, 40, 30_000)
    return [
        Turn(
            f"session {n} round {round_} request {k}: check the logs " + "x " * 40,
            (Action(sizes=big), Action(sizes=(3000,), cjk=bool(n % 3)), Action()),
        )
        for k in range(2)
    ]


def _contexts_text(session: AgentSession) -> str:
    return "\n".join(str(m) for m in session.last_input)


def missing_notice_files(workspace: Path, sessions: list[AgentSession]) -> list[str]:
    missing = []
    for session in sessions:
        for path in referenced_offload_paths([_contexts_text(session)]):
            full = Path(path) if Path(path).is_absolute() else workspace / path
            if not full.is_file():
                missing.append(f"{session.agent.name}: {path}")
    return missing


async def run_round(sessions: list[AgentSession], round_: int) -> None:
    async def one(n: int, session: AgentSession) -> None:
        for turn in _turns(n, round_):
            await session.run(turn)

    await asyncio.gather(*(one(n, s) for n, s in enumerate(sessions)))


async def start_sessions(
    driver: HostDriver, workspace: Path, *, shared_hook: bool, window: int = WINDOW
) -> list[AgentSession]:
    """``AGENTS`` started sessions in ``workspace``; ``shared_hook``: all agents on one hook."""
    sessions = [AgentSession(driver, workspace, window=window) for _ in range(AGENTS)]
    for session in sessions:
        await session.start()
    if shared_hook:
        shared = sessions[0].hook
        for n, session in enumerate(sessions):
            session.hook = shared
            session.agent = await driver.agent(shared, session.model, [produce], name=f"agent{n}")
    return sessions


@pytest.mark.parametrize("shared_hook", [False, True], ids=["twenty_hooks", "one_shared_hook"])
def test_twenty_sessions_at_once_in_one_workspace(
    driver: HostDriver, tmp_path: Path, shared_hook: bool
) -> None:
    async def main() -> list[AgentSession]:
        sessions = await start_sessions(driver, tmp_path, shared_hook=shared_hook)
        await run_round(sessions, 0)
        return sessions

    sessions = asyncio.run(main())
    calls = sum(s.figures.model_calls for s in sessions)
    problems = [p for s in sessions for p in s.problems]
    missing = missing_notice_files(tmp_path, sessions)
    assert calls >= AGENTS * 6
    assert not problems, problems[:3]
    assert not missing, missing[:3]
    record(
        "ported_many_sessions",
        shared_hook=shared_hook,
        sessions=len(sessions),
        model_calls=calls,
        lost=sum(s.figures.lost for s in sessions),
        over_window=sum(s.figures.over_window for s in sessions),
        missing_notice_files=len(missing),
    )
