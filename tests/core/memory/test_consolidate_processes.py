"""Two consolidations in two OS processes at once, without a DSN: the lock file (the file
store's lease) lets one fold at a time, and MEMORY.md gets every entry once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import copaw_context

_CHILD = r"""
import asyncio, os, sys, time
from datetime import datetime
from pathlib import Path
from copaw_context.core.memory import MemoryConsolidator, MemoryFiles

workspace, marks = Path(sys.argv[1]), Path(sys.argv[2])
folding = MemoryConsolidator._consolidate_locked

def mark(what):
    with open(marks, "a", encoding="utf-8") as out:
        out.write(f"{what} {os.getpid()}\n")

async def marked(self):
    mark("enter")
    await asyncio.sleep(0.4)  # the other process tries meanwhile
    try:
        return await folding(self)
    finally:
        mark("exit")

MemoryConsolidator._consolidate_locked = marked
(workspace / f"ready-{os.getpid()}").touch()
while len(list(workspace.glob("ready-*"))) < 2:  # both start together
    time.sleep(0.01)
files = MemoryFiles(workspace, clock=lambda: datetime(2024, 5, 1, 23, 0).astimezone())
result = asyncio.run(MemoryConsolidator(files).consolidate())
print(result.written)
"""


def test_two_processes_fold_one_at_a_time_and_every_entry_lands_once(tmp_path: Path) -> None:
    log = tmp_path / "memory" / "2024-04-30.md"
    log.parent.mkdir()
    entries = [f"Fact number {i} about the build" for i in range(6)]
    log.write_text(
        "# 2024-04-30\n\n" + "".join(f"- 10:0{i} [agent] {e}\n" for i, e in enumerate(entries)),
        encoding="utf-8",
    )
    marks = tmp_path / "marks.txt"
    root = str(Path(copaw_context.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-c", _CHILD, str(tmp_path), str(marks)]
    children = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in "ab"]
    outputs = [child.communicate(timeout=120)[0].split() for child in children]
    assert [child.returncode for child in children] == [0, 0]
    assert sorted(outputs) == [["False"], ["True"]]  # one folded, the other found it done
    lines = [line.split() for line in marks.read_text("utf-8").splitlines()]
    assert [what for what, _ in lines] == ["enter", "exit", "enter", "exit"]
    assert lines[0][1] == lines[1][1] != lines[2][1] == lines[3][1]
    memory = (tmp_path / "MEMORY.md").read_text("utf-8")
    assert all(memory.count(entry) == 1 for entry in entries)
