"""What a workspace must hold after a crash: whole archive lines, notices that resolve,
saved turns."""

from __future__ import annotations

import json
import re
from pathlib import Path

from copaw_context.core.toolresults.offload_names import referenced_offload_paths
from tests.reliability import crash_child
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import archived_keys

__all__ = ["archived_texts", "check_workspace", "dangling_notices", "saved_keys", "torn_lines"]


_OWN_FILE = re.compile(r"[0-9a-f]{32}\.txt")


def torn_lines(workspace: Path) -> tuple[int, list[str]]:
    """Archive lines that parse as JSON objects, and the torn ones (a line that does not, or a
    file ending in a partial line)."""
    count, torn = 0, []
    for path in sorted((workspace / "dialog").glob("*.jsonl")):
        data = path.read_bytes()
        for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                count += 1
            else:
                torn.append(f"{path.name}:{number} is not a JSON object")
        if data and not data.endswith(b"\n"):
            torn.append(f"{path.name} ends with a partial line")
    return count, torn


def partial_files(workspace: Path) -> tuple[int, list[str]]:
    """Files under a final name, and those not whole (offloads and saved requests end as
    framed)."""
    files = [
        *(workspace / "tool_result").glob("*.txt"),
        *(workspace / "dialog" / "requests").glob("*.txt"),
    ]
    partial = []
    for path in files:
        assert _OWN_FILE.fullmatch(path.name), f"unexpected file {path}"
        text = path.read_text(encoding="utf-8")
        head = text.split("\n", 1)[0]
        last = text.rstrip("\n").rsplit("\n", 1)[-1]
        if not head.startswith(("turn ", "BEGIN ")) or not last.startswith("END "):
            partial.append(f"{path} is partial: starts {head[:40]!r}, ends {last[-60:]!r}")
    json.loads((workspace / "state.json").read_text())
    return len(files), partial


def archived_texts(workspace: Path) -> list[str]:
    """Every string of every archive line, decoded (a notice's quotes are escaped in JSON)."""
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted((workspace / "dialog").glob("*.jsonl")):
        for raw in path.read_bytes().split(b"\n"):
            try:
                walk(json.loads(raw))
            except ValueError:
                continue  # torn_lines reports it
    return texts


def dangling_notices(workspace: Path) -> list[str]:
    """Files that archived notices name and that do not exist."""
    texts = archived_texts(workspace)
    return [
        path
        for path in referenced_offload_paths(texts)
        if not (Path(path) if Path(path).is_absolute() else workspace / path).is_file()
    ]


def check_workspace(workspace: Path, expected: set[str]) -> dict[str, int]:
    """After the restarted session ended with /clear: everything archived exactly once.
    Counts what broke, then fails naming it."""
    lines, torn = torn_lines(workspace)
    keys = archived_keys(workspace / "dialog", ())
    twice = [k for k, n in keys.items() if n > 1]
    missing = expected - set(keys)
    files, partial = partial_files(workspace)
    dangling = dangling_notices(workspace)
    assert not torn, torn[:5]
    assert not twice, f"archived twice: {twice[:5]}"
    assert not missing, f"lost: {sorted(missing)[:5]}"
    assert not partial, partial[:5]
    assert not dangling, f"notices name files that do not exist: {dangling[:5]}"
    return {
        "notices": len(referenced_offload_paths(archived_texts(workspace))),
        "lines": lines,
        "keys": len(keys),
        "files": files,
        "lost": len(missing),
        "duplicated": len(twice),
        "torn_lines": len(torn),
        "partial_files": len(partial),
        "dangling_notices": len(dangling),
    }


async def saved_keys(driver: HostDriver, workspace: Path) -> set[str]:
    """Part keys the saved state holds (context and pending buffer) and the archive holds."""
    keys = (
        set(archived_keys(workspace / "dialog", ())) if (workspace / "dialog").exists() else set()
    )
    path = workspace / "state.json"
    if not path.exists():
        return keys
    saved = json.loads(path.read_text())
    hook = driver.hook(crash_child.config(), workspace)
    agent = await driver.agent(hook, driver.model([], context_size=crash_child.WINDOW))
    await driver.load_state(agent, saved["agent"])
    state = await driver.engine_state(hook, agent)
    pending = archived_keys(workspace / "nowhere", state.get("pending_archive") or [])
    return keys | set(driver.context_keys(agent)) | set(pending)
