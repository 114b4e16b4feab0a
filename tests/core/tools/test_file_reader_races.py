"""read_file against files swapped while it reads: symlink flips, FIFOs, devices (defects #12)."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from copaw_context.core.tools.file_reader import ReadResult, read_text_file
from tests.file_races import (
    flipper,
    flipping,
    release_fifo_readers,
)

SECRET = "TOP-SECRET-OUTSIDE-THE-ROOTS"
INSIDE = "inside text\n"
READS = 4000
PARALLEL = 4


async def _read(path: Path | str, workspace: Path, **kwargs: object) -> ReadResult:
    return await read_text_file(str(path), workspace=workspace, **kwargs)  # type: ignore[arg-type]


def _race_layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace with ``flip.txt`` and ``d/f.txt`` (inside), each with an outside twin.

    ``.flip-link`` (a symlink to the outside secret) and ``.d-link`` (a symlink to the
    outside directory) are what the flipper swaps in.
    """
    workspace = tmp_path / "ws"
    (workspace / "d").mkdir(parents=True)
    (workspace / "d" / "f.txt").write_text(INSIDE)
    (workspace / "flip.txt").write_text(INSIDE)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(SECRET + "\n")
    (outside / "f.txt").write_text(SECRET + "\n")
    (workspace / ".flip-link").symlink_to(secret)
    (workspace / ".d-link").symlink_to(outside, target_is_directory=True)
    return workspace, workspace / ".flip-link", workspace / ".d-link"


async def _race_reads(
    path: str | Path, workspace: Path, flip: Callable[[], None]
) -> tuple[list[ReadResult], list[BaseException]]:
    """READS reads of ``path`` (a few at a time) while ``flip`` runs; results and exceptions."""
    results: list[ReadResult] = []
    escaped: list[BaseException] = []
    with flipping(flip):
        for _ in range(READS // PARALLEL):
            batch = asyncio.gather(
                *(_read(path, workspace) for _ in range(PARALLEL)), return_exceptions=True
            )
            # A hang guard, not a timing assert: a blocked open never returns at all.
            for outcome in await asyncio.wait_for(batch, 10):
                if isinstance(outcome, BaseException):
                    escaped.append(outcome)
                else:
                    results.append(outcome)
    return results, escaped


def _check_race_results(results: list[ReadResult], escaped: list[BaseException]) -> None:
    leaks = [r for r in results if SECRET in r.text]
    assert not leaks, f"{len(leaks)} of {READS} reads escaped the roots via a flipped link"
    assert not escaped, f"{len(escaped)} reads raised instead of answering, e.g. {escaped[0]!r}"
    for result in results:
        if result.ok:
            assert result.text == INSIDE
        else:
            assert result.text.startswith("Error: "), result.text
    assert any(r.ok for r in results), "the race never let a read through: nothing was tested"


async def test_file_flipped_to_an_outside_symlink_never_leaks(tmp_path: Path) -> None:
    workspace, file_link, _ = _race_layout(tmp_path)
    flip = flipper(workspace / "flip.txt", file_link)
    _check_race_results(*await _race_reads("flip.txt", workspace, flip))


async def test_directory_flipped_to_an_outside_symlink_never_leaks(tmp_path: Path) -> None:
    workspace, _, dir_link = _race_layout(tmp_path)
    flip = flipper(workspace / "d", dir_link)
    _check_race_results(*await _race_reads("d/f.txt", workspace, flip))


async def test_file_swapped_for_a_fifo_gives_error_text_and_never_hangs(tmp_path: Path) -> None:
    target, fifo = tmp_path / "swap.txt", tmp_path / ".fifo"
    target.write_text(INSIDE)
    os.mkfifo(fifo)
    try:
        results, escaped = await _race_reads(target, tmp_path, flipper(target, fifo))
    finally:
        for path in (target, fifo):
            release_fifo_readers(path)  # frees a reader stuck in open() (the old bug)
    assert not escaped, escaped[:3]
    for result in results:
        assert result.text == INSIDE or result.text.startswith("Error: "), result.text
    assert any(not r.ok and "not a regular file" in r.text for r in results)
    assert any(r.ok for r in results)


async def test_devices_and_fifos_given_directly_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    cases = [
        (await _read("pipe", tmp_path), "pipe"),
        (await _read("/dev/zero", tmp_path, extra_roots=[Path("/dev")]), "/dev/zero"),
        (await _read("zero", tmp_path, extra_roots=[Path("/dev")]), "/dev/zero"),
    ]
    for result, name in cases:
        assert not result.ok and result.path is None
        assert result.text.startswith("Error: ") and name in result.text
        assert "not a regular file" in result.text, result.text
    outside = await _read("zero", tmp_path)
    assert not outside.ok and "outside the directories read_file may read" in outside.text


async def test_without_proc_the_opened_file_is_checked_by_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text(INSIDE)
    (tmp_path / "alias.txt").symlink_to(tmp_path / "a.txt")
    real_readlink = os.readlink

    def no_proc(path: str | os.PathLike[str], *args: object, **kwargs: object) -> str:
        if str(path).startswith("/proc/self/fd/"):
            raise OSError(errno.ENOENT, "no /proc here")
        return real_readlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "readlink", no_proc)
    for name in ("a.txt", "alias.txt"):
        result = await _read(name, tmp_path)
        assert result.ok and result.text == INSIDE and result.path == (tmp_path / "a.txt").resolve()
