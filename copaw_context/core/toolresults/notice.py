"""The ``<<<TRUNCATED>>>`` notice: rendering, strict parsing and the path it names.

A *position* is ``(line, offset)``: the 1-based line number in the original full text
(lines split on ``"\\n"``; ``"\\r"`` is ordinary content) and the number of characters of
that line already consumed. The notice keeps the reference wording, but reports the real
excerpt size and the exact place to continue, including a ``line_offset`` when the cut
falls inside a line. Only a notice that re-renders byte for byte and agrees with the text
before it is ours; text that merely looks like one is ordinary text.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from copaw_context.core.toolresults._text_bytes import encoded_size, is_utf8, scrub_surrogates

__all__ = [
    "MAX_FILE_PATH_BYTES",
    "NOTICE_BUDGET_BYTES",
    "TRUNCATION_NOTICE_MARKER",
    "TruncationNotice",
    "check_file_path",
    "check_int",
    "file_path_fits_notice",
    "find_notice",
    "format_truncation_notice",
    "next_position",
    "notice_path",
    "parse_truncation_notice",
]

TRUNCATION_NOTICE_MARKER = "<<<TRUNCATED>>>"
NOTICE_BUDGET_BYTES = 1024
"""Upper bound on the notice, including the marker and the newline separating it."""

MAX_FILE_PATH_BYTES = 400
_MAX_NUMBER = 10**15 - 1  # 15 digits: keeps the notice inside its budget and parsable
_SEPARATOR = "\n" + TRUNCATION_NOTICE_MARKER + "\n"

_NUMBER = r"(0|[1-9][0-9]{0,14})"
_AT_LEAST = r"(at least )?"
_NOTICE_RE = re.compile(
    re.escape(TRUNCATION_NOTICE_MARKER) + r"\n"
    r"The output above was truncated\.\n"
    r"(?:The full content is saved to the file and contains " + _AT_LEAST + _NUMBER + r" lines "
    r"in total\.\n"
    r"|The full content could not be saved to a file; it contains " + _AT_LEAST + _NUMBER + r" "
    r"lines in total and the " + _NUMBER + r" bytes after this excerpt were omitted\.\n)"
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
    saved); it is the size of the text that followed the excerpt. ``total_is_lower_bound``:
    the text was too large to count its lines while cutting it, so ``total_lines`` counts
    only the lines of its beginning and the notice says "at least" (the continuation point
    is exact all the same; ``read_file`` reports the file's exact count).
    """

    file_path: str | None
    total_lines: int
    start_line: int
    start_offset: int
    excerpt_bytes: int
    next_line: int
    next_offset: int
    omitted_bytes: int | None = None
    total_is_lower_bound: bool = False


_SURROGATE = re.compile("[\ud800-\udfff]")


def next_position(text: str, end: int, start_line: int, start_offset: int) -> tuple[int, int]:
    """Where the text after ``text[:end]`` starts, for an excerpt starting at the given place."""
    newlines = text.count("\n", 0, end)
    if newlines == 0:
        return start_line, start_offset + end
    return start_line + newlines, end - text.rfind("\n", 0, end) - 1


def _quote_path(file_path: str) -> str:
    quoted = json.dumps(file_path, ensure_ascii=False)
    # Escape lone surrogates (undecodable file names) so the notice stays valid UTF-8.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def check_int(name: str, value: object, minimum: int) -> int:
    """``value`` if it is an int in ``[minimum, 10**15 - 1]``, else ValueError naming it."""
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
        check_int(name, getattr(notice, name), 0)
    check_int("start_line", notice.start_line, 1)
    check_int("next_line", notice.next_line, 1)
    start = f"line {notice.start_line}"
    if notice.start_offset > 0:
        start += f" (character {notice.start_offset})"
    excerpt = f"This excerpt starts at {start} and covers the next {notice.excerpt_bytes} bytes."
    total = ("at least " if notice.total_is_lower_bound else "") + f"{notice.total_lines} lines"
    lines = [TRUNCATION_NOTICE_MARKER, "The output above was truncated."]
    if notice.file_path is None:
        omitted = check_int("omitted_bytes", notice.omitted_bytes, 0)
        lines.append(
            f"The full content could not be saved to a file; it contains {total} in total and "
            f"the {omitted} bytes after this excerpt were omitted."
        )
        lines.append(excerpt)
    else:
        check_file_path(notice.file_path)
        call = f"file_path={_quote_path(notice.file_path)} start_line={notice.next_line}"
        if notice.next_offset > 0:
            call += f" line_offset={notice.next_offset}"
        lines.append(f"The full content is saved to the file and contains {total} in total.")
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


def check_file_path(file_path: str) -> None:
    """ValueError when ``file_path`` is too long (quoted) for a notice."""
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
    found = find_notice(text, encoding)
    return None if found is None else (text[: found[0]], found[1])


def find_notice(
    text: str, encoding: str = "utf-8", *, scrub: bool = False
) -> tuple[int, TruncationNotice] | None:
    """:func:`parse_truncation_notice` without copying the body: ``(body_end, notice)``.

    With ``scrub``, the answer is the one for ``scrub_surrogates(text)`` (only the notice
    itself is scrubbed; the body's size and lines do not change). The work is bounded by
    the notice and by the body size the notice claims.
    """
    separator_at = text.rfind(_SEPARATOR, max(0, len(text) - NOTICE_BUDGET_BYTES))
    if separator_at < 0:
        return None
    rendered = text[separator_at + 1 :]
    match = _NOTICE_RE.fullmatch(scrub_surrogates(rendered) if scrub else rendered)
    if match is None:
        return None
    notice = _notice_from(match, text, separator_at, encoding)
    if notice is None:
        return None
    try:
        if format_truncation_notice(notice) != match.group(0):
            return None
    except ValueError:
        return None
    return separator_at, notice


def _notice_from(
    match: re.Match[str], text: str, body_end: int, encoding: str
) -> TruncationNotice | None:
    """The notice ``match`` describes, if it agrees with ``text[:body_end]``, else None."""
    (saved_least, saved_total, lost_least, lost_total, omitted, start, start_off, size, path) = (
        match.groups()[:9]
    )
    next_line, next_off = match.group(10), match.group(11)
    file_path: str | None = None
    if path is not None:
        try:
            file_path = json.loads(path)
        except ValueError:
            return None
    if (path is None) != (saved_total is None) or not isinstance(file_path, str | None):
        return None
    start_line, start_offset, excerpt_bytes = int(start), int(start_off or 0), int(size)
    if start_line < 1 or (is_utf8(encoding) and not body_end <= excerpt_bytes <= 4 * body_end):
        return None  # a UTF-8 character is 1 to 4 bytes: cheap rejection of a wrong size
    computed_next = next_position(text, body_end, start_line, start_offset)
    if path is not None and (int(next_line), int(next_off or 0)) != computed_next:
        return None
    if excerpt_bytes != encoded_size(text, encoding, body_end):
        return None
    return TruncationNotice(
        file_path=file_path,
        total_lines=int(saved_total if saved_total is not None else lost_total),
        start_line=start_line,
        start_offset=start_offset,
        excerpt_bytes=excerpt_bytes,
        next_line=computed_next[0],
        next_offset=computed_next[1],
        omitted_bytes=None if omitted is None else int(omitted),
        total_is_lower_bound=(saved_least or lost_least) is not None,
    )
