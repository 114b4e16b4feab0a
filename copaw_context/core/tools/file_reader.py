"""Streaming, byte-bounded, sandboxed text-file reader behind the ``read_file`` tool.

The output is the exact slice of the file from ``(start_line, line_offset)`` to the end of
``end_line`` (with its ``"\\n"``), so consecutive reads that follow the notices rebuild
the file byte for byte. Only the requested slice plus the byte budget is ever held in
memory; the line count is a chunked binary scan, cached per file version. Problems the
agent can fix come back as an ``"Error: ..."`` text, never as an exception. The file is
opened once and checked after opening (see ``_safe_open``), so a file or directory swapped
for a symlink or a FIFO while it is read can neither escape the roots nor block the read.
``read_file`` has a saved result opened by the file store (``opener``: ``FileStore.open_blob``).
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from copaw_context.core.toolresults.notice import _quote_path as quote_path
from copaw_context.core.toolresults.truncation import (
    MAX_FILE_PATH_BYTES,
    TruncationNotice,
    cut_prefix_to_bytes,
    format_truncation_notice,
    notice_path,
)
from copaw_context.core.tools._line_index import locate_line
from copaw_context.core.workspace.safe_open import ReadFailure as _ReadFailure
from copaw_context.core.workspace.safe_open import is_path_allowed, open_inside, resolve_inside

__all__ = ["Opener", "ReadResult", "is_path_allowed", "read_text_file"]

Opener = Callable[[Sequence[Path]], tuple[BinaryIO, Path]]
"""Opens the named file, given the roots it may be in: (its stream, its real path)."""
_READ_CHUNK_BYTES = 1 << 16
_BINARY_PROBE_BYTES = 8192


@dataclass(frozen=True)
class ReadResult:
    """What one read produced; ``text`` is exactly what the agent sees."""

    text: str
    ok: bool
    path: Path | None
    start_line: int
    line_offset: int
    total_lines: int
    truncated: bool
    next_line: int | None
    next_offset: int | None


async def read_text_file(
    file_path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    line_offset: int | None = None,
    *,
    workspace: Path,
    extra_roots: Sequence[Path] = (),
    max_bytes: int = 50000,
    exempt_extensions: Sequence[str] = (".md",),
    exempt_max_bytes: int | None = None,
    encoding: str = "utf-8",
    text_dirs: Sequence[Path] = (),
    relative_notices: bool = False,
    opener: Opener | None = None,
) -> ReadResult:
    """Read lines ``start_line..end_line`` (1-based, inclusive) of a text file, bounded.

    Bad arguments from the agent and unreadable paths give ``ok=False`` and an error
    text; bad configuration (``max_bytes``, ``exempt_max_bytes``, ``encoding``) raises
    ValueError. Files under ``text_dirs`` (saved tool outputs; relative folders are inside
    the workspace) are text by definition: never refused as binary for holding NUL bytes.
    ``relative_notices``: the notices name the file relative to the workspace (a store key,
    which every replica of the workspace can follow). ``opener`` opens what ``file_path``
    names (a saved result, through the file store); when it fails the path is opened.
    """
    _check_limit("max_bytes", max_bytes)
    if exempt_max_bytes is not None:
        _check_limit("exempt_max_bytes", exempt_max_bytes)
    _check_encoding(encoding)
    if isinstance(exempt_extensions, str):
        exempt_extensions = (exempt_extensions,)
    exempt = {_normalise_suffix(ext) for ext in exempt_extensions}
    request = _Request(
        file_path=file_path,
        start_line=start_line,
        end_line=end_line,
        line_offset=line_offset,
        workspace=Path(workspace),
        roots=(Path(workspace), *(Path(r) for r in extra_roots)),
        max_bytes=max_bytes,
        exempt=frozenset(exempt),
        exempt_max_bytes=exempt_max_bytes,
        encoding=encoding,
        text_dirs=tuple(Path(workspace) / d for d in text_dirs),  # absolute ones stay
        relative_notices=relative_notices,
        opener=opener,
    )
    return await asyncio.to_thread(_read_sync, request)


@dataclass(frozen=True)
class _Request:
    file_path: str
    start_line: int | None
    end_line: int | None
    line_offset: int | None
    workspace: Path
    roots: tuple[Path, ...]
    max_bytes: int
    exempt: frozenset[str]
    exempt_max_bytes: int | None
    encoding: str
    text_dirs: tuple[Path, ...] = ()
    relative_notices: bool = False
    opener: Opener | None = None


def _check_limit(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        raise ValueError(f"{name} must be an integer >= 4 (room for one character), got {value!r}")


def _check_encoding(encoding: str) -> None:
    try:
        newline = "\n".encode(encoding)
    except LookupError:
        raise ValueError(f"encoding={encoding!r} is not a known text encoding") from None
    if newline != b"\n":
        raise ValueError(
            f"encoding={encoding!r} is not ASCII-compatible; read_text_file needs an encoding "
            "in which a newline is the single byte 0x0A (utf-8, latin-1, gbk, ...)"
        )


def _normalise_suffix(extension: str) -> str:
    extension = extension.lower()
    return extension if extension.startswith(".") else "." + extension


def _read_sync(request: _Request) -> ReadResult:
    try:
        _check_arguments(request)
        stream, real = _open(request)
        with stream:  # from here on only the opened file is read, never the name again
            notice_path = _notice_path(real, request.workspace, request.relative_notices)
            return _read_slice(stream, request, real, notice_path)
    except _ReadFailure as failure:
        start, offset = request.start_line, request.line_offset
        return ReadResult(
            text=f"Error: {failure}",
            ok=False,
            path=None,
            start_line=start if isinstance(start, int) and start > 0 else 1,
            line_offset=offset if isinstance(offset, int) and offset > 0 else 0,
            total_lines=0,
            truncated=False,
            next_line=None,
            next_offset=None,
        )


def _open(request: _Request) -> tuple[BinaryIO, Path]:
    """Open the file once: by ``opener``, else (or when it fails: its error) by its path."""
    if request.opener is not None:
        try:
            return request.opener(request.roots)
        except _ReadFailure:
            pass
    named = resolve_inside(request.file_path, request.workspace, request.roots)
    return open_inside(named, request.roots)


def _check_arguments(request: _Request) -> None:
    for name, value, minimum, meaning in (
        ("start_line", request.start_line, 1, "lines are numbered from 1"),
        ("end_line", request.end_line, 1, "lines are numbered from 1"),
        ("line_offset", request.line_offset, 0, "it counts characters of start_line to skip"),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise _ReadFailure(
                f"{name} must be a whole number (such as 2), got {value!r}. Pass a line "
                "number, or omit it."
            )
        if value < minimum:
            raise _ReadFailure(f"{name}={value} is invalid; use {minimum} or more ({meaning}).")
    start = request.start_line or 1
    if request.end_line is not None and request.end_line < start:
        raise _ReadFailure(
            f"end_line={request.end_line} is before start_line={start}. Use end_line >= "
            "start_line, or omit end_line to read to the end of the file."
        )


def _notice_path(real: Path, workspace: Path, relative: bool = False) -> str:
    if relative:
        try:
            return real.relative_to(workspace.resolve()).as_posix()
        except (OSError, ValueError, RuntimeError):
            pass
    try:
        return notice_path(real, workspace)  # relative paths resolve against the workspace
    except ValueError:
        raise _ReadFailure(
            f"the path {real} is too long to be paged through (over {MAX_FILE_PATH_BYTES} bytes "
            "in a notice). Copy the file "
            "to a shorter path inside the workspace and read that."
        ) from None


def _read_slice(stream: BinaryIO, request: _Request, real: Path, notice_path: str) -> ReadResult:
    start_line = request.start_line or 1
    line_offset = request.line_offset or 0
    limit = request.max_bytes
    if real.suffix.lower() in request.exempt and request.exempt_max_bytes is not None:
        limit = request.exempt_max_bytes
    encoding = request.encoding
    try:
        if not _is_under(real, request.text_dirs) and b"\x00" in stream.read(_BINARY_PROBE_BYTES):
            raise _ReadFailure(
                f"{real} looks like a binary file (NUL byte in its first 8 KB); read_file only "
                "reads text files."
            )
        info = os.fstat(stream.fileno())
        start_pos, segments = locate_line(stream, real, info, start_line)
        # Lines as `wc -l` and `cat -n` count them: a final newline ends the last line.
        total = segments - 1 if _ends_with_newline(stream, info.st_size) else segments
        if start_pos is None or start_line > max(total, 1):
            raise _ReadFailure(_past_the_end(start_line, real, total))
        last_line = total if request.end_line is None else min(request.end_line, total)
        # Newlines the slice must include; the file's last line may have none, so read to EOF.
        newlines_wanted = last_line - start_line + 1 if last_line < total else None
        text, complete = _decode_slice(
            stream, real, start_pos, start_line, line_offset, newlines_wanted, limit, encoding
        )
        more_after = complete and last_line < total
    except OSError as exc:
        raise _ReadFailure(f"cannot read {real}: {exc.strerror or exc}.") from None

    body = cut_prefix_to_bytes(text, limit, encoding)
    truncated = body != text  # always so when reading stopped early (text > limit)
    result = ReadResult(
        text=body,
        ok=True,
        path=real,
        start_line=start_line,
        line_offset=line_offset,
        total_lines=total,
        truncated=truncated,
        next_line=None,
        next_offset=None,
    )
    if truncated:
        return _with_notice(result, notice_path, encoding)
    return _with_range_notice(result, last_line, notice_path) if more_after else result


def _past_the_end(start_line: int, real: Path, total: int) -> str:
    if total == 0:
        return f"start_line={start_line} is past the end of {real}: the file is empty."
    return (
        f"start_line={start_line} is past the end of {real}: the file has {total} "
        f"line{'s' if total > 1 else ''}. Use start_line between 1 and {total}."
    )


def _with_range_notice(result: ReadResult, last_line: int, notice_path: str) -> ReadResult:
    """``result`` (all of the lines asked for) ending with where the file goes on."""
    first = result.start_line
    span = f"Lines {first}-{last_line}" if last_line > first else f"Line {first}"
    if result.line_offset:
        span += f" (from character {result.line_offset} of line {first})"
    next_line = last_line + 1
    call = f"file_path={quote_path(notice_path)} start_line={next_line}"
    notice = (
        f"[{span} of {result.total_lines} shown in full. To read on, call `read_file` with {call}.]"
    )
    return replace(result, text=f"{result.text}\n{notice}", next_line=next_line, next_offset=0)


def _with_notice(result: ReadResult, notice_path: str, encoding: str) -> ReadResult:
    """``result`` ending with the notice that says where to continue."""
    body, start_line, line_offset = result.text, result.start_line, result.line_offset
    newlines = body.count("\n")
    if newlines:
        next_line, next_offset = start_line + newlines, len(body) - body.rfind("\n") - 1
    else:
        next_line, next_offset = start_line, line_offset + len(body)
    notice = TruncationNotice(
        file_path=notice_path,
        total_lines=result.total_lines,
        start_line=start_line,
        start_offset=line_offset,
        excerpt_bytes=len(body.encode(encoding)),
        next_line=next_line,
        next_offset=next_offset,
    )
    return replace(
        result,
        text=body + "\n" + format_truncation_notice(notice),
        next_line=next_line,
        next_offset=next_offset,
    )


def _is_under(real: Path, directories: Sequence[Path]) -> bool:
    """Whether the real path ``real`` lies inside one of ``directories`` (links resolved)."""
    for directory in directories:
        try:
            if real.is_relative_to(directory.resolve()):
                return True
        except (OSError, RuntimeError):
            continue
    return False


def _decode_slice(
    stream: BinaryIO,
    real: Path,
    start_pos: int,
    start_line: int,
    line_offset: int,
    newlines_wanted: int | None,
    limit: int,
    encoding: str,
) -> tuple[str, bool]:
    """Decode from ``start_pos``; return ``(text, complete)``.

    ``complete`` is False when reading stopped because the text already exceeds ``limit``
    bytes; the text is then a prefix of the slice, longer than any excerpt of it.
    """
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    stream.seek(start_pos)
    position = start_pos
    to_skip = line_offset
    skipped = 0
    pieces: list[str] = []
    size = 0
    while True:
        chunk = stream.read(_READ_CHUNK_BYTES)
        final = not chunk
        try:
            text = decoder.decode(chunk, final)
        except UnicodeDecodeError as exc:
            raise _ReadFailure(
                f"{real} is not valid {encoding} text (undecodable byte near offset "
                f"{position + exc.start}); read_file only reads text files."
            ) from None
        position += len(chunk)
        if to_skip:
            head = text[:to_skip]
            newline = head.find("\n")
            if newline >= 0 or (final and len(head) < to_skip):
                length = skipped + (newline if newline >= 0 else len(head))
                raise _ReadFailure(
                    f"line_offset={line_offset} is past the end of line {start_line} of {real} "
                    f"({length} characters). Use line_offset between 0 and {length}."
                )
            skipped += len(head)
            to_skip -= len(head)
            text = text[len(head) :]
        done = False
        if text and newlines_wanted is not None:
            text, newlines_wanted = _up_to_newlines(text, newlines_wanted)
            done = newlines_wanted == 0
        if text:
            pieces.append(text)
            size += len(text.encode(encoding))
        if done or final:
            return "".join(pieces), True
        if size > limit:
            return "".join(pieces), False


def _up_to_newlines(text: str, wanted: int) -> tuple[str, int]:
    """``text`` up to its ``wanted``-th newline, and how many newlines are still wanted."""
    in_text = text.count("\n")
    if in_text < wanted:
        return text, wanted - in_text
    index = -1
    for _ in range(wanted):
        index = text.index("\n", index + 1)
    return text[: index + 1], 0


def _ends_with_newline(stream: BinaryIO, file_size: int) -> bool:
    """Whether the file ends with a newline (an empty file counts: it has no lines)."""
    if file_size == 0:
        return True
    stream.seek(file_size - 1)
    return stream.read(1) == b"\n"
