"""The ranked recall search behind ``memory_search``: a question in other words than the
archived message still finds it (stems, Chinese in two-character pieces, joined names as one
word, function words left out), identical texts are one hit, every hit names its session and
the read_file call of its line, and the index forgets what a rewritten file no longer holds."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.memory import MemoryFiles, MemoryIndex, MemoryTools
from copaw_context.core.memory._index_db import INDEX_FILE
from copaw_context.core.memory._words import index_words, question_words

NOISE = [
    "Can you look at billing-api again? The dashboard is slow.",
    "billing 又出问题了，先检查一下配置。",
    "The api worker keeps restarting after a deploy, I checked the logs.",
    "Let me check the limit on the cart service.",
    "billing-api 又出问题了，我看了一下日志。",
]


def record(text: str, session: str = "s1", n: int = 0, role: str = "assistant") -> dict[str, Any]:
    return {
        "session_id": session,
        "archive_id": f"{session}:{n}",
        "form": "agentscope2.Msg",
        "agent_name": "friday",
        "archived_at": "2024-05-01T10:00:00+08:00",
        "timestamp": "2024-05-01T09:00:00+08:00",
        "message": {"id": f"m{n}", "name": role, "role": role, "content": text_blocks(text)},
    }


def text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def archive(workspace: Path, answer: str, *, before: int = 3, after: int = 40) -> int:
    """``answer`` among noise (more of it after, so newest-first order would bury it);
    returns the answer's line."""
    lines = [record(NOISE[n % len(NOISE)], "s0", n) for n in range(before)]
    lines.append(record(answer, "s9", 999))
    lines += [record(NOISE[n % len(NOISE)], "s2", n) for n in range(after)]
    path = workspace / "dialog" / "2024-05-01.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return before + 1


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        (
            "Done: retry_limit for billing-api is now 7 (config/billing-api.yaml).",
            "How many retries did we configure on billing-api?",
        ),
        (
            "好的，已经把 billing-api 的连接池大小调到 48 了。",
            "billing-api 的连接池容量后来定成多少？",
        ),
        ("记住：周五下午不要对数据库做迁移，DBA 会锁表。", "什么时候不能跑数据库迁移？"),
    ],
)
async def test_a_question_in_other_words_finds_the_message_first(
    tmp_path: Path, answer: str, question: str
) -> None:
    line = archive(tmp_path, answer)
    hits = await MemoryIndex(tmp_path).search(question, 5, ranked=True)
    assert (hits[0].path, hits[0].line) == ("dialog/2024-05-01.jsonl", line)
    assert hits[0].session == "s9"


