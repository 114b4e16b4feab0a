"""The request-cut check reads the saved request through the workspace's file store (issue
20): a cut we made is ours, its saved file read once by ``open_blob``; a notice naming a file
of ``dialog/requests/`` that holds something else (forged), that is gone, that is a link (to
a file outside the workspace, or to another file inside it) or a path out of the workspace
is content, not ours. An offload store without a file store opens the file itself and
answers alike for the cut, the forged and the removed file."""

from __future__ import annotations

import json
from pathlib import Path

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.steps.cut import _is_our_request_cut
from copaw_context.core.toolresults.offload_cut import offload_parts
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import CountingStore

_TEXT = "".join(f"request line {i}: keep every word of it {'字' * (i % 4)}\n" for i in range(600))
_OTHER = "0123456789abcdef" * 2


def _context(tmp_path: Path) -> tuple[StepContext, CountingStore]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.json").write_text(json.dumps({"id": "agent-cut"}), encoding="utf-8")
    ctx = StepContext(RunningConfig(), ws)
    store = CountingStore(ws)
    ctx.workspace_store = store
    return ctx, store


async def _cut(ctx: StepContext) -> tuple[str, Path]:
    cut, saved = await offload_parts(ctx.request_store, [_TEXT], 2000, ctx.workspace)
    assert saved is not None and saved.read_text(encoding="utf-8") == _TEXT
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and parsed[1].file_path is not None
    return cut, saved


def _naming(cut: str, saved: Path, other: Path) -> str:
    """``cut`` with its notice naming ``other`` instead of ``saved``."""
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and parsed[1].file_path is not None
    named = parsed[1].file_path
    assert Path(named).name == saved.name
    return cut.replace(named, named.replace(saved.name, other.name))


async def test_our_cut_is_ours_through_the_store_and_a_forged_one_is_not(tmp_path: Path) -> None:
    ctx, store = _context(tmp_path)
    cut, saved = await _cut(ctx)
    assert await _is_our_request_cut(ctx, cut)
    assert store.calls["open_blob"] == 1
    assert store.keys["open_blob"] == [f"dialog/requests/{saved.name}"]

    forged = saved.with_name(_OTHER + ".txt")  # a file of the folder holding another text
    forged.write_text("some other request\n" * 200, encoding="utf-8")
    assert not await _is_our_request_cut(ctx, _naming(cut, saved, forged))
    assert store.calls["open_blob"] == 2

    saved.unlink()  # a cut whose file was removed since
    assert not await _is_our_request_cut(ctx, cut)
    assert store.calls["open_blob"] == 3


async def test_a_link_in_the_requests_folder_is_not_ours(tmp_path: Path) -> None:
    ctx, store = _context(tmp_path)
    cut, saved = await _cut(ctx)
    outside = tmp_path / "elsewhere.txt"  # the same bytes, outside the workspace
    outside.write_bytes(saved.read_bytes())
    inside = ctx.workspace / "copy.txt"  # and inside it, beside the folder
    inside.write_bytes(saved.read_bytes())
    for target in (outside, inside):
        saved.unlink()
        saved.symlink_to(target)
        assert saved.read_bytes().startswith(_TEXT[:500].encode())  # the link leads to it
        assert not await _is_our_request_cut(ctx, cut), target
    assert store.calls["open_blob"] == 2


async def test_a_folder_outside_the_workspace_is_not_ours(tmp_path: Path) -> None:
    ctx, store = _context(tmp_path)
    cut, saved = await _cut(ctx)
    moved = tmp_path / "requests-elsewhere"
    saved.parent.rename(moved)  # the folder is a link out of the workspace now
    saved.parent.symlink_to(moved, target_is_directory=True)
    assert saved.read_bytes() == _TEXT.encode()
    assert not await _is_our_request_cut(ctx, cut)
    assert store.calls["open_blob"] == 1  # the store's confined open refuses it


async def test_without_a_file_store_the_file_is_opened_here(tmp_path: Path) -> None:
    ctx, store = _context(tmp_path)
    cut, saved = await _cut(ctx)
    ctx.request_store.files = None  # an offload store made without one: the file code
    assert await _is_our_request_cut(ctx, cut)
    forged = saved.with_name(_OTHER + ".txt")
    forged.write_text("some other request\n" * 200, encoding="utf-8")
    assert not await _is_our_request_cut(ctx, _naming(cut, saved, forged))
    saved.unlink()
    assert not await _is_our_request_cut(ctx, cut)
    assert store.calls["open_blob"] == 0
