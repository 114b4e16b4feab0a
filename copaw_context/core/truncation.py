"""Byte-bounded truncation of tool output with an exact, re-parsable continuation notice.

A *position* is ``(line, offset)``: the 1-based line number in the original full text
(lines split on ``"\\n"``; ``"\\r"`` is ordinary content) and the number of characters of
that line already consumed. The notice keeps the reference wording, but reports the real
excerpt size and the exact place to continue, including a ``line_offset`` when the cut
falls inside a line. Unlike the reference, text that merely *contains* the marker is
ordinary text and is bounded like any other.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "NOTICE_BUDGET_BYTES",
    "TRUNCATION_NOTICE_MARKER",
    "TruncationNotice",
    "MAX_FILE_PATH_BYTES",
    "count_lines",
    "cut_prefix_to_bytes",
    "file_path_fits_notice",
    "format_truncation_notice",
    "notice_path",
    "parse_truncation_notice",
    "scrub_surrogates",
    "truncate_text_output",
]

TRUNCATION_NOTICE_MARKER = "<<<TRUNCATED>>>"
NOTICE_BUDGET_BYTES = 1024
"""Upper bound on the notice, including the marker and the newline separating it."""

MAX_FILE_PATH_BYTES = 400
_MAX_NUMBER = 10**15 - 1  # 15 digits: keeps the notice inside its budget and parsable
_SEPARATOR = "\n" + TRUNCATION_NOTICE_MARKER + "\n"
_SURROGATE = re.compile("[\ud800-\udfff]")

_NUMBER = r"(0|[1-9][0-9]{0,14})"
_NOTICE_RE = re.compile(
    re.escape(TRUNCATION_NOTICE_MARKER) + r"\n"
    r"The output above was truncated\.\n"
    r"(?:The full content is saved to the file and contains " + _NUMBER + r" lines in total\.\n"
    r"|The full content could not be saved to a file; it contains " + _NUMBER + r" lines in "
    r"total and the " + _NUMBER + r" bytes after this excerpt were omitted\.\n)"
    r"This excerpt starts at line " + _NUMBER + r"(?: \(character " + _NUMBER + r"\))?"
    r" and covers the next " + _NUMBER + r" bytes\."
    r"(?:\nIf the current content is not enough, call `read_file` with "
    r'file_path=("(?:[^"\\\n]|\\.)*") start_line=' + _NUMBER + r"(?: line_offset=" + _NUMBER + r")?"
    r" to read more\.)?"
)


@dataclass(frozen=True)
class TruncationNotice:
    """The fields of one of our notices.

    ``omitted_bytes`` is set only when ``file_path`` is None (the full text could not be
    saved); it is the size of the text that followed the excerpt.
    """

    file_path: str | None
    total_lines: int
    start_line: int
    start_offset: int
    excerpt_bytes: int
    next_line: int
    next_offset: int
    omitted_bytes: int | None = None


def count_lines(text: str) -> int:
    """Number of lines as the reference counts them: ``text.count("\\n") + 1``."""
    return text.count("\n") + 1


def scrub_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (idempotent).

    Lone surrogates (e.g. from ``surrogateescape`` decoding) are not valid text in any UTF
    encoding. Scrub once, then save and cut the same string: U+FFFD has the same UTF-8 size
    (3 bytes) and length (1 character) as the surrogate it replaces, so positions stay put
    and the saved file and the excerpt agree byte for byte.
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _codec_name(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(
            f"encoding={encoding!r} is not a known text encoding; use e.g. 'utf-8'"
        ) from None


def _encode(text: str, encoding: str) -> bytes:
    name = _codec_name(encoding)
    # Lone surrogates are measured, never rejected: surrogatepass for the UTF codecs,
    # an over-estimating escape for the others.
    errors = (
        "surrogatepass" if name.startswith(("utf-8", "utf-16", "utf-32")) else "backslashreplace"
    )
    return text.encode(encoding, errors=errors)


def _encoded_size(text: str, encoding: str) -> int:
    return len(_encode(text, encoding))


def cut_prefix_to_bytes(text: str, max_bytes: int, encoding: str = "utf-8") -> str:
    """Longest prefix of ``text`` whose encoding fits ``max_bytes``, never splitting a character.

    A non-empty ``text`` always keeps at least its first character.
    """
    data = _encode(text, encoding)
    if len(data) <= max_bytes:
        return text
    if _codec_name(encoding) == "utf-8":
        cut = max(max_bytes, 0)
        while cut > 0 and (data[cut] & 0xC0) == 0x80:  # step back off continuation bytes
            cut -= 1
        body = data[:cut].decode("utf-8", errors="surrogatepass")
    else:
        low, high = 0, min(len(text), max(max_bytes, 0))
        while low < high:
            mid = (low + high + 1) // 2
            if _encoded_size(text[:mid], encoding) <= max_bytes:
                low = mid
            else:
                high = mid - 1
        body = text[:low]
    return body if body else text[:1]


def _next_position(body: str, start_line: int, start_offset: int) -> tuple[int, int]:
    newlines = body.count("\n")
    if newlines == 0:
        return start_line, start_offset + len(body)
    return start_line + newlines, len(body) - body.rfind("\n") - 1


def _quote_path(file_path: str) -> str:
    quoted = json.dumps(file_path, ensure_ascii=False)
    # Escape lone surrogates (undecodable file names) so the notice stays valid UTF-8.
    return "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in quoted)


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not minimum <= value <= _MAX_NUMBER:
        raise ValueError(
            f"{name}={value} is out of range; use an integer in [{minimum}, {_MAX_NUMBER}]"
        )
    return value


def format_truncation_notice(notice: TruncationNotice) -> str:
    """Render ``notice`` (starting with the marker, without the separating newline)."""
    for name in ("total_lines", "start_offset", "excerpt_bytes", "next_offset"):
        _check_int(name, getattr(notice, name), 0)
    _check_int("start_line", notice.start_line, 1)
    _check_int("next_line", notice.next_line, 1)
    start = f"line {notice.start_line}"
    if notice.start_offset > 0:
        start += f" (character {notice.start_offset})"
    excerpt = f"This excerpt starts at {start} and covers the next {notice.excerpt_bytes} bytes."
    lines = [TRUNCATION_NOTICE_MARKER, "The output above was truncated."]
    if notice.file_path is None:
        omitted = _check_int("omitted_bytes", notice.omitted_bytes, 0)
        lines.append(
            "The full content could not be saved to a file; it contains "
            f"{notice.total_lines} lines in total and the {omitted} bytes after this excerpt "
            "were omitted."
        )
        lines.append(excerpt)
    else:
        _check_file_path(notice.file_path)
        call = f"file_path={_quote_path(notice.file_path)} start_line={notice.next_line}"
        if notice.next_offset > 0:
            call += f" line_offset={notice.next_offset}"
        lines.append(
            "The full content is saved to the file and contains "
            f"{notice.total_lines} lines in total."
        )
        lines.append(excerpt)
        lines.append(
            f"If the current content is not enough, call `read_file` with {call} to read more."
        )
    return "\n".join(lines)


def _quoted_path_size(file_path: str) -> int:
    return len(_quote_path(file_path).encode("utf-8")) - 2


def file_path_fits_notice(file_path: str) -> bool:
    """Whether ``file_path`` is short enough (quoted) to be named by a notice."""
    return _quoted_path_size(file_path) <= MAX_FILE_PATH_BYTES


def notice_path(path: Path, workspace: Path | None) -> str:
    """How a notice should name ``path``: absolute if that fits, else relative to ``workspace``.

    ``read_file`` resolves relative paths against the workspace, so the agent can still
    follow the notice. Raises ValueError when neither form fits in ``MAX_FILE_PATH_BYTES``.
    """
    absolute = Path(path).expanduser().absolute()
    if file_path_fits_notice(str(absolute)):
        return str(absolute)
    relative = _relative_to(absolute, workspace)
    if relative is not None and file_path_fits_notice(relative):
        return relative
    if workspace is None:
        why = "no workspace was given to name it relative to"
    elif relative is None:
        why = f"it is not inside the workspace {workspace}"
    else:
        why = f"relative to the workspace it is still {_quoted_path_size(relative)} bytes"
    raise ValueError(
        f"the path {absolute} is {_quoted_path_size(str(absolute))} bytes as quoted in a "
        f"notice, over the {MAX_FILE_PATH_BYTES} that fit, and {why}. Use a shorter "
        "workspace or tool_results_cache path."
    )


def _relative_to(path: Path, workspace: Path | None) -> str | None:
    if workspace is None:
        return None
    base = Path(workspace).expanduser().absolute()
    candidates = [(path, base)]
    with contextlib.suppress(OSError, RuntimeError):  # symlinked workspaces: real locations
        candidates.append((path.resolve(), base.resolve()))
    for inner, outer in candidates:
        if inner != outer and inner.is_relative_to(outer):
            return str(inner.relative_to(outer))
    return None


def _check_file_path(file_path: str) -> None:
    quoted_size = _quoted_path_size(file_path)
    if quoted_size > MAX_FILE_PATH_BYTES:
        raise ValueError(
            f"file_path is {quoted_size} bytes as quoted in the notice; at most "
            f"{MAX_FILE_PATH_BYTES} are allowed so the notice stays within "
            f"{NOTICE_BUDGET_BYTES} bytes. Save the full output under a shorter path."
        )


def parse_truncation_notice(
    text: str, encoding: str = "utf-8"
) -> tuple[str, TruncationNotice] | None:
    """Split ``text`` into ``(body, notice)`` if it ends with one of our notices, else None.

    Only a notice that re-renders byte for byte and agrees with its body (size in
    ``encoding`` and continuation point) counts; anything else is ordinary text.
    """
    separator_at = text.rfind(_SEPARATOR, max(0, len(text) - NOTICE_BUDGET_BYTES))
    if separator_at < 0:
        return None
    rendered = text[separator_at + 1 :]
    match = _NOTICE_RE.fullmatch(rendered)
    if match is None:
        return None
    (saved_total, lost_total, omitted, start, start_off, size, path, next_line, next_off) = (
        match.groups()
    )
    file_path: str | None = None
    if path is not None:
        try:
            file_path = json.loads(path)
        except ValueError:
            return None
    if (path is None) != (saved_total is None) or not isinstance(file_path, str | None):
        return None
    body = text[:separator_at]
    start_line, start_offset = int(start), int(start_off or 0)
    if start_line < 1:
        return None
    computed_next = _next_position(body, start_line, start_offset)
    if path is not None and (int(next_line), int(next_off or 0)) != computed_next:
        return None
    notice = TruncationNotice(
        file_path=file_path,
        total_lines=int(saved_total if saved_total is not None else lost_total),
        start_line=start_line,
        start_offset=start_offset,
        excerpt_bytes=int(size),
        next_line=computed_next[0],
        next_offset=computed_next[1],
        omitted_bytes=None if omitted is None else int(omitted),
    )
    if notice.excerpt_bytes != _encoded_size(body, encoding):
        return None
    try:
        if format_truncation_notice(notice) != rendered:
            return None
    except ValueError:
        return None
    return body, notice


def truncate_text_output(
    text: str,
    start_line: int = 1,
    total_lines: int = 0,
    max_bytes: int = 51200,
    file_path: str | None = None,
    encoding: str = "utf-8",
    *,
    start_offset: int = 0,
    recut_notice: bool = True,
) -> str:
    """Bound ``text`` to ``max_bytes`` (plus a notice of at most ``NOTICE_BUDGET_BYTES``).

    ``text`` is the content from position ``(start_line, start_offset)`` onward; the full
    content is in ``file_path`` (None: it could not be saved). ``total_lines=0`` means
    unknown. Text that already ends with our notice is re-cut, keeping its path, line
    count and start; a body that fits is returned unchanged. With ``recut_notice=False``
    such a notice is ordinary content (e.g. a relayed excerpt whose notice is not ours)
    and the text is cut like any other, naming ``file_path``. Lone surrogates are replaced
    by U+FFFD first (:func:`scrub_surrogates`), so the output is always valid text.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 4:
        raise ValueError(
            f"max_bytes must be an integer >= 4 (room for one character), got {max_bytes!r}"
        )
    _check_int("start_line", start_line, 1)
    _check_int("start_offset", start_offset, 0)
    _check_int("total_lines", total_lines, 0)
    _codec_name(encoding)
    if file_path is not None:
        _check_file_path(file_path)

    text = scrub_surrogates(text)
    parsed = parse_truncation_notice(text, encoding) if recut_notice else None
    if parsed is not None:
        return _retruncate(*parsed, max_bytes, encoding, original=text)
    if _encoded_size(text, encoding) <= max_bytes:
        return text
    body = cut_prefix_to_bytes(text, max_bytes, encoding)
    body_bytes = _encoded_size(body, encoding)
    next_line, next_offset = _next_position(body, start_line, start_offset)
    notice = TruncationNotice(
        file_path=file_path,
        total_lines=total_lines or start_line - 1 + count_lines(text),
        start_line=start_line,
        start_offset=start_offset,
        excerpt_bytes=body_bytes,
        next_line=next_line,
        next_offset=next_offset,
        omitted_bytes=None if file_path is not None else _encoded_size(text, encoding) - body_bytes,
    )
    return body + "\n" + format_truncation_notice(notice)


def _retruncate(
    body: str, old: TruncationNotice, max_bytes: int, encoding: str, *, original: str
) -> str:
    if old.excerpt_bytes <= max_bytes:
        return original
    new_body = cut_prefix_to_bytes(body, max_bytes, encoding)
    new_bytes = _encoded_size(new_body, encoding)
    next_line, next_offset = _next_position(new_body, old.start_line, old.start_offset)
    omitted = None
    if old.omitted_bytes is not None:
        omitted = old.omitted_bytes + old.excerpt_bytes - new_bytes
    notice = TruncationNotice(
        file_path=old.file_path,
        total_lines=old.total_lines,
        start_line=old.start_line,
        start_offset=old.start_offset,
        excerpt_bytes=new_bytes,
        next_line=next_line,
        next_offset=next_offset,
        omitted_bytes=omitted,
    )
    return new_body + "\n" + format_truncation_notice(notice)
