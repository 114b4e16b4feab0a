"""Tests for the offload store (copaw_context.core.toolresults.offload) and the names it
keeps (.offload_names)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.errors import ConfigError
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.offload_names import (
    referenced_offload_names,
    referenced_offload_paths,
)
from copaw_context.testing import ManualClock

NOW = 1_900_000_000.0
DAY = 86400.0
OWN_NAME = re.compile(r"[0-9a-f]{32}\.txt")


def notice_for(path: Path | str) -> str:
    return (
        "<<<TRUNCATED>>>\nThe output above was truncated.\n"
        f"If the current content is not enough, call `read_file` with "
        f"file_path={json.dumps(str(path), ensure_ascii=False)} start_line=12 to read more."
    )


def age(path: Path, seconds: float) -> None:
    os.utime(path, (NOW - seconds, NOW - seconds), follow_symlinks=False)


def make_store(tmp_path: Path, retention_days: float = 7.0, **kwargs: object) -> OffloadStore:
    return OffloadStore(tmp_path / "tool_result", retention_days, clock=ManualClock(NOW), **kwargs)  # type: ignore[arg-type]


# --- save ---------------------------------------------------------------------------------


async def test_save_writes_exact_content_with_own_name(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    text = "第一行 中文 🐾\nline two\r\nno trailing newline"
    path = await store.save(text)
    assert path.is_absolute()
    assert path.parent == store.directory
    assert OWN_NAME.fullmatch(path.name)
    assert path.read_bytes() == text.encode("utf-8")
    assert store.owns(path)
    assert sorted(os.listdir(store.directory)) == [path.name]  # no temp file left


async def test_save_other_encoding_and_unencodable_chars(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    gbk = await store.save("中文内容", encoding="gbk")
    assert gbk.read_bytes().decode("gbk") == "中文内容"
    # A lone surrogate is not UTF-8: it is saved as U+FFFD, as the excerpt shows it.
    odd = await store.save("a\udc80b")
    assert odd.read_text("utf-8") == "a\ufffdb"
    # Characters the encoding lacks are kept as visible escapes instead of failing.
    latin = await store.save("caf\u00e9 \u4e2d", encoding="latin-1")
    assert latin.read_bytes() == "caf\u00e9 \\u4e2d".encode("latin-1")
    with pytest.raises(LookupError):
        await store.save("x", encoding="no-such-codec")


async def test_save_names_are_unique(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    paths = {await store.save(str(i)) for i in range(20)}
    assert len(paths) == 20
    assert {p.read_text() for p in paths} == {str(i) for i in range(20)}


async def test_save_failure_raises_oserror_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("file in the way")
    store = OffloadStore(blocker / "tool_result", 7)
    with pytest.raises(OSError):
        await store.save("data")
    assert blocker.read_text() == "file in the way"


async def test_save_failure_during_replace_removes_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(tmp_path)

    def failing_replace(src: object, dst: object, **kw: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        await store.save("payload")
    assert os.listdir(store.directory) == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300))
async def test_save_round_trips_any_text(tmp_path: Path, text: str) -> None:
    store = make_store(tmp_path)
    path = await store.save(text)
    assert path.read_bytes() == text.encode("utf-8")


# --- owns ---------------------------------------------------------------------------------


def test_owns_accepts_only_own_pattern_in_own_directory(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    name = "0123456789abcdef0123456789abcdef.txt"
    assert store.owns(store.directory / name)
    assert store.owns(str(store.directory / name))
    assert store.owns(store.directory / "sub" / ".." / name)
    rejected = [
        store.directory / "0123456789ABCDEF0123456789ABCDEF.txt",  # upper case
        store.directory / "0123456789abcdef0123456789abcde.txt",  # 31 hex
        store.directory / "0123456789abcdef0123456789abcdef.md",
        store.directory / "notes.txt",
        store.directory / f".{name[:-4]}.tmp",
        store.directory / "sub" / name,  # nested
        tmp_path / name,  # another directory
        tmp_path / "tool_result_other" / name,
    ]
    for path in rejected:
        assert not store.owns(path), path


def test_invalid_settings_raise_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="retention_days"):
        OffloadStore(tmp_path, -1)
    with pytest.raises(ConfigError, match="retention_days"):
        OffloadStore(tmp_path, float("nan"))
    with pytest.raises(ConfigError, match="cleanup_interval_seconds"):
        OffloadStore(tmp_path, 1, cleanup_interval_seconds=-5)


# --- cleanup ------------------------------------------------------------------------------


async def test_cleanup_removes_only_expired_unreferenced_own_files(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=7)
    fresh = await store.save("fresh")
    expired = await store.save("expired")
    referenced = await store.save("still referenced by a notice")
    age(fresh, 6 * DAY)
    age(expired, 8 * DAY)
    age(referenced, 30 * DAY)
    foreign = store.directory / "notes.txt"
    foreign.write_text("user file")
    age(foreign, 365 * DAY)
    foreign_upper = store.directory / "0123456789ABCDEF0123456789ABCDEF.txt"
    foreign_upper.write_text("not ours")
    age(foreign_upper, 365 * DAY)
    nested = store.directory / "sub"
    nested.mkdir()
    nested_file = nested / "0123456789abcdef0123456789abcdef.txt"
    nested_file.write_text("nested")
    age(nested_file, 365 * DAY)

    paths = referenced_offload_paths(["tool said:\n" + notice_for(referenced)])
    removed = await store.cleanup(paths)

    assert removed == [expired]
    assert not expired.exists()
    for survivor in (fresh, referenced, foreign, foreign_upper, nested_file):
        assert survivor.exists(), survivor


async def test_cleanup_reference_matches_resolved_paths(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    kept = await store.save("kept")
    age(kept, 2 * DAY)
    indirect = store.directory / ".." / "tool_result" / kept.name
    assert await store.cleanup([str(indirect)]) == []
    assert kept.exists()
    age(kept, 2 * DAY)  # the reference refreshed it; make it expired again
    assert await store.cleanup([Path("relative/elsewhere.txt"), "bad\0path"]) == [kept]


async def test_cleanup_keeps_a_file_named_through_a_link_elsewhere(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    kept = await store.save("kept")
    age(kept, 2 * DAY)
    alias = tmp_path / "alias.txt"
    alias.symlink_to(kept)
    assert await store.cleanup([alias]) == []
    assert kept.read_text() == "kept"


async def test_cleanup_never_follows_or_deletes_symlinks(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    store.directory.mkdir(parents=True)
    outside = tmp_path / "precious.txt"
    outside.write_text("do not delete")
    age(outside, 100 * DAY)
    link = store.directory / "fedcba9876543210fedcba9876543210.txt"
    link.symlink_to(outside)
    age(link, 100 * DAY)  # the link itself is old too
    dangling = store.directory / "00000000000000000000000000000000.txt"
    dangling.symlink_to(tmp_path / "missing.txt")
    temp_link = store.directory / ".11111111111111111111111111111111.tmp"
    temp_link.symlink_to(outside)

    assert await store.cleanup() == []
    assert outside.read_text() == "do not delete"
    assert link.is_symlink() and dangling.is_symlink() and temp_link.is_symlink()


async def test_cleanup_removes_old_temp_leftovers_only(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=30)
    store.directory.mkdir(parents=True)
    old_temp = store.directory / ".aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.tmp"
    new_temp = store.directory / ".bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.tmp"
    other_tmp = store.directory / "editor.tmp"
    for path in (old_temp, new_temp, other_tmp):
        path.write_text("partial")
    age(old_temp, 2 * 3600)
    age(new_temp, 600)
    age(other_tmp, 30 * DAY)
    assert await store.cleanup() == [old_temp]
    assert new_temp.exists() and other_tmp.exists()


async def test_cleanup_missing_directory_and_non_regular_entries(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=0)
    assert await store.cleanup() == []
    store.directory.mkdir(parents=True)
    own_named_dir = store.directory / "22222222222222222222222222222222.txt"
    own_named_dir.mkdir()
    age(own_named_dir, 10 * DAY)
    assert await store.cleanup() == []
    assert own_named_dir.is_dir()


async def test_cleanup_logs_and_skips_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(tmp_path, retention_days=1)
    first = await store.save("one")
    second = await store.save("two")
    age(first, 2 * DAY)
    age(second, 2 * DAY)
    real_unlink = os.unlink

    def flaky_unlink(path: os.PathLike[str] | str, *args: object, **kwargs: Any) -> None:
        if Path(path).name == first.name:  # by name in the folder's descriptor, or by path
            raise PermissionError(13, "Permission denied")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", flaky_unlink)
    with caplog.at_level("WARNING", logger="copaw_context"):
        removed = await store.cleanup()
    assert removed == [second]
    assert first.exists()
    assert any(str(first) in record.getMessage() for record in caplog.records)


async def test_cleanup_keeps_files_a_summary_names_by_bare_path(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    in_summary = await store.save("named by the compaction summary")
    in_notice = await store.save("named by a notice")
    forgotten = await store.save("nobody names this one")
    for path in (in_summary, in_notice, forgotten):
        age(path, 3 * DAY)
    context = [
        f"## Summary\n- Ran the crawler; full output:\n- File: {in_summary}\n- Next: parse it",
        "tool said:\n" + notice_for(in_notice),
    ]
    # The notice parser alone misses the bare path: that was the bug.
    assert str(in_summary) not in referenced_offload_paths(context)
    removed = await store.cleanup(referenced_offload_names(context))
    assert removed == [forgotten]
    assert in_summary.read_text() == "named by the compaction summary"
    assert in_notice.exists()


async def test_cleanup_accepts_names_and_paths_together(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    by_name = await store.save("a")
    by_path = await store.save("b")
    expired = await store.save("c")
    for path in (by_name, by_path, expired):
        age(path, 2 * DAY)
    assert await store.cleanup([by_name.name, by_path]) == [expired]
    assert by_name.exists() and by_path.exists()


async def test_referenced_files_are_refreshed_so_other_processes_keep_them(
    tmp_path: Path,
) -> None:
    clock = ManualClock(NOW)
    ours = OffloadStore(tmp_path / "tool_result", 1, clock=clock)
    # Another process on the same directory: it cannot see our context.
    theirs = OffloadStore(tmp_path / "tool_result", 1, clock=clock)
    referenced = await ours.save("still in our context")
    age(referenced, 2 * DAY)  # older than the retention already
    before = os.lstat(referenced)
    assert await ours.cleanup([referenced.name]) == []
    after = os.lstat(referenced)
    assert after.st_mtime == NOW
    assert after.st_atime == before.st_atime
    assert await theirs.cleanup() == []  # a full retention period from now on
    clock.advance(DAY - 1)
    assert await theirs.cleanup() == []
    clock.advance(2)
    assert await theirs.cleanup() == [referenced]


async def test_refresh_never_touches_symlinks_or_their_targets(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    store.directory.mkdir(parents=True)
    outside = tmp_path / "precious.txt"
    outside.write_text("do not touch")
    age(outside, 100 * DAY)
    link = store.directory / "fedcba9876543210fedcba9876543210.txt"
    link.symlink_to(outside)
    assert await store.cleanup([link.name]) == []
    assert os.stat(outside).st_mtime == NOW - 100 * DAY
    assert link.is_symlink()


# --- maybe_cleanup ------------------------------------------------------------------------


async def test_maybe_cleanup_throttles_by_interval(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    store = OffloadStore(tmp_path / "tool_result", 1, cleanup_interval_seconds=3600, clock=clock)
    calls: list[int] = []

    def referenced() -> list[str]:
        calls.append(1)
        return []

    first = await store.save("a")
    age(first, 2 * DAY)
    assert await store.maybe_cleanup(referenced) == [first]  # never ran before
    second = await store.save("b")
    age(second, 2 * DAY)
    clock.advance(3599)
    assert await store.maybe_cleanup(referenced) == []  # throttled
    assert second.exists() and len(calls) == 1
    clock.advance(1)
    assert await store.maybe_cleanup(referenced) == [second]
    assert len(calls) == 2
    clock.advance(-10 * DAY)  # clock went backwards: do not stall
    assert await store.maybe_cleanup(referenced) == []
    assert len(calls) == 3


async def test_maybe_cleanup_failure_in_referenced_does_not_count_as_run(tmp_path: Path) -> None:
    store = make_store(tmp_path, retention_days=1)
    old = await store.save("x")
    age(old, 2 * DAY)

    def broken() -> list[str]:
        raise RuntimeError("memory unavailable")

    with pytest.raises(RuntimeError):
        await store.maybe_cleanup(broken)
    assert old.exists()
    assert await store.maybe_cleanup(lambda: [str(old)]) == []
    assert old.exists()


# --- referenced_offload_paths -------------------------------------------------------------


def test_referenced_paths_parse_escapes_and_multiple_notices() -> None:
    tricky = 'C:\\work dir\\tool "result"\\中文.txt'
    texts = [
        notice_for("/abs/path/tool_result/0a1b.txt") + "\n" + notice_for(tricky),
        'call `read_file` with file_path="/x/\\u4e2d.txt" start_line=3 to read more.',
        "no notice here",
        'file_path="\\q invalid escape" start_line=1',
        "legacy form file_path= start_line=5",
    ]
    assert referenced_offload_paths(texts) == {
        "/abs/path/tool_result/0a1b.txt",
        tricky,
        "/x/中.txt",
    }


@settings(max_examples=100, deadline=None)
@given(paths=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4))
def test_referenced_paths_round_trip_any_string(paths: list[str]) -> None:
    text = "\n".join(notice_for(p) for p in paths)
    assert referenced_offload_paths([text]) == set(paths)


# --- referenced_offload_names -------------------------------------------------------------


def test_referenced_names_found_anywhere() -> None:
    a, b, c, d = ("0123456789abcdef" * 2, "f" * 32, "a" * 32, "b" * 32)
    texts = [
        f"- File: /ws/tool_result/{a}.txt",
        notice_for(f"C:\\ws\\tool_result\\{b}.txt"),
        f'{{"path": "tool_result/{c}.txt"}} and again {c}.txt',
        f"glued:x{d}.txt,",
        "upper case is not ours: " + "A" * 32 + ".txt",
        "too short: " + "a" * 31 + ".txt; wrong suffix: " + "c" * 32 + ".md",
    ]
    assert referenced_offload_names(texts) == {f"{a}.txt", f"{b}.txt", f"{c}.txt", f"{d}.txt"}
    assert referenced_offload_names([]) == set()


@settings(max_examples=100, deadline=None)
@given(
    names=st.lists(st.text("0123456789abcdef", min_size=32, max_size=32), min_size=1, max_size=4),
    filler=st.text(max_size=40),
)
def test_referenced_names_survive_any_surrounding_text(names: list[str], filler: str) -> None:
    text = filler.join(f"{filler}/tool_result/{name}.txt" for name in names) + filler
    assert {f"{name}.txt" for name in names} <= referenced_offload_names([text])