async def test_a_joined_name_ranks_the_message_that_names_it(tmp_path: Path) -> None:
    answer = "The pool_size of media-proxy is 30."
    noise = "media api proxy pool size"  # every word of the name, never joined
    path = tmp_path / "dialog" / "2024-05-01.jsonl"
    path.parent.mkdir(parents=True)
    lines = [record(answer, "s9", 0)] + [record(noise, "s1", n) for n in range(1, 30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    (hit, *_) = await MemoryIndex(tmp_path).search("media-proxy pool_size value", 5, ranked=True)
    assert hit.line == 1


async def test_identical_texts_are_one_hit(tmp_path: Path) -> None:
    call = "[read] src/billing_api/schema_migrate.py"
    path = tmp_path / "dialog" / "2024-05-01.jsonl"
    path.parent.mkdir(parents=True)
    lines = [record(call, "s1", n) for n in range(6)]
    lines.append(record("Never run migrations on billing-api on Fridays.", "s9", 7))
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    hits = await MemoryIndex(tmp_path).search("when to migrate billing-api", 5, ranked=True)
    assert sorted(h.line for h in hits) == [1, 7]


async def test_the_tool_names_session_file_line_and_the_read_call(tmp_path: Path) -> None:
    line = archive(
        tmp_path, "Let's go with kafka instead of nats for ledger-worker, because of ordering."
    )
    tools = MemoryTools(MemoryFiles(tmp_path), MemoryIndex(tmp_path))
    text = await tools.memory_search("Why did we prefer kafka to nats on ledger-worker?")
    first = text.splitlines()[1:3]
    assert first[0].startswith(f"1. dialog/2024-05-01.jsonl line {line} (assistant, 2024-05-01")
    assert first[1] == (
        '   from an archived message (its JSON line); read_file(file_path="dialog/2024-05-01.jsonl"'
        f", start_line={line}); session s9"
    )
    archived = (tmp_path / "dialog" / "2024-05-01.jsonl").read_text(encoding="utf-8")
    assert json.loads(archived.split("\n")[line - 1])["session_id"] == "s9"


async def test_a_query_of_few_words_keeps_literal_hits_first(tmp_path: Path) -> None:
    # "retry_back" is no word of the text: only the literal search finds it, first.
    archive(tmp_path, "The retry_backoff of ledger-api doubles each time.")
    index = MemoryIndex(tmp_path)
    (hit, *_) = await index.search("retry_back", 5, ranked=True)
    assert "retry_backoff" in hit.snippet
    assert await index.search("zzzqqq", 5, ranked=True) == []


async def test_a_rewritten_archive_leaves_the_ranked_index(tmp_path: Path) -> None:
    archive(tmp_path, "The flamingo quota of search-db is 12.")
    index = MemoryIndex(tmp_path)
    assert [h.session for h in await index.search("flamingo quota?", 5, ranked=True)] == ["s9"]
    path = tmp_path / "dialog" / "2024-05-01.jsonl"
    path.write_text(json.dumps(record("nothing left here")) + "\n", encoding="utf-8")
    assert await index.search("what flamingo quota", 5, ranked=True) == []
    with sqlite3.connect(index.path) as conn:  # the words of the dropped lines are gone too
        rows = conn.execute(
            "SELECT count(*) FROM chunk_words WHERE chunk_words MATCH 'flamingo'"
        ).fetchone()
    assert rows == (0,)


async def test_an_archive_linked_from_outside_is_not_searched(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    archive(outside, "The pelican secret of vault-api is 42.")
    (workspace / "dialog").mkdir(parents=True)
    (workspace / "dialog" / "2024-05-02.jsonl").symlink_to(outside / "dialog" / "2024-05-01.jsonl")
    assert await MemoryIndex(workspace).search("pelican secret", 5, ranked=True) == []
    linked = tmp_path / "ws2"
    linked.mkdir()
    (linked / "dialog").symlink_to(outside / "dialog", target_is_directory=True)
    assert await MemoryIndex(linked).search("pelican secret", 5, ranked=True) == []


def test_words_of_text_and_question() -> None:
    assert index_words("pool_size of media-proxy").split() == [
        "pool_size",
        "pool",
        "size",
        "of",
        "media_proxy",
        "media",
        "proxy",
    ]
    assert index_words("数据库的迁移").split() == ["数据", "据库", "迁移"]
    assert index_words("__init__ x_").split() == ["init", "x"]
    assert question_words("What did we set as the pool_size?") == [
        "set",
        "pool_size",
        "pool",
        "size",
    ]
    assert question_words("什么时候跑迁移？") == ["跑迁", "迁移"]
    assert question_words("what is it") == ["what", "is", "it"]  # nothing else left: kept


async def test_an_index_of_the_previous_schema_is_rebuilt_with_the_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    line = archive(tmp_path, "Done: retry_limit for billing-api is now 7.")
    index = MemoryIndex(tmp_path)
    await index.refresh()
    with sqlite3.connect(index.path) as conn:  # what schema 1 had: no words table
        conn.execute("DROP TABLE chunk_words")
        conn.execute("PRAGMA user_version = 1")
    with caplog.at_level(logging.INFO, logger="copaw_context"):
        hits = await MemoryIndex(tmp_path).search(
            "How many retries on billing-api?", 5, ranked=True
        )
    assert (hits[0].line, hits[0].session) == (line, "s9")
    # an index of an earlier release is no broken one: said so, and not kept as .corrupt
    assert "an earlier release built it (schema 1; this release uses 2)" in caplog.text
    assert "broken" not in caplog.text
    assert not any(r.levelno >= logging.WARNING for r in caplog.records)
    assert not (index.path.parent / f"{INDEX_FILE}.corrupt").exists()


@pytest.fixture(scope="module")
def ranked_index(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    workspace = tmp_path_factory.mktemp("ranked")
    archive(workspace, 'The 数据 of "quoted" a_b-c (x) 100%_x NEAR OR ab', before=1, after=2)
    index = MemoryIndex(workspace)
    index.refresh_sync()
    return index


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet='ab_-"*^()+:{}[]%\\\x00 数据的\n\tNEAROR', max_size=16))
def test_any_question_text_is_searched_without_error(ranked_index: MemoryIndex, query: str) -> None:
    words = query.replace('"', " ").replace("\x00", " ").split()
    if not words:
        with pytest.raises(ValueError, match="empty"):
            ranked_index.search_sync(query, 5, refresh=False, ranked=True)
        return
    for hit in ranked_index.search_sync(query, 5, refresh=False, ranked=True):
        assert hit.path == "dialog/2024-05-01.jsonl"
