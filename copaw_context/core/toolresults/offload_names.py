"""What names an offload file: the store's own file names (``<32 lowercase hex>.txt``), and
the names and paths a context references (by notice or as a bare path), which a cleanup
keeps (:meth:`.offload.OffloadStore.cleanup`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

__all__ = ["OWN_FILE", "referenced_offload_names", "referenced_offload_paths"]

OWN_FILE = re.compile(r"[0-9a-f]{32}\.txt")
"""The name of a file the offload store writes (matched whole)."""
# No boundaries on purpose: a name glued to other text still counts (keeping too much is safe).
_OWN_NAME_ANYWHERE = re.compile(r"[0-9a-f]{32}\.txt")
_NOTICE_PATH = re.compile(r'file_path=("(?:[^"\\]|\\.)*")')


def referenced_offload_paths(texts: Iterable[str]) -> set[str]:
    """Return every ``file_path="..."`` named by a truncation notice in ``texts``.

    The quoted value is JSON text, so escapes (``\\"``, ``\\\\``, ``\\u4e2d``) are decoded.
    Values that are not valid JSON strings are ignored.
    """
    found: set[str] = set()
    for text in texts:
        for match in _NOTICE_PATH.finditer(text):
            try:
                value = json.loads(match.group(1))
            except ValueError:
                continue
            if isinstance(value, str) and value:
                found.add(value)
    return found


def referenced_offload_names(texts: Iterable[str]) -> set[str]:
    """Return every offload file name (``<32 lowercase hex>.txt``) appearing in ``texts``.

    Matches anywhere: in notices, in bare paths such as ``- File: /ws/tool_result/<name>``
    written by summaries, inside JSON or Windows paths. Pass the result to
    :meth:`.offload.OffloadStore.cleanup`.
    """
    found: set[str] = set()
    for text in texts:
        found.update(_OWN_NAME_ANYWHERE.findall(text))
    return found
