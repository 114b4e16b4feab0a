"""Tests for copaw_context.core.tokens: offline vocabularies, auto choice, calibration."""

from __future__ import annotations

import gzip
import logging
import math
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from copaw_context.core.errors import ConfigError
from copaw_context.core.tokens import (
    TOKEN_COUNTER_CHOICES,
    EstimateTokenCounter,
    QwenTokenCounter,
    TiktokenCounter,
    TokenCounter,
    UsageCalibration,
    make_token_counter,
    make_token_counter_async,
    resolve_counter_name,
)
from copaw_context.core.tokens import counters as tokens

CACHE_KEYS = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}
SAMPLES = [
    "",
    "hello world",
    "当上下文窗口快满时，智能体会总结较早的消息。",
    "def f(x):\n    return {'a': [1, 2, 3]}\n",
    "emoji 🎉🧠 and e\u0301 decomposed",
    "<|endoftext|><|im_start|>user\nhi<|im_end|>",
    "   \n\n   \t\t  ",
    "lone surrogate \ud800 here",
]
any_text = st.text(st.characters(exclude_categories=()), max_size=300)


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", autouse=True)
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Block every download for the whole module and use a private tiktoken cache."""
    attempts: list[str] = []
    real_read_file = tiktoken.load.read_file

    def guarded_read_file(blobpath: str) -> bytes:
        if "://" in blobpath:
            attempts.append(blobpath)
            raise OSError(f"network disabled in tests: {blobpath}")
        return real_read_file(blobpath)

    def refuse_connect(self: socket.socket, *args: Any) -> None:
        attempts.append(repr(args))
        raise OSError("network disabled in tests")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiktoken.load, "read_file", guarded_read_file)
        patch.setattr(socket.socket, "connect", refuse_connect)
        patch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken-cache")))
        yield attempts
    assert attempts == [], f"tests tried to reach the network: {attempts}"


@pytest.fixture(scope="module")
def qwen() -> QwenTokenCounter:
    return QwenTokenCounter()


@pytest.fixture(scope="module")
def cl100k() -> TiktokenCounter:
    return TiktokenCounter("cl100k_base")


@pytest.fixture(scope="module")
def o200k() -> TiktokenCounter:
    return TiktokenCounter("o200k_base")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget every loaded encoding (ours and tiktoken's registry) for one test."""
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_warned", set())
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})


def real_counters(
    qwen: QwenTokenCounter, cl100k: TiktokenCounter, o200k: TiktokenCounter
) -> list[TokenCounter]:
    return [qwen, cl100k, o200k, EstimateTokenCounter(), EstimateTokenCounter(2.5)]


# ---------------------------------------------------------------- reference ids


def test_reference_ids(qwen: QwenTokenCounter, cl100k: TiktokenCounter, o200k: TiktokenCounter):
    assert qwen.encode("hello world") == [14990, 1879]
    assert qwen.encode("Hello, world!") == [9707, 11, 1879, 0]
    assert cl100k.encode("hello world") == [15339, 1917]
    assert cl100k.encode("Hello, world!") == [9906, 11, 1917, 0]
    assert o200k.encode("hello world") == [24912, 2375]
    assert o200k.encode("Hello, world!") == [13225, 11, 2375, 0]
    assert (qwen.name, cl100k.name, o200k.name) == ("qwen", "cl100k_base", "o200k_base")


def test_reference_sentence_counts(
    qwen: QwenTokenCounter, cl100k: TiktokenCounter, o200k: TiktokenCounter
):
    english = (
        "The agent summarises older messages when the context window is almost full, "
        "keeping the most recent turns verbatim."
    )
    chinese = "当上下文窗口快满时，智能体会总结较早的消息，并原样保留最近的几轮对话。"
    assert [c.count(english) for c in (qwen, cl100k, o200k)] == [22, 22, 22]
    assert [c.count(chinese) for c in (qwen, cl100k, o200k)] == [24, 42, 28]


@pytest.mark.parametrize("text", SAMPLES)
def test_count_matches_encode_and_never_raises(
    text: str, qwen: QwenTokenCounter, cl100k: TiktokenCounter, o200k: TiktokenCounter
):
    for counter in (qwen, cl100k, o200k):
        assert counter.count(text) == len(counter.encode(text))
    assert all(c.count(text) == 0 for c in real_counters(qwen, cl100k, o200k) if not text)


def test_special_token_text_is_ordinary(
    qwen: QwenTokenCounter, cl100k: TiktokenCounter, o200k: TiktokenCounter
):
    assert 151643 not in qwen.encode("<|endoftext|>")
    assert 100257 not in cl100k.encode("<|endoftext|>")
    assert 199999 not in o200k.encode("<|endoftext|>")
    assert all(c.count("<|im_start|>") > 1 for c in (qwen, cl100k, o200k))


