"""What a power cut would leave of a killed session's saved outputs, from its I/O journal.

``kill -9`` keeps everything written (the page cache has it); a power cut keeps only what
was synced. The saved outputs (``tool_result/`` and ``dialog/requests/``) are renamed
unsynced and synced in the background, so for them the difference is real: a file survives
only when its data was synced and a sync of its folder completed after both its rename and
that data sync. :func:`cut_power` deletes every other one. The archive and the host's state
are synced before they count (appends with ``fsync``; the host's temp file, ``fsync``,
rename), so they stay as the kill left them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from copaw_context.core.toolresults.offload_names import referenced_offload_names

__all__ = ["ROLES", "cut_power", "durable_files", "referenced_files", "role_of", "saved_outputs"]

ROLES = ("rename", "data sync", "folder sync", "archive", "state save")
"""The steps of a saved output's way to disk and of the commits that name it."""

_OWN = re.compile(r"[0-9a-f]{32}\.txt")
_FOLDERS = ("tool_result", os.path.join("dialog", "requests"))


def role_of(kind: str, path: str) -> str | None:
    """Which of :data:`ROLES` an I/O point is (``path`` relative to the workspace)."""
    output = path.startswith(("tool_result/", "dialog/requests/")) and "/.refs" not in path
    if kind == "replace" and output:
        return "rename"
    if kind == "fsync" and output and path.endswith(".txt"):
        return "data sync"
    if kind == "fsync" and path in ("tool_result", "dialog/requests"):
        return "folder sync"
    if kind in ("write", "fsync") and path.startswith("dialog/") and path.endswith(".jsonl"):
        return "archive"
    if kind == "replace" and path.startswith("state.json"):
        return "state save"
    return None


def saved_outputs(workspace: Path) -> dict[str, Path]:
    """The saved outputs under their final names, by name."""
    found: dict[str, Path] = {}
    for folder in _FOLDERS:
        directory = workspace / folder
        if directory.is_dir():
            found.update({p.name: p for p in directory.iterdir() if _OWN.fullmatch(p.name)})
    return found


def durable_files(journal: Path) -> set[str]:
    """The paths (resolved) a power cut right after the journal's last line would keep."""
    synced: set[str] = set()  # data synced (a temp name's carries over to its rename)
    renamed: dict[str, int] = {}  # final path -> the line of its rename
    kept: set[str] = set()
    lines = journal.read_text().splitlines() if journal.exists() else []
    for number, line in enumerate(lines):
        kind, path, target = json.loads(line)
        if kind == "replace" and target:
            renamed[target] = number
            kept.discard(target)  # new content under the name: not durable until synced
            if path in synced:
                synced.add(target)
            else:
                synced.discard(target)
        elif kind == "fsync" and os.path.isdir(path):
            for name, at in renamed.items():
                if os.path.dirname(name) == path and at < number and name in synced:
                    kept.add(name)
        elif kind == "fsync":
            synced.add(path)
    return kept


def cut_power(workspace: Path, journal: Path) -> list[str]:
    """Delete the saved outputs a power cut could lose; their names."""
    kept = durable_files(journal)
    lost = []
    for name, path in saved_outputs(workspace).items():
        if str(path.resolve()) not in kept:
            path.unlink()
            lost.append(name)
    return sorted(lost)


def referenced_files(workspace: Path) -> set[str]:
    """The saved-output names that the archive and the host's saved state name."""
    texts = [p.read_text(encoding="utf-8") for p in (workspace / "dialog").glob("*.jsonl")]
    state = workspace / "state.json"
    if state.exists():
        texts.append(state.read_text(encoding="utf-8"))
    return referenced_offload_names(texts)
