"""Querying the recall index: literally (FTS5 trigram ``MATCH`` for words of 3+ characters,
``LIKE`` for the rest), or ranked by the words of a question (BM25 over ``chunk_words``).

Private to :mod:`copaw_context.core.memory`.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from copaw_context.core.memory._extract import hit_line, snippet
from copaw_context.core.memory._sources import Kind

__all__ = ["SearchHit", "query_hits", "ranked_hits"]

_LIKE_SPECIAL = re.compile(r"([\\%_])")
# Chunks of whole lines: a hit names the line its first word is on (an archive line is one
# message, a cleared summary is read from its entry's first line).
_LINE_KINDS = frozenset({"memory", "log", "output", "request"})


@dataclass(frozen=True)
class SearchHit:
    """One result: the file (relative to the workspace), the 1-based line where the hit's
    text starts (``read_file(file_path=path, start_line=line)`` reads on from there), what
    kind of file it is, a snippet, and for an archived message its session."""

    path: str
    line: int
    kind: Kind
    snippet: str
    label: str = ""
    stamp: str = ""
    session: str = ""


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
        f"SELECT {_COLUMNS} FROM chunk_text JOIN chunks ON chunks.id = chunk_text.rowid "
        f"WHERE {where} ORDER BY {order} LIMIT ?"
    )
    rows = conn.execute(sql, (*params, limit * 4)).fetchall()
    return _hits(rows, terms, limit)


_COLUMNS = (
    "chunks.path, chunks.line, chunks.kind, chunks.stamp, chunks.session, chunk_text.body, "
    "chunk_text.label"
)


def ranked_hits(
    conn: sqlite3.Connection, words: list[str], limit: int, skip: set[tuple[str, int]]
) -> list[SearchHit]:
    """The best ``limit`` hits with any of ``words`` (see :func:`._words.question_words`),
    ranked by BM25 (rare words and chunks with more of them first), leaving out ``skip``."""
    if not words:
        return []
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    ranked = conn.execute(
        "SELECT rowid FROM chunk_words WHERE chunk_words MATCH ? ORDER BY rank LIMIT ?",
        (match, (limit + len(skip)) * 4),
    ).fetchall()
    ids = [row[0] for row in ranked]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT chunks.id, {_COLUMNS} FROM chunks JOIN chunk_text ON chunk_text.rowid = "
        f"chunks.id WHERE chunks.id IN ({marks})",
        ids,
    ).fetchall()
    by_id = {row[0]: row[1:] for row in rows}
    return _hits([by_id[i] for i in ids if i in by_id], words, limit, skip)


def _hits(
    rows: list[tuple[Any, ...]],
    terms: list[str],
    limit: int,
    skip: set[tuple[str, int]] | None = None,
) -> list[SearchHit]:
    hits: list[SearchHit] = []
    seen: set[tuple[str, int]] = set(skip or ())
    for path, start, kind, stamp, session, body, label in rows:
        line = hit_line(int(start), body, terms) if kind in _LINE_KINDS else int(start)
        if (path, line) in seen:
            continue  # several chunks of one long message: one hit
        seen.add((path, line))
        text = snippet(body, terms)
        hits.append(
            SearchHit(path, int(line), kind, text, label or "", stamp or "", session or "")
        )
        if len(hits) == limit:
            break
    return hits
