"""Querying the recall index: literally (FTS5 trigram ``MATCH`` for words of 3+ characters,
``LIKE`` for the rest), or ranked by the words of a question (BM25 over ``chunk_words``).

Private to :mod:`copaw_context.core.memory`.
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from copaw_context.core.memory._extract import hit_line, snippet
from copaw_context.core.memory._sources import Kind
from copaw_context.core.memory._words import TOKENIZER, index_words, question_words

__all__ = ["SearchHit", "query_hits", "question_hits", "ranked_hits"]

_LIKE_SPECIAL = re.compile(r"([\\%_])")
# Chunks of whole lines: a hit names the line its first word is on (an archive line is one
# message, a cleared summary is read from its entry's first line).
_LINE_KINDS = frozenset({"memory", "log", "output", "request"})
_LITERAL_FIRST_WORDS = 3
"""A ranked query of at most this many words gets the chunks holding all of them literally,
when there are any (as the literal search): the ranking is for the others."""


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
    """The best ``limit`` hits for the words of a question (see :func:`._words.question_words`),
    leaving out ``skip``.

    Ranked in two steps, so that a word found in a third of the archive (``api``, ``worker``)
    costs no scan of a third of the archive: the chunks with the question's rarer words,
    best first by FTS5's BM25 (``_CANDIDATES`` of them), are scored again by BM25 over all of
    the question's words, counted in the chunk's own text by the words table's tokenizer.
    Identical texts (the same call made again) give one hit.
    """
    stems = _stems(conn, words)  # stem -> the question's word (MATCH stems it again)
    if not stems:
        return []
    total = max(int(conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0), 1)
    cap = max(_RARE_DOCS, int(total * _RARE_SHARE))
    found = {stem: _documents(conn, word, cap, total) for stem, word in stems.items()}
    present = sorted((s for s in stems if found[s]), key=lambda s: found[s])
    if not present:
        return []
    rare = [s for s in present if found[s] <= cap]
    match = " OR ".join(_quoted(stems[s]) for s in (rare or present[:2]))
    ids = [
        row[0]
        for row in conn.execute(
            "SELECT rowid FROM chunk_words WHERE chunk_words MATCH ? ORDER BY rank LIMIT ?",
            (match, _CANDIDATES + 4 * (limit + len(skip))),
        )
    ]
    if not ids:
        return []
    rows = conn.execute(
        f"SELECT chunks.id, {_COLUMNS} FROM chunks JOIN chunk_text ON chunk_text.rowid = "
        f"chunks.id WHERE chunks.id IN ({','.join('?' * len(ids))})",
        ids,
    ).fetchall()
    by_id = {row[0]: row[1:] for row in rows}
    candidates = [by_id[i] for i in ids if i in by_id]
    weights = {s: math.log(1 + (total - found[s] + 0.5) / (found[s] + 0.5)) for s in present}
    scored = _rescore(conn, candidates, weights)
    return _hits(scored, words, limit, skip)


_RARE_SHARE = 0.05
_RARE_DOCS = 1000
_CANDIDATES = 60
_K1, _B = 1.2, 0.75
_TOKEN = re.compile(r"\w+")


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _documents(conn: sqlite3.Connection, word: str, cap: int, total: int) -> float:
    """How many chunks hold ``word``: counted up to ``cap``; above, estimated from where the
    ``cap``-th one is (chunk ids grow with time), so a common word costs no full scan."""
    count, last = conn.execute(
        "SELECT count(*), max(rowid) FROM (SELECT rowid FROM chunk_words WHERE chunk_words "
        "MATCH ? LIMIT ?)",
        (_quoted(word), cap + 1),
    ).fetchone()
    counted = float(count)
    if counted <= cap:
        return counted
    return max(counted, min(float(total), counted * total / max(int(last), 1)))


def _stems(conn: sqlite3.Connection, words: list[str]) -> dict[str, str]:
    """The words as the words table's tokenizer indexes them (stemmed), distinct, in order,
    each with the first word it came from (given to ``MATCH``, which stems it: a stem given
    to it would be stemmed again, ``clickhous`` to ``clickhou``)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.question USING fts5(w, tokenize='{TOKENIZER}')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.question_vocab "
        "USING fts5vocab(temp, question, instance)"
    )
    conn.execute("DELETE FROM temp.question")
    conn.executemany(
        "INSERT INTO temp.question (rowid, w) VALUES (?, ?)", list(enumerate(words, start=1))
    )
    stems: dict[str, str] = {}
    query = "SELECT doc, term FROM temp.question_vocab ORDER BY doc, offset"
    for doc, term in conn.execute(query):
        stems.setdefault(term, words[int(doc) - 1])
    return stems


def _rescore(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], weights: dict[str, float]
) -> list[tuple[Any, ...]]:
    """``rows`` best first by BM25 over the stems in ``weights`` (their IDF), counted in each
    row's words by the words table's own tokenizer (a scratch table); ties keep the order."""
    texts = [index_words(row[5]) for row in rows]
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.found USING fts5(w, tokenize='{TOKENIZER}')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.found_vocab USING fts5vocab(temp, found, instance)"
    )
    conn.execute("DELETE FROM temp.found")
    conn.executemany("INSERT INTO temp.found (rowid, w) VALUES (?, ?)", list(enumerate(texts)))
    marks = ",".join("?" * len(weights))
    tallies: dict[int, dict[str, int]] = {}
    for doc, term, count in conn.execute(
        f"SELECT doc, term, count(*) FROM temp.found_vocab WHERE term IN ({marks}) "
        "GROUP BY doc, term",
        list(weights),
    ):
        tallies.setdefault(doc, {})[term] = count
    lengths = [len(_TOKEN.findall(text)) for text in texts]
    average = max(sum(lengths) / len(lengths), 1.0) if lengths else 1.0
    counted: list[tuple[float, int]] = []
    for order, length in enumerate(lengths):
        norm = _K1 * (1 - _B + _B * length / average)
        tally = tallies.get(order, {})
        score = sum(weights[s] * n * (_K1 + 1) / (n + norm) for s, n in tally.items())
        counted.append((-score, order))
    counted.sort()
    return [rows[order] for _, order in counted]


def _hits(
    rows: list[tuple[Any, ...]],
    terms: list[str],
    limit: int,
    skip: set[tuple[str, int]] | None = None,
) -> list[SearchHit]:
    hits: list[SearchHit] = []
    seen: set[tuple[str, int]] = set(skip or ())
    texts: set[str] = set()
    for path, start, kind, stamp, session, body, label in rows:
        line = hit_line(int(start), body, terms) if kind in _LINE_KINDS else int(start)
        if (path, line) in seen or (skip is not None and body in texts):
            continue  # several chunks of one long message, or (ranked) the same text again
        seen.add((path, line))
        texts.add(body)
        text = snippet(body, terms)
        hits.append(SearchHit(path, int(line), kind, text, label or "", stamp or "", session or ""))
        if len(hits) == limit:
            break
    return hits


def question_hits(
    conn: sqlite3.Connection, query: str, terms: list[str], limit: int
) -> list[SearchHit]:
    """``memory_search``'s ranked search (FTS5): a few words literally if they can be, else
    ranked by the question's words, else chunks with any of the terms."""
    if len(terms) <= _LITERAL_FIRST_WORDS:
        hits = query_hits(conn, terms, limit, every=True, fts=True)
        if hits:
            return hits
    hits = ranked_hits(conn, question_words(query), limit, set())
    if not hits and len(terms) > 1:
        hits = query_hits(conn, terms, limit, every=False, fts=True)
    return hits
