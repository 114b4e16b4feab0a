"""Tool results inside user-role messages (ReMe's 1.x layout, hand-built or loaded
histories) are paired by block, not role (issue 17 item 8): host-neutral, through the engine."""

from __future__ import annotations

from pathlib import Path

from copaw_context.core.engine import ContextEngine
from copaw_context.core.planning.pairing import pairing_problems
from copaw_context.core.planning.split import plan_split
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result, text, user


def reme_turn(n: int, size: int = 200) -> list[FakeMessage]:
    return [
        user(f"question {n}: " + "details " * size),
        FakeMessage("assistant", [call(f"c{n}", "grep")]),
        FakeMessage("user", [result(f"c{n}", "match " * size, "grep")], name="user"),
        FakeMessage("assistant", [text(f"answer {n}")]),
    ]


async def test_user_role_results_are_split_by_block(tmp_path: Path) -> None:
    engine = ContextEngine(engine_config(4000, compactor="extractive"), tmp_path)
    messages = [m for n in range(4) for m in reme_turn(n)]
    # mid-turn: the newest user-role message is a tool result, not the user's request
    host = FakeHost(messages[:-1], window=4000)
    ledger, _ = await engine.context.sync(host)
    items, _refs = ledger.split_items()
    requests = [item.message_index for item in items if item.is_user_request]
    assert requests == [0, 4, 8, 12], "only the typed questions are requests"
    assert any(item.result_ids == {"c3"} for item in items)
    for force in (False, True):
        for reserve in range(0, 2000, 50):
            plan = plan_split(items, threshold_tokens=0, reserve_tokens=reserve, force=force)
            kept = [items[i] for i in plan.keep]
            pending = {c for item in kept if item.unfinished for c in item.call_ids}
            sequence = [(item.call_ids, item.result_ids) for item in kept]
            assert pairing_problems(sequence, pending_ids=pending) == [], (force, reserve)
            assert 12 in {items[i].message_index for i in plan.keep}, "the request stays"
