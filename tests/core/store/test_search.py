"""The store's search hook, on both stores alike: every token of the query, Chinese by
character bigrams, in stream then append order."""

from __future__ import annotations

import json
import time
from pathlib import Path

from copaw_context.core.store.lines import search_tokens
from copaw_context.core.store.protocol import StreamRecord, WorkspaceStore
from copaw_context.testing import ManualClock
from tests.core.store.kit import KINDS, make_store, opened

LINES = [
    ("dialog/2026-05-01.jsonl", "the disk is full on /var"),
    ("dialog/2026-05-01.jsonl", "数据库连接失败，请检查配置"),
    ("dialog/2026-05-02.jsonl", "Disk quota exceeded; error 122"),
    ("dialog/2026-05-02.jsonl", "我们使用数据库迁移脚本"),
    ("memory/2026-05-02.jsonl", "disk notes outside the prefix"),
]


async def fill(store: WorkspaceStore) -> None:
    await store.append(
        [
            StreamRecord(stream, None, json.dumps({"text": text}, ensure_ascii=False).encode())
            for stream, text in LINES
        ]
    )


def texts(hits: list) -> list[str]:
    return [json.loads(hit.data)["text"] for hit in hits]


async def test_words_and_chinese_bigrams_match(store: WorkspaceStore) -> None:
    await fill(store)
    assert texts(await store.search("DISK", "dialog/")) == [LINES[0][1], LINES[2][1]]
    assert texts(await store.search("disk error", "dialog/")) == [LINES[2][1]]
    assert texts(await store.search("数据库", "dialog/")) == [LINES[1][1], LINES[3][1]]
    assert texts(await store.search("连接失败", "dialog/")) == [LINES[1][1]]
    assert texts(await store.search("disk", "dialog/", limit=1)) == [LINES[0][1]]
    assert await store.search("nothing-like-this", "dialog/") == []
    assert await store.search("   ", "dialog/") == []
    hits = await store.search("disk", "dialog/2026-05-02")
    assert [(h.stream, h.seq) for h in hits] == [("dialog/2026-05-02.jsonl", 0)]


def test_tokens_are_ascii_words_and_bigrams() -> None:
    assert search_tokens("Disk 中文字") == {
        "w:disk",
        "h:" + "中文".encode().hex(),
        "h:" + "文字".encode().hex(),
    }
    assert all(token.isascii() for token in search_tokens("数据库 😀 é"))


async def test_both_stores_answer_alike_on_the_same_data(pg_dsn: str, tmp_path: Path) -> None:
    stores = [
        await opened(make_store(k, pg_dsn, tmp_path / k, ManualClock(time.time()))) for k in KINDS
    ]
    try:
        for store in stores:
            await fill(store)
        for query in ("disk", "数据库", "失败 配置", "full var", "122", "库迁"):
            files, postgres = [await s.search(query, "dialog/") for s in stores]
            assert [(h.stream, h.seq, h.data) for h in files] == [
                (h.stream, h.seq, h.data) for h in postgres
            ]
    finally:
        for store in stores:
            await store.close()


async def test_empty_long_and_special_queries_as_langgraphs_store_tests_ask(
    store: WorkspaceStore,
) -> None:
    # Ported from LangGraph's Postgres store tests (test_vector_search_edge_cases): an empty
    # query, a very long one and one full of punctuation neither fail nor match wrongly.
    await fill(store)
    assert await store.search("", "dialog/") == []
    assert await store.search("!@#$%^&*()", "dialog/") == []
    assert await store.search("foo " * 100, "dialog/") == []
    assert texts(await store.search("disk!@#$%^&*()", "dialog/")) == [LINES[0][1], LINES[2][1]]
    assert texts(await store.search("数据库" + "?" * 50, "dialog/")) == [LINES[1][1], LINES[3][1]]
    assert await store.search("disk", "dialog/", limit=0) == []
