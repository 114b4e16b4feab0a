"""A hand-edited or corrupt saved session state never kills the reply nor switches
compaction off (found from outside: a 400-digit overflow factor raised OverflowError, 1e400
made every compaction raise, one malformed pending-archive record stopped every archive
write)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.context.state import SessionState
from copaw_context.core.engine import ContextEngine
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result, text, user


def conversation(turns: int) -> list[FakeMessage]:
    messages: list[FakeMessage] = []
    for n in range(turns):
        messages.append(user(f"question {n}: " + "details " * 120))
        body = [call(f"c{n}", "grep", "{}"), result(f"c{n}", "match " * 120, "grep")]
        messages.append(FakeMessage("assistant", [*body, text(f"answer {n}")]))
    return messages


HOSTILE_FACTORS: list[Any] = [10**400, 1e300, math.inf, -math.inf, math.nan, "8", True, [], -3]


@pytest.mark.parametrize("value", HOSTILE_FACTORS, ids=repr)
def test_a_hostile_saved_factor_reads_as_a_number_from_1_to_8(value: Any) -> None:
    state = SessionState({"overflow_factor": value, "overflow_evidence": value})
    for factor in (state.overflow_factor, state.overflow_evidence):
        assert 1.0 <= factor <= 8.0 and math.isfinite(factor)


@pytest.mark.parametrize("value", [10**400, math.inf, 1e300], ids=repr)
async def test_compaction_runs_under_a_hostile_saved_factor(tmp_path: Path, value: Any) -> None:
    engine = ContextEngine(engine_config(4000, compactor="extractive"), tmp_path)
    host = FakeHost(conversation(14), window=4000)
    host.state["overflow_factor"] = value
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction"
    report = await engine.report(host)
    assert report.total <= report.window


async def test_a_malformed_pending_record_is_set_aside_not_dropped(tmp_path: Path) -> None:
    engine = ContextEngine(engine_config(4000, compactor="extractive"), tmp_path)
    host = FakeHost(conversation(14), window=4000)
    broken = [{"archive_id": "x"}, {"message": 7, "archive_id": "y"}, "not a record"]
    host.state["pending_archive"] = list(broken)
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction"
    assert list((tmp_path / "dialog").glob("*.jsonl")), "the archive was not written"
    assert host.state["pending_archive_unreadable"] == broken  # kept, as they were
    assert not host.state.get("pending_archive")
    json.dumps(host.state)  # the state still saves
