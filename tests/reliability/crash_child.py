"""The process the crash tests kill: a real agent session that saves its state after each turn.

:func:`run` (the entry of a forked child) drives ``TURNS`` user turns of an agent whose
tools print large framed outputs (offloaded), one oversized request (saved whole, then cut)
and a small window (compactions, archive appends), saving the agent's state like a host
does (temp file, fsync, rename) after every turn, then ``/clear``. Every I/O call on the
workspace is an I/O point (``faults.watch_io``); the child SIGKILLs itself at the chosen
one. Started again without a kill point, it restores the last saved state and finishes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from tests.reliability import power_cut
from tests.reliability.drivers import HostDriver, available_drivers
from tests.reliability.engine_session import filler
from tests.reliability.faults import IoEvent, watch_io

__all__ = ["TURNS", "WINDOW", "Policy", "framed", "run"]

TURNS = 5
WINDOW = 5000
_BIG_REQUEST_TURN = 2
_TURN = re.compile(r"turn (\d+)")


def framed(kind: str, seed: int, size: int) -> str:
    """A text whose first and last lines say it is complete: ``BEGIN kind seed`` ... ``END``."""
    return f"BEGIN {kind} {seed}\n{filler(size, seed)}\nEND {kind} {seed}\n"


def job(seed: int, size: int) -> str:
    """Run a job and return its log.

    Args:
        seed (`int`): Which job.
        size (`int`): About how many bytes of log.
    """
    return framed("job", seed, size)


def config() -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": WINDOW,
                "memory": {"enabled": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 3000,
                        "pruning_old_msg_max_bytes": 600,
                    },
                },
            }
        }
    )


def request(turn: int) -> str:
    size = 12_000 if turn == _BIG_REQUEST_TURN else 80
    return f"turn {turn}: " + framed("request", turn, size)


class Policy:
    """The scripted model: two parallel jobs per turn, then a text answer."""

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver

    def __call__(self, call: Any) -> list[Any]:
        formatted = call.formatted
        if formatted[-1].get("role") == "tool":
            return self.driver.text_step("done")
        users = [json.dumps(m.get("content")) for m in formatted if m.get("role") == "user"]
        found = _TURN.search(users[-1]) if users else None
        turn = int(found.group(1)) if found else 99
        return self.driver.tool_step(
            [
                ("job", {"seed": turn * 10, "size": 7000}, None),
                ("job", {"seed": turn * 10 + 1, "size": 4000}, None),
            ]
        )


def save_state(path: Path, data: dict[str, Any]) -> None:
    """The host's state save: temp file, fsync, rename."""
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


async def session(driver: HostDriver, workspace: Path) -> None:
    path = workspace / "state.json"
    saved = json.loads(path.read_text()) if path.exists() else {"turn": 0, "agent": None}
    hook = driver.hook(config(), workspace)
    model = driver.model([Policy(driver)] * 200, context_size=WINDOW)
    agent = await driver.agent(hook, model, [job])
    if saved["agent"]:
        await driver.load_state(agent, saved["agent"])
    for turn in range(saved["turn"], TURNS + 1):
        text = request(turn) if turn < TURNS else "/clear"
        await driver.ask(agent, text)
        save_state(path, {"turn": turn + 1, "agent": driver.save_state(agent)})


class KillPlan:
    """Kill at I/O point ``at`` (``phase``: before, mid (a torn write) or after); ``None``:
    only count the points (written to ``census`` as JSON lines). ``at`` may also be a
    ``(role, n)`` pair: the ``n``-th point of that role (:func:`power_cut.role_of`), killed
    before it or right after that same call in its own thread (the background syncs do not
    move it). ``at`` may also be a ``(kind, folder, n)`` triple: the ``n``-th point of that
    kind in that folder (:func:`group_of`), killed the same way in its own thread (a torn
    write too): the crash test's trials, whose global index shifts with the background syncs.
    With ``journal``, every completed rename and sync is appended there first (one
    ``os.write`` each, so the page cache has it when the process is killed): what a power
    cut would keep is read from it."""

    def __init__(
        self,
        at: int | tuple[str, int] | tuple[str, str, int] | None,
        phase: str,
        census: Path | None,
        journal: Path | None = None,
        root: Path | None = None,
    ) -> None:
        self.at, self.phase, self.census, self.root = at, phase, census, root
        self.points: list[tuple[str, str]] = []
        self._seen: dict[str, int] = {}
        self._target: tuple[int, str, str] | None = None  # (thread, kind, path)
        self._lock = threading.Lock()
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        self._journal = os.open(journal, flags, 0o644) if journal is not None else None

    def _by_role(self, event: IoEvent) -> bool:
        assert isinstance(self.at, tuple) and self.root is not None
        me = (threading.get_ident(), event.kind, event.path)
        if event.phase == "before":
            with self._lock:
                role = power_cut.role_of(event.kind, os.path.relpath(event.path, self.root))
                if role == self.at[0]:
                    self._seen[role] = self._seen.get(role, 0) + 1
                    if self._seen[role] == self.at[1]:
                        self._target = me
        if self._target == me and event.phase == self.phase:
            os.kill(os.getpid(), signal.SIGKILL)
        return False

    def _by_group(self, event: IoEvent) -> bool:
        assert isinstance(self.at, tuple) and len(self.at) == 3 and self.root is not None
        me = (threading.get_ident(), event.kind, event.path)
        tear = False
        if event.phase == "before":
            with self._lock:
                group = (event.kind, group_of(os.path.relpath(event.path, self.root)))
                if group == self.at[:2]:
                    self._seen[str(group)] = self._seen.get(str(group), 0) + 1
                    if self._seen[str(group)] == self.at[2]:
                        self._target = me
                        tear = self.phase == "mid"
        if self._target == me and event.phase == self.phase:
            os.kill(os.getpid(), signal.SIGKILL)
        return tear

    def __call__(self, event: IoEvent) -> bool:
        done = event.phase == "after" and event.kind in ("replace", "fsync")
        if self._journal is not None and done:
            line = json.dumps([event.kind, event.path, event.target]) + "\n"
            os.write(self._journal, line.encode())
        if event.phase == "before":
            self.points.append((event.kind, event.path))
        if isinstance(self.at, tuple) and len(self.at) == 3:
            return self._by_group(event)
        if isinstance(self.at, tuple):
            return self._by_role(event)
        if len(self.points) - 1 != self.at:
            return False
        if event.phase == self.phase:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.phase == "mid"  # at a write's "before": tear it (half, then "mid")


def group_of(path: str) -> str:
    """The folder (or file stem at the top) a point's workspace-relative ``path`` is in."""
    return path.split("/")[0].split(".")[0]


def run(
    driver_name: str,
    workspace: str,
    at: int | tuple[str, int] | tuple[str, str, int] | None,
    phase: str,
    census: str | None,
    journal: str | None = None,
) -> None:
    """The child's entry: the session, killed at I/O point ``at`` (see :class:`KillPlan`)."""
    driver = next(d for d in available_drivers() if d.name == driver_name)
    root = Path(workspace)
    plan = KillPlan(
        at, phase, Path(census) if census else None, Path(journal) if journal else None, root
    )
    with watch_io(root, plan):
        asyncio.run(session(driver, root))
    if plan.census is not None:
        lines = [json.dumps({"kind": k, "path": os.path.relpath(p, root)}) for k, p in plan.points]
        plan.census.write_text("\n".join(lines) + "\n", encoding="utf-8")
