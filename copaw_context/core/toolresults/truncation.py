"""Byte-bounded truncation of tool output with an exact, re-parsable continuation notice.

Only a prefix is ever kept, so a cut looks only at that prefix (the first ``max_bytes + 1``
characters in UTF-8) plus a bounded look-ahead for the line count: cutting 100 MB costs
what cutting 1 MB does. Lone surrogates are replaced by U+FFFD in what is kept (the offload
store writes them the same way). Unlike the reference, text that merely *contains* the
marker is ordinary text and is bounded like any other. The notice itself (wording, parsing,
the path it names) lives in :mod:`copaw_context.core.toolresults.notice`.
"""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core.toolresults._text_bytes import (
    codec_name,
    encode_measured,
    is_utf8,
    scrub_surrogates,
    utf8_cut,
    utf8_size,
)
from copaw_context.core.toolresults.notice import (
    MAX_FILE_PATH_BYTES,
    NOTICE_BUDGET_BYTES,
    TRUNCATION_NOTICE_MARKER,
    TruncationNotice,
    check_file_path,
    check_int,
    file_path_fits_notice,
    find_notice,
    format_truncation_notice,
    next_position,
    notice_path,
    parse_truncation_notice,
)

__all__ = [
    "EXACT_LINE_COUNT_CHARS",
    "MAX_FILE_PATH_BYTES",
    "NOTICE_BUDGET_BYTES",
    "TRUNCATION_NOTICE_MARKER",
    "TruncationNotice",
    "count_lines",
    "cut_prefix_to_bytes",
    "file_path_fits_notice",
    "format_truncation_notice",
    "is_shorter",
    "notice_path",
    "parse_truncation_notice",
    "scrub_surrogates",
    "truncate_parts_output",
    "truncate_text_output",
]

EXACT_LINE_COUNT_CHARS = 1 << 17
"""Texts up to this many characters get an exact line count when none is given.

Counting newlines costs about 2 ns a character (0.2 s for 100 MB), far more than the cut.
A longer text with no ``total_lines`` gets "at least N lines", N counted in its first
``EXACT_LINE_COUNT_CHARS`` characters (or the excerpt, if longer). Stage 1 always knows
the exact count: it counts while it saves the text.
"""


def count_lines(text: str) -> int:
    """Number of lines as the reference counts them: ``text.count("\\n") + 1``."""
    return text.count("\n") + 1


def cut_prefix_to_bytes(text: str, max_bytes: int, encoding: str = "utf-8") -> str:
    """Longest prefix of ``text`` whose encoding fits ``max_bytes``, never splitting a character.

    A non-empty ``text`` always keeps at least its first character. In UTF-8 only the
    first ``max_bytes + 1`` characters are looked at.
    """
    if is_utf8(encoding):
        return text[: utf8_cut(text, max_bytes)[0]]
    data = encode_measured(text, encoding)
    if len(data) <= max_bytes:
        return text
    low, high = 0, min(len(text), max(max_bytes, 0))
    while low < high:
        mid = (low + high + 1) // 2
        if len(encode_measured(text[:mid], encoding)) <= max_bytes:
            low = mid
        else:
            high = mid - 1
    return text[:low] if low else text[:1]


