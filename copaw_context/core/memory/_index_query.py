"""Querying the recall index: FTS5 ``MATCH`` for words of 3+ characters, ``LIKE`` for the rest.

Private to :mod:`copaw_context.core.memory`.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from copaw_context.core.memory._extract import hit_line, snippet
from copaw_context.core.memory._sources import Kind

__all__ = ["SearchHit", "query_hits"]

_LIKE_SPECIAL = re.compile(r"([\\%_])")
# Chunks of whole lines: a hit names the line its first word is on (an archive line is one
# message, a cleared summary is read from its entry's first line).
_LINE_KINDS = frozenset({"memory", "log", "output", "request"})


@dataclass(frozen=True)
class SearchHit:
    """One result: the file (relative to the workspace), the 1-based line where the hit's
    text starts (``read_file(file_path=path, start_line=line)`` reads on from there), what
    kind of file it is and a snippet."""

    path: str
    line: int
    kind: Kind
    snippet: str
    label: str = ""
    stamp: str = ""


def query_hits(
    conn: sqlite3.Connection, terms: list[str], limit: int, *, every: bool, fts: bool
) -> list[SearchHit]:
    """The best ``limit`` hits with all ``terms`` (``every``) or any of them."""
    long_terms = [t for t in terms if len(t) >= 3] if fts else []
    if not every and len(long_terms) < len(terms):
        long_terms = []  # FTS5 cannot OR a MATCH with other conditions: scan instead
    like_terms = [t for t in terms if t not in long_terms]
    clauses: list[str] = []
    params: list[object] = []
    if long_terms:
        quoted = ['"' + t.replace('"', '""') + '"' for t in long_terms]
        clauses.append("chunk_text MATCH ?")
        params.append((" AND " if every else " OR ").join(quoted))
    for term in like_terms:
        clauses.append(
            "(chunk_text.body LIKE ? ESCAPE '\\' OR chunk_text.label LIKE ? ESCAPE '\\')"
        )
        pattern = "%" + _LIKE_SPECIAL.sub(r"\\\1", term) + "%"
        params += [pattern, pattern]
    where = (" AND " if every else " OR ").join(clauses)
    order = "chunk_text.rank, chunks.id DESC" if long_terms else "chunks.id DESC"
    sql = (
        "SELECT chunks.path, chunks.line, chunks.kind, chunks.stamp, chunk_text.body, "
        "chunk_text.label FROM chunk_text JOIN chunks ON chunks.id = chunk_text.rowid "
        f"WHERE {where} ORDER BY {order} LIMIT ?"
    )
    rows = conn.execute(sql, (*params, limit * 4)).fetchall()
    hits: list[SearchHit] = []
    seen: set[tuple[str, int]] = set()
    for path, start, kind, stamp, body, label in rows:
        line = hit_line(int(start), body, terms) if kind in _LINE_KINDS else int(start)
        if (path, line) in seen:
            continue  # several chunks of one long message: one hit
        seen.add((path, line))
        text = snippet(body, terms)
        hits.append(SearchHit(path, int(line), kind, text, label or "", stamp or ""))
        if len(hits) == limit:
            break
    return hits
