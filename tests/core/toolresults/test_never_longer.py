"""A cut never makes a tool result longer (issue 23 item 2).

A result just over its limit, cut, came out longer than it went in: the notice outweighed
what the cut removed (3,058 B -> 3,394 B). Such a result is kept whole, nothing is saved for
it, and stage 2 marks it done so it is not tried at every step.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.config.running import ToolResultPruningConfig
from copaw_context.core.engine import ContextEngine
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.policy import ToolResultPruning
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result


class Image:
    """A data part: passed through untouched."""


def size(parts: list[Any]) -> int:
    """UTF-8 bytes of the text parts as a formatter sends them (joined; surrogates as 3)."""
    texts = [p for p in parts if isinstance(p, str)]
    return len("\n".join(texts).encode("utf-8", "surrogatepass"))


def files(directory: Path) -> int:
    return len(list(directory.glob("*.txt"))) if directory.is_dir() else 0


characters = st.sampled_from(["a", "b", " ", "\n", "中", "😀", "\udc80", "é"])


@st.composite
def results(draw: st.DrawFn) -> tuple[int, list[Any]]:
    """A limit and a result around it: the band where the notice may outweigh the cut."""
    limit = draw(st.integers(16, 4000))
    count = draw(st.integers(1, 3))
    parts: list[Any] = []
    for _ in range(count):
        length = max(0, limit // count + draw(st.integers(-300, 1200)))
        parts.append("".join(draw(st.lists(characters, min_size=length, max_size=length))))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), Image())
    return limit, parts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results(), st.integers(16, 4000))
def test_no_cut_returns_a_longer_result(drawn: tuple[int, list[Any]], other: int) -> None:
    limit, parts = drawn

    async def run(root: Path) -> None:
        store = OffloadStore(root / "tool_result", 1)
        recent = max(limit, 1000)  # the smallest recent limit a config takes
        old = min(max(other, 100), recent)
        config = ToolResultPruningConfig(
            pruning_recent_msg_max_bytes=recent, pruning_old_msg_max_bytes=old
        )
        pruning = ToolResultPruning(config, store, root)
        fresh, fresh_meta, _ = await pruning.bound_fresh("dump", "{}", list(parts), {})
        assert size(fresh) <= size(parts), "stage 1"
        await store.drain()
        before = files(store.directory)
        cut, meta, stats = await pruning.bound(list(parts), {}, limit)
        assert size(cut) <= size(parts), "a cut to the limit"
        if size(cut) == size(parts):
            assert stats.offloaded == 0 and files(store.directory) == before, "nothing saved"
        again, _, _ = await pruning.bound(list(cut), meta, min(other, limit))
        assert size(again) <= size(cut), "a harder re-cut of our own cut"
        recut, _, _ = await pruning.bound(list(fresh), fresh_meta, other)
        assert size(recut) <= size(fresh), "stage 2 after stage 1"
        for out in (fresh, cut, again, recut):
            assert [p for p in out if not isinstance(p, str)] == [
                p for p in parts if not isinstance(p, str)
            ], "data parts untouched"

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp)))


async def test_a_result_just_over_the_old_limit_stays_whole_once(tmp_path: Path) -> None:
    """The case observed: 3,058 bytes against the 3,000-byte old limit."""
    config = engine_config(200_000, tool_result_pruning_config={"pruning_recent_n": 1})
    engine = ContextEngine(config, tmp_path)
    host = FakeHost(window=200_000)
    output = ("log line 0000 " + "x" * 45 + "\n") * 50 + "x" * 58
    assert len(output.encode()) == 3_058
    for call_id, text in (("c1", output), ("c2", "ok")):
        parts, meta = await engine.on_tool_result(host, "dump", "{}", [text], {})
        answer = result(call_id, parts[0], "dump", **meta)
        host.messages.append(FakeMessage("assistant", [call(call_id, "dump"), answer]))
        host.messages[-1].parts[1].output = tuple(parts)
    await engine.context.store.drain()
    assert files(tmp_path / "tool_result") == 0, "not saved ahead: its stage-2 cut is not made"
    await engine.input_meter.measure(host)  # the model saw both
    stats = await engine.pruner.prune_old(host)
    kept = host.messages[0].parts[1]
    assert kept.output == (output,) and parse_truncation_notice(output) is None
    assert (stats.truncated, stats.offloaded) == (0, 0)
    assert kept.meta.get("pruned_to") == 3000, "marked as done"
    ledger = engine.context.ledger(host)
    assert ledger.settled == 1, "not looked at again"
    assert files(tmp_path / "tool_result") == 0
