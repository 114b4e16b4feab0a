"""Sessions sharing one workspace (QwenPaw: one agent workspace, many chats) idle past
``offload_retention_days``: the first to answer runs the TTL cleanup of ``tool_result/``.
It must keep every file another session's live context still names (their manifests in
``tool_result/.refs/``) and still delete what no session names: files of a cleared chat,
of a chat gone longer than ``offload_manifest_retention_days``, and orphans (peers2 F2).
Hostile manifests (malformed, oversized, links, fifos, paths) are ignored, never followed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from copaw_context.core.toolresults import offload_refs
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.offload_names import (
    referenced_offload_names,
    referenced_offload_paths,
)
from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.drivers import HostDriver

RESUMED = scaled(12, 40)
DAY = 86400.0


def _text(session: AgentSession) -> str:
    return "\n".join(str(m) for m in session.last_input)


def _notices(workspace: Path, sessions: list[AgentSession]) -> tuple[int, list[str]]:
    """Notices in the model inputs, and those naming a file that does not exist."""
    total, missing = 0, []
    for session in sessions:
        for path in referenced_offload_paths([_text(session)]):
            total += 1
            full = Path(path) if Path(path).is_absolute() else workspace / path
            if not full.is_file():
                missing.append(path)
    return total, missing


def _age(folder: Path, days: float) -> None:
    old = time.time() - days * DAY
    for path in folder.rglob("*"):
        os.utime(path, (old, old))


async def _scenario(driver: HostDriver, workspace: Path) -> dict[str, object]:
    resumed = [AgentSession(driver, workspace, window=32_000) for _ in range(RESUMED)]
    cleared = AgentSession(driver, workspace, window=32_000)
    gone = AgentSession(driver, workspace, window=32_000)
    everyone = [*resumed, cleared, gone]
    for session in everyone:
        await session.start()

    async def talk(n: int, session: AgentSession) -> None:
        big = (60_000, 12_000) if n % 2 else (2000, 30_000)
        for k in range(2):
            await session.run(Turn(f"chat {n} request {k}: check the logs", (Action(big),)))

    await asyncio.gather(*(talk(n, s) for n, s in enumerate(everyone)))
    await cleared.run(Turn("/clear"))
    await cleared.run(Turn("and a new topic", (Action(),)))
    cache = workspace / "tool_result"
    orphans = [cache / f"{uuid.uuid4().hex}.txt" for _ in range(3)]  # an old process's files
    for orphan in orphans:
        orphan.write_text("left by a process without manifests", encoding="utf-8")
    gone_names = referenced_offload_names([_text(gone)])
    # Every chat idle past the retention period; the gone one past the manifests' too.
    _age(cache, 6)
    for manifest in (cache / ".refs").glob("*.json"):  # the gone chat's, by what it names
        if gone_names & set(json.loads(manifest.read_text(encoding="utf-8"))["names"]):
            _age_file(manifest, 91)
    before = {p.name for p in cache.glob("*.txt")}
    named = set().union(*(referenced_offload_names([_text(s)]) for s in resumed))
    for session in resumed:
        await session.restart()
    await asyncio.gather(*(s.run(Turn("and now?", (Action(),))) for s in resumed))
    after = {p.name for p in cache.glob("*.txt")}
    manifests = len(list((cache / ".refs").glob("*.json")))
    total, missing = _notices(workspace, resumed)
    return {
        "problems": [p for s in everyone for p in s.problems],
        "notices": total,
        "missing": missing,
        "unreferenced": before - named,
        "deleted": before - after,
        "gone_names": gone_names,
        "orphans": {p.name for p in orphans},
        "named": named,
        "manifests": manifests,
    }


def _age_file(path: Path, days: float) -> None:
    old = time.time() - days * DAY
    os.utime(path, (old, old))


def test_sessions_resumed_after_the_retention_period_keep_each_others_files(
    driver: HostDriver,
) -> None:
    """Fails on the old code: the first cleanup kept only its own context's names."""
    with tempfile.TemporaryDirectory() as name:
        out = asyncio.run(_scenario(driver, Path(name)))
    record(
        "shared_offload_ttl",
        sessions=RESUMED + 2,
        notices=out["notices"],
        notices_naming_missing_files=len(out["missing"]),  # type: ignore[arg-type]
        unreferenced_files=len(out["unreferenced"]),  # type: ignore[arg-type]
        deleted_files=len(out["deleted"]),  # type: ignore[arg-type]
    )
    assert not out["problems"], out["problems"][:3]  # type: ignore[index]
    assert out["notices"] and out["named"], "the scenario must leave notices to resume"
    assert not out["missing"], (len(out["missing"]), out["missing"][:3])  # type: ignore[arg-type, index]
    # Cleanup still works: what no live session names is deleted, nothing else.
    assert out["orphans"] <= out["unreferenced"]  # type: ignore[operator]
    assert out["gone_names"] and out["gone_names"] <= out["unreferenced"]  # type: ignore[operator]
    assert out["deleted"] == out["unreferenced"]
    # One manifest a chat, its id saved with the agent's state (the gone chat's expired).
    assert out["manifests"] == RESUMED + 1