def test_qwen_normalises_to_nfc(qwen: QwenTokenCounter):
    assert qwen.encode("cafe\u0301") == qwen.encode("café")


def test_counters_satisfy_protocol(
    qwen: QwenTokenCounter, cl100k: TiktokenCounter, o200k: TiktokenCounter
):
    assert all(isinstance(c, TokenCounter) for c in real_counters(qwen, cl100k, o200k))


# ---------------------------------------------------------------- estimate


@pytest.mark.parametrize(
    ("divisor", "text", "expected"),
    [
        (4, "", 0),
        (4, "abcd", 1),
        (4, "abcde", 2),
        (4, "中", 1),  # 3 bytes
        (4, "中文", 2),  # 6 bytes
        (4, "中文字", 3),  # 9 bytes
        (3, "中文字", 3),
        (2, "中", 2),
        (5, "a" * 11, 3),
        (2.5, "abcde", 2),
        (4, "\ud800", 1),  # a lone surrogate counts its 3 bytes
    ],
)
def test_estimate_arithmetic(divisor: float, text: str, expected: int):
    assert EstimateTokenCounter(divisor).count(text) == expected


def test_estimate_name():
    assert EstimateTokenCounter().name == "estimate/4"
    assert EstimateTokenCounter(3.5).name == "estimate/3.5"


@pytest.mark.parametrize("divisor", [1.99, 5.01, 0, -4, math.nan, math.inf, True, "4", None])
def test_estimate_rejects_bad_divisor(divisor: Any):
    with pytest.raises(ConfigError, match="estimate_divisor.*from 2 to 5"):
        EstimateTokenCounter(divisor)


@settings(max_examples=200)
@given(any_text, any_text, st.sampled_from([2, 2.5, 3, 4, 5]))
def test_estimate_is_subadditive(a: str, b: str, divisor: float):
    counter = EstimateTokenCounter(divisor)
    assert counter.count(a + b) <= counter.count(a) + counter.count(b) + 1
    assert counter.count(a + b) >= max(counter.count(a), counter.count(b))


# ---------------------------------------------------------------- never raises


@settings(max_examples=150, deadline=None)
@given(any_text)
def test_count_never_raises_for_any_text(text: str):
    # Module-scoped fixtures cannot be used with @given, but the encodings are cached.
    for counter in (
        QwenTokenCounter(),
        TiktokenCounter("cl100k_base"),
        TiktokenCounter("o200k_base"),
    ):
        assert counter.count(text) >= 0
        assert (counter.count(text) == 0) == (text == "")
    assert EstimateTokenCounter().count(text) >= 0


def test_huge_whitespace_run_does_not_panic(qwen: QwenTokenCounter, o200k: TiktokenCounter):
    # One encode_ordinary call on this raises pyo3's PanicException (a BaseException).
    for counter in (qwen, o200k):
        assert abs(counter.count(" " * 1_000_000) - 7813) <= 20  # ~128 spaces per token
        assert 0 < counter.count(" \t" * 500_000 + "x") <= 1_000_001


def test_chunked_count_is_exact_at_line_breaks(
    monkeypatch: pytest.MonkeyPatch, qwen: QwenTokenCounter, o200k: TiktokenCounter
):
    text = "".join(f"line {i}: 中文 and code(x={i})  \n" for i in range(400))
    exact = {c.name: c.count(text) for c in (qwen, o200k)}
    monkeypatch.setattr(tokens, "_CHUNK_CHARS", 97)
    assert len(list(tokens._chunks(text))) > 100
    assert {c.name: c.count(text) for c in (qwen, o200k)} == exact


