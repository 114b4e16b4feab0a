"""The archive's append waits for the saved outputs still synced in the background: an
archived notice never names a file a power cut could lose (``sync_gate`` holds the syncs until
a barrier waits)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.store import file_streams
from copaw_context.core.toolresults.offload import OffloadStore
from tests.core.sync_gate import SyncGate


async def test_an_append_writes_its_lines_only_after_the_pending_syncs(
    tmp_path: Path, sync_gate: SyncGate, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_append = file_streams.append_lines

    def append_lines(path: Path, *args: Any) -> Any:
        sync_gate.note("archive", path.name)
        sync_gate.open.set()  # without the barrier the syncs would come after the lines
        return real_append(path, *args)

    monkeypatch.setattr(file_streams, "append_lines", append_lines)
    sync_gate.open_at_barrier()
    saved = await OffloadStore(tmp_path / "tool_result", 1).save("the full output\n" * 50)
    archive = DialogArchive(tmp_path / "dialog", session_id="s-1", agent_name="Friday")
    message = {
        "id": "m1",
        "name": "tool",
        "role": "user",
        "content": [{"type": "text", "text": f'<<<TRUNCATED>>> file_path="{saved}"'}],
        "metadata": {},
    }
    written = await archive.append([message], ["2026-11-29 10:00:00"])
    assert [f.lines for f in written] == [1]
    assert sync_gate.before(("file", saved.name), "archive"), sync_gate.events
    assert sync_gate.before(("folder", str(saved.parent)), "archive"), sync_gate.events
