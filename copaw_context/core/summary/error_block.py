"""The error block of one output: its error lines worth carrying (issue 21 item 2).

Once an output shows a line that is an error, what only surrounds it goes: wrappers
(``npm ERR! in workspace``), test tallies (``1 failed, 22 passed``), progress output,
traceback headers; a Python exception line gets its last frame's location line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from copaw_context.core.summary.errors import EXIT_CODE_RE, OTHER, WRAPPER, ErrorLine, rank_line

__all__ = ["error_block", "is_error_noise", "is_noise"]


# Progress output: dots, bars and percentages ("..F.. [ 40%]", "[=====>   ] 45%", "45%|███").
_PROGRESS_RE = re.compile(
    r"^(?:\S+\s+)?[.FEsxX]{3,}\s*(?:\[\s*\d+%\])?$|\[[=#>\-. ]{4,}\]|\d+%\s*\|[█▉▊▋▌▍▎▏ #=>-]+\|"
    r"|^[.·•]{3,}$"
)
_NPM_CODE_RE = re.compile(r"npm (?:ERR!|error) (?:code|errno) ")
_FRAME_LINE_RE = re.compile(r'^\s*File "[^"\n]+", line \d+')
_TRACEBACK_HEAD = "Traceback (most recent call last)"


def is_error_noise(line: str) -> bool:
    """Whether an error line is only what surrounds an error: a wrapper or test tally
    (``npm ERR! code 2``, ``1 failed, 22 passed``), progress output, a traceback header."""
    text = line.strip()
    if text.startswith(_TRACEBACK_HEAD) or _PROGRESS_RE.search(text):
        return True
    if EXIT_CODE_RE.search(text) or _NPM_CODE_RE.match(text):
        return False  # the status a command ended with: short, and what it says is its own
    return rank_line(text) == WRAPPER


def is_noise(item: ErrorLine) -> bool:
    """:func:`is_error_noise` of an :class:`ErrorLine`."""
    return is_error_noise(item.text)


def error_block(found: Sequence[ErrorLine], text: str) -> list[ErrorLine]:
    """The error lines of one output worth carrying: once it has a line that is an error
    (not a wrapper), its wrappers, test tallies, progress output and traceback headers go;
    a Python exception line gets the one location line it needs (its last ``File ...``
    frame) in front of it."""
    lines = [item for item in found if not _PROGRESS_RE.search(item.text)]
    if all(is_noise(item) for item in lines):
        return lines or list(found[:1])
    frames = _frames_before(text)
    out: list[ErrorLine] = []
    for item in lines:
        if is_noise(item):
            continue
        frame = frames.get(item.text)
        if frame and (not out or out[-1].text != frame):
            out.append(ErrorLine(frame, OTHER))
        out.append(item)
    return out


def _frames_before(text: str) -> dict[str, str]:
    """Each exception line of a Python traceback in ``text`` -> its last frame's line."""
    if _TRACEBACK_HEAD not in text:
        return {}
    frames: dict[str, str] = {}
    last: str | None = None
    inside = False
    for line in text.split("\n"):
        if line.startswith(_TRACEBACK_HEAD):
            inside, last = True, None
        elif inside and _FRAME_LINE_RE.match(line):
            last = line.strip()
        elif inside and line.strip() and not line[:1].isspace():
            if last is not None:
                frames.setdefault(line.strip(), last)
            inside = False
    return frames
