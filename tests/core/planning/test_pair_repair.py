"""The pairing repair plan on random host layouts: every repaired sequence pairs (by the
one pairing rule), no block is duplicated, and only results that answer nothing are left out."""

from __future__ import annotations

import random

import pytest

from copaw_context.core.planning.pair_repair import Missing, RepairBlock, RepairPlan, plan_repair
from copaw_context.core.planning.pairing import pairing_problems


def _random_layout(rng: random.Random) -> list[list[RepairBlock]]:
    ids = [f"c{i}" for i in range(rng.randint(1, 5))]
    messages: list[list[RepairBlock]] = []
    for _ in range(rng.randint(1, 9)):
        kinds = rng.choices(["call", "result", "other", "hint"], [4, 4, 2, 1], k=rng.randint(0, 4))
        messages.append(
            [RepairBlock(k, rng.choice(ids) if k in ("call", "result") else None) for k in kinds]
        )
    return messages


def _flat_after(
    messages: list[list[RepairBlock]], inline: bool, plan: RepairPlan
) -> list[tuple[frozenset[str], frozenset[str]]]:
    out = []
    for planned in plan.messages:
        for ref in planned.blocks:
            if isinstance(ref, Missing):
                cid = plan.renamed.get(ref.call, messages[ref.call[0]][ref.call[1]].call_id)
                out.append((frozenset(), frozenset({cid})))
                continue
            block = messages[ref[0]][ref[1]]
            cid = plan.renamed.get(ref, block.call_id)
            ids = frozenset({cid}) if cid else frozenset()
            out.append(
                (
                    ids if block.kind == "call" else frozenset(),
                    ids if block.kind == "result" else frozenset(),
                )
            )
    return out


@pytest.mark.parametrize("inline", [True, False])
def test_random_layouts_pair_after_repair(inline: bool) -> None:
    rng = random.Random(17)
    repaired = 0
    for _ in range(3000):
        messages = _random_layout(rng)
        requests = [not m for m in messages]
        plan = plan_repair(messages, requests=requests, inline_results=inline)
        if plan is None:
            flat = [
                (
                    frozenset({b.call_id}) if b.kind == "call" else frozenset(),
                    frozenset({b.call_id}) if b.kind == "result" else frozenset(),
                )
                for m in messages
                for b in m
                if b.call_id
            ]
            assert pairing_problems(flat) == []
            continue
        repaired += 1
        assert pairing_problems(_flat_after(messages, inline, plan)) == []
        refs = [r for p in plan.messages for r in p.blocks if not isinstance(r, Missing)]
        assert len(refs) == len(set(refs)), "a block twice"
        left_out = {(mi, bi) for mi, m in enumerate(messages) for bi in range(len(m))} - set(refs)
        orphans = {r.at for r in plan.repairs if r.kind == "orphan"}
        assert left_out == orphans, "only results answering nothing are left out"
    assert repaired > 1000


def _b(spec: str) -> list[RepairBlock]:
    """``"c:a r:a t h"``: call a, result a, other (text), hint."""
    kinds = {"c": "call", "r": "result", "t": "other", "h": "hint"}
    out = []
    for token in spec.split():
        kind, _, call_id = token.partition(":")
        out.append(RepairBlock(kinds[kind], call_id or None))  # type: ignore[arg-type]
    return out


def _plan(specs: list[str], inline: bool) -> RepairPlan | None:
    messages = [_b(s) for s in specs]
    return plan_repair(
        messages,
        requests=[s == "t" and i % 2 == 0 for i, s in enumerate(specs)],
        inline_results=inline,
    )


def test_what_each_host_stores_is_left_as_is() -> None:
    as2_turn = ["t", "c:a r:a c:b c:c r:b r:c t"]
    as1_turn = ["t", "t c:a c:b", "r:a", "r:b", "t"]
    assert _plan(as2_turn, inline=True) is None
    assert _plan(as1_turn, inline=False) is None
    assert _plan(as1_turn, inline=True) is None
    plan = _plan(as2_turn, inline=False)  # 1.x would format the results before their calls
    assert plan is not None and {r.kind for r in plan.repairs} == {"moved"}


def test_unfinished_and_abandoned_calls() -> None:
    current = _plan(["t", "t c:a"], inline=False)  # the current step: its result is coming
    assert current is not None and [r.kind for r in current.repairs] == ["unfinished"]
    for later in (["t", "t c:a", "t"], ["t", "c:a", "t", "t"], ["t", "c:a t"]):
        plan = _plan(later, inline=True)  # a later request, or the step moved on
        assert plan is not None and [r.kind for r in plan.repairs] == ["abandoned"], later
        missing = [r for p in plan.messages for r in p.blocks if isinstance(r, Missing)]
        assert [m.unfinished for m in missing] == [False]