def _check_arguments(
    max_bytes: object, start_line: int, start_offset: int, total_lines: int, file_path: str | None
) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 4:
        raise ValueError(
            f"max_bytes must be an integer >= 4 (room for one character), got {max_bytes!r}"
        )
    check_int("start_line", start_line, 1)
    check_int("start_offset", start_offset, 0)
    check_int("total_lines", total_lines, 0)
    if file_path is not None:
        check_file_path(file_path)


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
    unknown: counted, exactly up to :data:`EXACT_LINE_COUNT_CHARS` characters, else as a
    lower bound ("at least"). Text that already ends with our notice is re-cut, keeping
    its path, line count and start; a body that fits is returned unchanged. With
    ``recut_notice=False`` such a notice is ordinary content (e.g. a relayed excerpt whose
    notice is not ours) and the text is cut like any other, naming ``file_path``. Lone
    surrogates become U+FFFD (:func:`scrub_surrogates`), so the output is always valid text.
    In UTF-8 the work is proportional to ``max_bytes``, not to the text (a notice without a
    file reports the omitted size: that one is summed over the text, in bounded memory).
    """
    _check_arguments(max_bytes, start_line, start_offset, total_lines, file_path)
    codec_name(encoding)
    if recut_notice:
        found = find_notice(text, encoding, scrub=True)
        if found is not None:
            return _retruncate(text, *found, max_bytes, encoding)
    if not is_utf8(encoding):
        scrubbed = scrub_surrogates(text)
        return _truncate_other(
            scrubbed, start_line, total_lines, max_bytes, file_path, encoding, start_offset
        )
    return _cut_parts(
        (text,), max_bytes, file_path, total_lines, start_line=start_line, start_offset=start_offset
    )


def truncate_parts_output(
    parts: Sequence[str], max_bytes: int, file_path: str | None = None, total_lines: int = 0
) -> str:
    """:func:`truncate_text_output` of ``"\\n".join(parts)`` (UTF-8, from line 1, a notice at
    the end being ordinary content), without joining them: only the excerpt is built."""
    if not parts:
        raise ValueError("parts must hold at least one text")
    _check_arguments(max_bytes, 1, 0, total_lines, file_path)
    return _cut_parts(tuple(parts), max_bytes, file_path, total_lines, start_line=1, start_offset=0)


def _joined_length(parts: Sequence[str]) -> int:
    return sum(len(part) for part in parts) + len(parts) - 1


def is_shorter(cut: str, parts: Sequence[str]) -> bool:
    """Whether ``cut`` has fewer UTF-8 bytes than ``"\\n".join(parts)`` (lone surrogates as
    3 bytes). The parts are measured only when they have fewer characters than ``cut`` has
    bytes (a character is at least one byte), so a long input costs nothing."""
    size = utf8_size(cut)
    if _joined_length(parts) > size:
        return True
    return size < sum(utf8_size(part) for part in parts) + len(parts) - 1


def _head(parts: Sequence[str], chars: int) -> str:
    """The first ``chars`` characters of ``"\\n".join(parts)``."""
    if len(parts) == 1:
        return parts[0][:chars]
    pieces: list[str] = []
    left = chars
    for index, part in enumerate(parts):
        if index and left > 0:
            pieces.append("\n")
            left -= 1
        if left <= 0:
            break
        pieces.append(part[:left])
        left -= len(pieces[-1])
    return "".join(pieces)


def _newlines(parts: Sequence[str], chars: int) -> int:
    """Newlines in the first ``chars`` characters of ``"\\n".join(parts)``."""
    count = 0
    left = chars
    for index, part in enumerate(parts):
        if index:
            if left <= 0:
                break
            count += 1
            left -= 1
        count += part.count("\n", 0, max(0, left))
        left -= len(part)
    return count


def _cut_parts(
    parts: Sequence[str],
    max_bytes: int,
    file_path: str | None,
    total_lines: int,
    *,
    start_line: int,
    start_offset: int,
) -> str:
    """The UTF-8 cut of ``"\\n".join(parts)``, looking only at what it keeps."""
    length = _joined_length(parts)
    head = _head(parts, max_bytes + 1)  # a prefix of max_bytes bytes is within these
    chars, body_bytes = utf8_cut(head, max_bytes)
    if chars == length:
        return scrub_surrogates(head)  # it all fits: unchanged
    body = scrub_surrogates(head[:chars])
    lower_bound = False
    if not total_lines:
        window = length if length <= EXACT_LINE_COUNT_CHARS else max(EXACT_LINE_COUNT_CHARS, chars)
        total_lines = start_line + _newlines(parts, window)
        lower_bound = window < length
    omitted = None
    if file_path is None:
        omitted = sum(utf8_size(part) for part in parts) + len(parts) - 1 - body_bytes
    return _with_notice(
        body, body_bytes, file_path, total_lines, start_line, start_offset, omitted, lower_bound
    )


def _with_notice(
    body: str,
    body_bytes: int,
    file_path: str | None,
    total_lines: int,
    start_line: int,
    start_offset: int,
    omitted: int | None,
    lower_bound: bool = False,
) -> str:
    next_line, next_offset = next_position(body, len(body), start_line, start_offset)
    notice = TruncationNotice(
        file_path=file_path,
        total_lines=total_lines,
        start_line=start_line,
        start_offset=start_offset,
        excerpt_bytes=body_bytes,
        next_line=next_line,
        next_offset=next_offset,
        omitted_bytes=omitted,
        total_is_lower_bound=lower_bound,
    )
    return body + "\n" + format_truncation_notice(notice)


def _truncate_other(
    text: str,
    start_line: int,
    total_lines: int,
    max_bytes: int,
    file_path: str | None,
    encoding: str,
    start_offset: int,
) -> str:
    """Encodings other than UTF-8 (never used by the pipeline): whole-text sizes."""
    size = len(encode_measured(text, encoding))
    if size <= max_bytes:
        return text
    body = cut_prefix_to_bytes(text, max_bytes, encoding)
    body_bytes = len(encode_measured(body, encoding))
    return _with_notice(
        body,
        body_bytes,
        file_path,
        total_lines or start_line - 1 + count_lines(text),
        start_line,
        start_offset,
        None if file_path is not None else size - body_bytes,
    )


def _retruncate(
    text: str, body_end: int, old: TruncationNotice, max_bytes: int, encoding: str
) -> str:
    """Re-cut a text ending with our notice: same file, line count and start."""
    if old.excerpt_bytes <= max_bytes:
        return scrub_surrogates(text)  # bounded: a body of at most max_bytes and a notice
    if is_utf8(encoding):
        chars, new_bytes = utf8_cut(text, max_bytes, body_end)
        new_body = scrub_surrogates(text[:chars])
    else:
        new_body = cut_prefix_to_bytes(scrub_surrogates(text[:body_end]), max_bytes, encoding)
        new_bytes = len(encode_measured(new_body, encoding))
    omitted = None
    if old.omitted_bytes is not None:
        omitted = old.omitted_bytes + old.excerpt_bytes - new_bytes
    return _with_notice(
        new_body,
        new_bytes,
        old.file_path,
        old.total_lines,
        old.start_line,
        old.start_offset,
        omitted,
        old.total_is_lower_bound,
    )
