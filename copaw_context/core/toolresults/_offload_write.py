"""Streaming, crash-safe writes of offloaded text; their fsyncs group-committed in the background.

A text is encoded and written chunk by chunk (memory does not grow with it) to a temp file,
which is renamed to its final name before the path is returned: the notice naming the file
exists only after that, so a crash (``kill -9``: the page cache has the file) can never
leave a notice pointing at a missing or partial file. The file's fsync and its directory's
are not on the step path: :mod:`copaw_context.core.workspace.durable` batches them in a
background thread (one directory fsync per batch), and everything that makes a reference to
the file durable (the archive's append, the compaction commit, the reply's end after which
a host saves its state, the engine's close) waits for them first.
"""

from __future__ import annotations

import codecs
import logging
import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from copaw_context.core.toolresults._saved_tails import KEPT_BYTES, remember_tail
from copaw_context.core.toolresults._text_bytes import (
    CHUNK_CHARS,
    is_utf8,
    scrub_surrogates,
    utf8_scrubbed,
)
from copaw_context.core.workspace.confine_write import replace_at, writable_dir

__all__ = ["INLINE_CHARS", "SavedText", "fsync_directory", "write_atomically"]

logger = logging.getLogger("copaw_context")

INLINE_CHARS = 65_536
"""A saved text at most this long is written on the event loop (the hop to a worker thread
costs more than a write to the page cache and a rename; see ``OffloadStore.save_parts``)."""
_ESCAPE_ERRORS = "copaw-context-offload-escape"
_escaped = threading.local()


def _escape(error: UnicodeError) -> tuple[str | bytes, int]:
    """``backslashreplace``, noting that it happened (logged once per save)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    _escaped.flag = True
    return codecs.backslashreplace_errors(error)


codecs.register_error(_ESCAPE_ERRORS, _escape)


@dataclass(frozen=True)
class SavedText:
    """A saved text: its absolute path, its line count (newlines + 1), its size in bytes and,
    when the workspace store holds it instead of the file, its key (what a notice names)."""

    path: Path
    lines: int
    nbytes: int
    key: str | None = None


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


def _write_encoded(
    handle: BinaryIO, parts: Sequence[str], separator: str, encoding: str
) -> tuple[int, int, bytes]:
    """Write ``separator.join(parts)`` encoded, chunk by chunk; return (bytes, newlines,
    the last bytes written: up to ``KEPT_BYTES``)."""
    utf8 = is_utf8(encoding)
    encoder = None if utf8 else codecs.getincrementalencoder(encoding)(errors=_ESCAPE_ERRORS)
    written = newlines = 0
    end = b""

    def write(text: str, final: bool = False) -> None:
        nonlocal written, newlines, end
        if encoder is None:  # UTF-8 is stateless; lone surrogates are written as U+FFFD
            data = utf8_scrubbed(text)
            newlines += len(data) - len(data.replace(b"\n", b""))  # faster than count
        else:
            data = encoder.encode(scrub_surrogates(text), final)
            newlines += text.count("\n")
        handle.write(data)
        written += len(data)
        end = data[-KEPT_BYTES:] if len(data) >= KEPT_BYTES else (end + data)[-KEPT_BYTES:]

    for index, part in enumerate(parts):
        if index:
            write(separator)
        for at in range(0, len(part), CHUNK_CHARS):
            write(part[at : at + CHUNK_CHARS])
    write("", True)
    return written, newlines, end


def write_atomically(
    directory: Path,
    parts: Sequence[str],
    separator: str,
    encoding: str,
    workspace: Path | None = None,
) -> SavedText:
    """Write ``separator.join(parts)`` to a new ``<uuid4 hex>.txt`` in ``directory``: whole
    under its name when this returns, on disk once :func:`~copaw_context.core.workspace.
    durable.flush` returns.

    Raises OSError (no temp file is left behind). Characters ``encoding`` cannot represent
    are written as backslash escapes, with a warning. With ``workspace``, the folder is opened
    by descriptor from the workspace root and never through a link (even one swapped in after
    the check): :class:`~copaw_context.core.workspace.confine.OutsideWorkspaceError`.
    """
    final_name = f"{uuid.uuid4().hex}.txt"
    _escaped.flag = False
    with writable_dir(directory, workspace) as dir_fd:
        nbytes, newlines, end = replace_at(
            dir_fd,
            final_name,
            f".{uuid.uuid4().hex}.tmp",
            lambda handle: _write_encoded(handle, parts, separator, encoding),
            keep_mode=False,
            deferred=True,
        )
    final_path = directory / final_name
    remember_tail(str(final_path), nbytes, end)  # the compactor reads the tail: in memory
    if _escaped.flag:
        logger.warning(
            "offload: text is not fully encodable as %s; wrote backslash escapes to %s",
            encoding,
            final_path,
        )
    return SavedText(final_path, newlines + 1, nbytes)
