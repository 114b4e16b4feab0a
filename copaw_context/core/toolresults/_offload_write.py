"""Streaming, crash-safe writes of offloaded text, with group-committed directory fsyncs.

A text is encoded and written chunk by chunk (memory does not grow with it) to a temp file,
which is fsynced, renamed to its final name, and the directory is fsynced before the path
is returned: the notice naming the file exists only after that, so a crash can never leave
a notice pointing at a missing or partial file. Saves that run at the same time (parallel
tool calls in one step) share directory fsyncs: one fsync covers every rename that finished
before it started (group commit), so N concurrent saves cost about N file fsyncs (run in
parallel) plus one or two directory fsyncs instead of N.
"""

from __future__ import annotations

import codecs
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from copaw_context.core.toolresults._text_bytes import (
    CHUNK_CHARS,
    is_utf8,
    scrub_surrogates,
    utf8_scrubbed,
)
from copaw_context.core.workspace.confine_write import replace_at, writable_dir

__all__ = ["SavedText", "directory_sync", "fsync_directory", "write_atomically"]

logger = logging.getLogger("copaw_context")

_ESCAPE_ERRORS = "copaw-context-offload-escape"
_escaped = threading.local()
_sync_file: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)


def _escape(error: UnicodeError) -> tuple[str | bytes, int]:
    """``backslashreplace``, noting that it happened (logged once per save)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    _escaped.flag = True
    return codecs.backslashreplace_errors(error)


codecs.register_error(_ESCAPE_ERRORS, _escape)


@dataclass(frozen=True)
class SavedText:
    """A saved text: its absolute path, its line count (newlines + 1) and its size in bytes."""

    path: Path
    lines: int
    nbytes: int


def fsync_directory(directory: Path) -> None:
    """Persist the renames in ``directory``; best effort (not supported on every platform)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _DirectorySync:
    """Group commit: :meth:`sync` returns after a directory fsync that started after the call."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._condition = threading.Condition()
        self._started = 0
        self._finished = 0
        self._running = False

    def sync(self) -> None:
        with self._condition:
            wanted = self._started + 1  # any fsync starting from now covers our rename
            while self._finished < wanted:
                if self._running:
                    self._condition.wait()
                    continue
                self._running = True
                self._started += 1
                generation = self._started
                self._condition.release()
                try:
                    fsync_directory(self._directory)
                finally:
                    self._condition.acquire()
                    self._running = False
                    self._finished = generation
                    self._condition.notify_all()


_syncs: dict[Path, _DirectorySync] = {}
_syncs_lock = threading.Lock()


def directory_sync(directory: Path) -> Callable[[], None]:
    """The group-committed directory fsync shared by every store writing to ``directory``."""
    with _syncs_lock:
        sync = _syncs.get(directory)
        if sync is None:
            sync = _syncs[directory] = _DirectorySync(directory)
        return sync.sync


def _write_encoded(
    handle: BinaryIO, parts: Sequence[str], separator: str, encoding: str
) -> tuple[int, int]:
    """Write ``separator.join(parts)`` encoded, chunk by chunk; return (bytes, newlines)."""
    utf8 = is_utf8(encoding)
    encoder = None if utf8 else codecs.getincrementalencoder(encoding)(errors=_ESCAPE_ERRORS)
    written = newlines = 0

    def write(text: str, final: bool = False) -> None:
        nonlocal written, newlines
        if encoder is None:  # UTF-8 is stateless; lone surrogates are written as U+FFFD
            data = utf8_scrubbed(text)
            newlines += len(data) - len(data.replace(b"\n", b""))  # faster than count
        else:
            data = encoder.encode(scrub_surrogates(text), final)
            newlines += text.count("\n")
        handle.write(data)
        written += len(data)

    for index, part in enumerate(parts):
        if index:
            write(separator)
        for at in range(0, len(part), CHUNK_CHARS):
            write(part[at : at + CHUNK_CHARS])
    write("", True)
    return written, newlines


def write_atomically(
    directory: Path,
    parts: Sequence[str],
    separator: str,
    encoding: str,
    workspace: Path | None = None,
) -> SavedText:
    """Write ``separator.join(parts)`` to a new ``<uuid4 hex>.txt`` in ``directory``, durably.

    Raises OSError (no temp file is left behind). Characters ``encoding`` cannot represent
    are written as backslash escapes, with a warning. With ``workspace``, the folder is opened
    by descriptor from the workspace root and never through a link (even one swapped in after
    the check): :class:`~copaw_context.core.workspace.confine.OutsideWorkspaceError`.
    """
    final_name = f"{uuid.uuid4().hex}.txt"
    _escaped.flag = False
    with writable_dir(directory, workspace) as dir_fd:
        nbytes, newlines = replace_at(
            dir_fd,
            final_name,
            f".{uuid.uuid4().hex}.tmp",
            lambda handle: _write_encoded(handle, parts, separator, encoding),
            sync=_sync_file,
            keep_mode=False,
        )
    final_path = directory / final_name
    if _escaped.flag:
        logger.warning(
            "offload: text is not fully encodable as %s; wrote backslash escapes to %s",
            encoding,
            final_path,
        )
    directory_sync(directory)()
    return SavedText(final_path, newlines + 1, nbytes)
