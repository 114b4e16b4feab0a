"""A tool result's facts (error lines, paths, outcome) are computed once, when stage 2
settles it in its last form; a compaction gathers them instead of scanning each result
again, and the summary carries the same facts either way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from copaw_context.core.context.report import Limits
from copaw_context.core.engine import ContextEngine
from copaw_context.core.summary import result_facts
from copaw_context.core.summary.result_facts import forget_result_facts
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result, user


def output(name: str) -> str:
    body = "".join(f"{name} line {i:05d} of the build log\n" for i in range(300))
    return f"{body}error: planted failure in {name}.c\n"  # past the excerpt: in the tail


async def session(tmp_path: Path) -> tuple[ContextEngine, FakeHost]:
    pruning = {"pruning_recent_n": 1, "pruning_batch_ratio": 0}
    config = engine_config(200_000, compactor="extractive", tool_result_pruning_config=pruning)
    engine = ContextEngine(config, tmp_path)
    host = FakeHost([user("fix the build")], window=200_000)
    for name in ("alpha", "beta", "gamma", "delta"):
        parts, meta = await engine.on_tool_result(host, "shell", "{}", [output(name)], {})
        host.messages.append(FakeMessage("assistant", [call(name), result(name, parts[0], **meta)]))
        await engine.before_reasoning(host)
        await engine.input_meter.measure(host)
    host.messages.append(user("and now?"))
    return engine, host


async def compact(engine: ContextEngine, host: FakeHost) -> str:
    report = await engine.report(host)
    event = await engine.before_reasoning(host, limits=Limits(report.total - 1, 1))
    assert event is not None and event.kind == "compaction"
    return host.summary_text() or ""


async def test_a_compaction_gathers_the_facts_stage_two_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget_result_facts()
    engine, host = await session(tmp_path)
    scanned: list[str] = []
    real = result_facts.scan_errors
    monkeypatch.setattr(
        result_facts, "scan_errors", lambda text: scanned.append(text) or real(text)
    )
    summary = await compact(engine, host)
    settled = ("alpha", "beta", "gamma")  # cut to their old limit; delta is the recent one
    assert not [t for t in scanned if any(f"{n} line 00000" in t for n in settled)]
    for name in settled:
        assert f"error: planted failure in {name}.c" in summary


async def test_the_summary_is_the_same_with_the_facts_computed_at_the_compaction(
    tmp_path: Path,
) -> None:
    forget_result_facts()
    engine, host = await session(tmp_path / "kept")
    kept = await compact(engine, host)
    engine, host = await session(tmp_path / "cold")
    forget_result_facts()  # nothing remembered: the compaction computes every result's facts
    cold = await compact(engine, host)
    assert "error: planted failure in alpha.c" in cold

    def same(summary: str) -> str:  # the saved files have other names and folders
        summary = summary.replace(str(tmp_path / "kept"), "WS").replace(
            str(tmp_path / "cold"), "WS"
        )
        return re.sub(r"[0-9a-f]{32}\.txt", "NAME.txt", summary)

    assert same(cold) == same(kept)