# ---------------------------------------------------------------- hostile manifests


def _own(folder: Path, text: str = "full text") -> str:
    name = f"{uuid.uuid4().hex}.txt"
    (folder / name).write_text(text, encoding="utf-8")
    return name


def _manifest(refs: Path, body: bytes | str) -> Path:
    path = refs / f"{uuid.uuid4().hex}.json"
    path.write_bytes(body.encode() if isinstance(body, str) else body)
    return path


def test_hostile_manifests_are_ignored_with_a_log_and_never_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    cache, refs = workspace / "tool_result", workspace / "tool_result" / ".refs"
    refs.mkdir(parents=True)
    outside.mkdir()
    kept, malformed, oversized, linked, fifo_named = (_own(cache) for _ in range(5))
    victim = outside / f"{uuid.uuid4().hex}.txt"
    victim.write_text("outside the workspace", encoding="utf-8")
    _manifest(refs, f'{{"version": 1, "names": ["{kept}", "../../outside/{victim.name}"]}}')
    _manifest(refs, f'{{"version": 1, "names": ["{malformed}"')  # torn
    _manifest(refs, f'{{"names": "{malformed}"}}')  # wrong shape
    big = f'{{"version": 1, "names": ["{oversized}"], "pad": "{"x" * (2 << 20)}"}}'
    _manifest(refs, big)
    target = outside / "manifest.json"
    target.write_text(f'{{"version": 1, "names": ["{linked}"]}}', encoding="utf-8")
    (refs / f"{uuid.uuid4().hex}.json").symlink_to(target)
    os.mkfifo(refs / f"{uuid.uuid4().hex}.json")
    _age(cache, 6)
    store = OffloadStore(cache, 5, workspace=workspace)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        removed = {p.name for p in asyncio.run(store.cleanup())}
    assert removed == {malformed, oversized, linked, fifo_named}
    assert (cache / kept).is_file() and victim.is_file() and target.is_file()
    warnings = caplog.text
    assert warnings.count("ignoring malformed manifest") == 3, warnings


def test_a_linked_refs_folder_or_too_many_manifests_keep_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    cache = workspace / "tool_result"
    cache.mkdir(parents=True)
    outside.mkdir()
    names = [_own(cache) for _ in range(3)]
    (cache / ".refs").symlink_to(outside, target_is_directory=True)
    _age(cache, 6)
    store = OffloadStore(cache, 5, workspace=workspace)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        assert asyncio.run(store.cleanup()) == []
    assert all((cache / n).is_file() for n in names) and not any(outside.iterdir())
    assert ".refs" in caplog.text
    (cache / ".refs").unlink()
    (cache / ".refs").mkdir()
    monkeypatch.setattr(offload_refs, "MAX_MANIFESTS", 2)
    for _ in range(3):
        _manifest(cache / ".refs", '{"version": 1, "names": []}')
    assert asyncio.run(OffloadStore(cache, 5, workspace=workspace).cleanup()) == []
    assert "more than 2 live manifests" in caplog.text
    monkeypatch.setattr(offload_refs, "MAX_MANIFESTS", 50_000)
    assert len(asyncio.run(OffloadStore(cache, 5, workspace=workspace).cleanup())) == 3


def test_manifests_written_while_cleanups_run_keep_their_files(tmp_path: Path) -> None:
    """Six sessions rewrite their manifests from threads while three cleanups run."""
    workspace = tmp_path
    cache = workspace / "tool_result"
    cache.mkdir()
    files = [_own(cache) for _ in range(60)]
    _age(cache, 6)
    stop, ready = threading.Event(), threading.Barrier(7)
    errors: list[BaseException] = []

    def session(n: int) -> None:
        sid, mine = uuid.uuid4().hex, files[n * 10 : (n + 1) * 10]
        offload_refs.write_manifest(cache, workspace, sid, mine)
        ready.wait()
        try:
            while not stop.is_set():
                offload_refs.write_manifest(cache, workspace, sid, mine)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    def cleaner() -> None:
        store = OffloadStore(cache, 5, workspace=workspace)
        for _ in range(3):
            asyncio.run(store.cleanup())

    writers = [threading.Thread(target=session, args=(n,)) for n in range(6)]
    for thread in writers:
        thread.start()
    ready.wait()  # every writer's first manifest precedes the cleanups below
    cleaners = [threading.Thread(target=cleaner) for _ in range(3)]
    for thread in cleaners:
        thread.start()
    for thread in cleaners:
        thread.join()
    stop.set()
    for thread in writers:
        thread.join()
    assert not errors, errors
    assert all((cache / n).is_file() for n in files)


def test_without_a_workspace_a_linked_refs_folder_is_not_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache, outside = tmp_path / "tool_result", tmp_path / "outside"
    cache.mkdir()
    outside.mkdir()
    name = _own(cache)
    stale = _manifest(outside, '{"version": 1, "names": []}')
    _age(outside, 400)
    (cache / ".refs").symlink_to(outside, target_is_directory=True)
    _age(cache, 6)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        assert asyncio.run(OffloadStore(cache, 5).cleanup()) == []
    assert (cache / name).is_file() and stale.is_file()  # nothing deleted through the link