@settings(max_examples=200)
@given(st.text(st.sampled_from("ab \n\t中"), max_size=400), st.integers(2, 40))
def test_chunks_cover_the_text(text: str, size: int):
    original = tokens._CHUNK_CHARS
    tokens._CHUNK_CHARS = size
    try:
        chunks = list(tokens._chunks(text))
    finally:
        tokens._CHUNK_CHARS = original
    assert "".join(chunks) == text
    assert all(len(chunk) <= size for chunk in chunks)
    assert all(len(chunk) >= size // 2 for chunk in chunks[:-1])


class PanicException(BaseException):
    """Same name as pyo3's panic type, which does not derive from Exception."""


class ExplodingEncoding:
    name = "exploding"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def encode_ordinary(self, text: str) -> list[int]:
        raise self.error


def test_encoder_panic_falls_back_to_bytes_estimate(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, cl100k: TiktokenCounter
):
    monkeypatch.setattr(tokens, "_warned", set())
    monkeypatch.setattr(cl100k, "_encoding", ExplodingEncoding(PanicException("StackOverflow")))
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        assert cl100k.count("中文 text") == 3  # 11 bytes / 4
        assert cl100k.count("abcdefgh") == 2
    assert len([r for r in caplog.records if "exploding failed" in r.message]) == 1


def test_keyboard_interrupt_is_not_swallowed(
    monkeypatch: pytest.MonkeyPatch, cl100k: TiktokenCounter
):
    monkeypatch.setattr(cl100k, "_encoding", ExplodingEncoding(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        cl100k.count("hello")


# ---------------------------------------------------------------- auto choice


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("qwen-max", "qwen"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("dashscope/qwen3-235b-a22b", "qwen"),
        ("QwQ-32B", "qwen"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("openai/gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("openai/o4-mini", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("ft:gpt-4o:org:custom:id", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("GPT-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo-0125", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("claude-sonnet-4-5", "o200k_base"),
        ("deepseek-chat", "o200k_base"),
        ("glm-4.5", "o200k_base"),
        ("", "o200k_base"),
        (None, "o200k_base"),
    ],
)
def test_auto_choice_by_model_name(model: str | None, expected: str):
    assert resolve_counter_name("auto", model) == expected


def test_explicit_spec_ignores_model_and_is_case_insensitive():
    assert resolve_counter_name("cl100k_base", "qwen-max") == "cl100k_base"
    assert resolve_counter_name(" Qwen ", "gpt-4o") == "qwen"
    assert resolve_counter_name("ESTIMATE") == "estimate"


@pytest.mark.parametrize("spec", ["tiktoken", "gpt-4o", "", 4])
def test_unknown_spec_lists_choices(spec: Any):
    with pytest.raises(ValueError) as caught:
        resolve_counter_name(spec)
    assert isinstance(caught.value, ConfigError)
    assert all(choice in str(caught.value) for choice in TOKEN_COUNTER_CHOICES)


def test_make_token_counter_kinds(qwen: QwenTokenCounter, o200k: TiktokenCounter):
    assert isinstance(make_token_counter("auto", model_name="qwen-plus"), QwenTokenCounter)
    assert make_token_counter().name == "o200k_base"
    assert make_token_counter("cl100k_base").name == "cl100k_base"
    estimate = make_token_counter("estimate", estimate_divisor=3)
    assert isinstance(estimate, EstimateTokenCounter)
    assert estimate.count("abcdef") == 2
    with pytest.raises(ConfigError, match="estimate_divisor"):
        make_token_counter("qwen", estimate_divisor=9)


async def test_make_token_counter_async(qwen: QwenTokenCounter):
    counter = await make_token_counter_async("auto", model_name="qwen3-max")
    assert counter.count("hello world") == 2


# ---------------------------------------------------------------- offline loading


def test_network_guard_really_blocks_tiktoken(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: list[str]
):
    # Without priming, plain tiktoken would download; the guard turns that into an error.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(OSError, match="network disabled"):
        tiktoken.get_encoding("cl100k_base")
    assert offline == [tokens._OPENAI_URL.format(name="cl100k_base")]
    offline.clear()


def test_loads_offline_without_writing_tiktokens_cache(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: list[str]
):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    counter = make_token_counter("cl100k_base")
    assert isinstance(counter, TiktokenCounter)
    assert counter.encode("hello world") == [15339, 1917]
    assert counter.encode("Hello, world!") == [9906, 11, 1917, 0]
    assert not cache.exists(), "tiktoken's shared cache folder is never written"
    assert "cl100k_base" not in tiktoken.registry.ENCODINGS  # built directly, not via tiktoken
    assert offline == []


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_direct_build_matches_tiktoken_constructor(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    # tiktoken's own constructor reads its cache file: give it the bundled data there.
    (tmp_path / CACHE_KEYS[name]).write_bytes(tokens._bundled_openai_file(name))
    official = openai_public.ENCODING_CONSTRUCTORS[name]()
    assert tokens._OPENAI_PAT_STR[name] == official["pat_str"]
    assert tokens._OPENAI_SPECIAL_TOKENS[name] == official["special_tokens"]
    bundled = tokens._parse_ranks(tokens._bundled_openai_file(name), name)
    assert bundled == official["mergeable_ranks"]


def test_encodings_load_once_across_threads(fresh: None, monkeypatch: pytest.MonkeyPatch):
    calls: list[str] = []
    real_loader = tokens._load_qwen
    barrier = threading.Barrier(4)

    def counting_loader() -> tiktoken.Encoding:
        calls.append(threading.current_thread().name)
        return real_loader()

    monkeypatch.setattr(tokens, "_load_qwen", counting_loader)
    results: list[int] = []

    def worker() -> None:
        barrier.wait()
        results.append(QwenTokenCounter().count("hello world"))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [2, 2, 2, 2]
    assert len(calls) == 1


# ---------------------------------------------------------------- fallback on broken data


def test_missing_vocabulary_falls_back_and_warns_once(
    fresh: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    def missing(package: str, *parts: str) -> bytes:
        raise FileNotFoundError(f"{'/'.join(parts)} is missing from the {package!r} package")

    monkeypatch.setattr(tokens, "_package_file", missing)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        first = make_token_counter("qwen", estimate_divisor=3)
        second = make_token_counter("auto", model_name="qwen-max")
    assert isinstance(first, EstimateTokenCounter)
    assert first.name == "estimate/3"
    assert isinstance(second, EstimateTokenCounter)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "qwen" in warnings[0].message and "qwen.tiktoken is missing" in warnings[0].message


@pytest.mark.parametrize(
    "payload",
    [
        b"not base64 at all\n",
        b"YWJj 0\nZGVm\n",
        b"YWJj 0\nZGVm 1\n",  # parses, but far too small for Qwen
    ],
)
def test_corrupt_qwen_file_falls_back(
    payload: bytes, fresh: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(tokens, "_package_file", lambda package, *parts: payload)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        counter = make_token_counter("qwen")
    assert isinstance(counter, EstimateTokenCounter)
    assert counter.count("hello world") == 3
    assert any("qwen" in r.message for r in caplog.records)


def test_corrupt_bundled_openai_data_falls_back(
    fresh: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "_package_file", lambda package, *parts: gzip.compress(b"x 1\n"))
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        counter = make_token_counter("o200k_base")
    assert isinstance(counter, EstimateTokenCounter)
    assert list(tmp_path.iterdir()) == []  # nothing bad was written into tiktoken's cache
    assert any("unexpected SHA-256" in r.message for r in caplog.records)


# ---------------------------------------------------------------- usage calibration


def test_calibration_starts_neutral():
    calibration = UsageCalibration()
    assert calibration.factor == 1.0
    assert calibration.apply(123) == 123
    assert calibration.apply(0) == 0


def test_calibration_moving_average():
    calibration = UsageCalibration()
    calibration.observe(100, 150)
    assert calibration.factor == pytest.approx(1.25)
    calibration.observe(100, 150)
    assert calibration.factor == pytest.approx(1.375)
    assert calibration.apply(100) == 138  # 137.5 rounded up
    assert calibration.samples == 2


def test_calibration_converges():
    calibration = UsageCalibration()
    for _ in range(40):
        calibration.observe(1000, 2400)
    assert calibration.factor == pytest.approx(2.4)
    for _ in range(40):
        calibration.observe(1000, 700)
    assert calibration.factor == pytest.approx(0.7)
    assert calibration.apply(1000) == 700  # no float noise (1000 * 0.7000000001)


def test_calibration_clamps():
    calibration = UsageCalibration()
    calibration.observe(10, 10_000)  # one outlier sample is capped at 4x before averaging
    assert calibration.factor == pytest.approx(2.5)
    for _ in range(30):
        calibration.observe(10, 10_000)
        assert calibration.factor <= 4.0
    assert calibration.factor == pytest.approx(4.0)
    for _ in range(30):
        calibration.observe(10_000, 1)
        assert calibration.factor >= 0.5
    assert calibration.factor == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("estimated", "reported"),
    [(0, 100), (100, 0), (-5, 100), (100, -1), (math.nan, 1), (1, math.inf), (True, 5)],
)
def test_calibration_ignores_non_positive(estimated: Any, reported: Any):
    calibration = UsageCalibration()
    calibration.observe(estimated, reported)
    assert calibration.factor == 1.0
    assert calibration.samples == 0


@pytest.mark.parametrize("tokens_in", [-1, math.nan, "10"])
def test_calibration_apply_rejects_bad_input(tokens_in: Any):
    with pytest.raises(ValueError, match="tokens must be a number >= 0"):
        UsageCalibration().apply(tokens_in)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(-10, 10**7), st.integers(-10, 10**7)), max_size=30))
def test_calibration_factor_always_in_bounds(observations: list[tuple[int, int]]):
    calibration = UsageCalibration()
    for estimated, reported in observations:
        calibration.observe(estimated, reported)
        assert 0.5 <= calibration.factor <= 4.0
    assert calibration.apply(1000) >= 500
