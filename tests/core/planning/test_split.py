"""Tests for copaw_context.core.planning.split: unit grouping, split planning, pairing checks."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.planning.pairing import pairing_problems
from copaw_context.core.planning.split import (
    SplitItem,
    SplitPlan,
    Unit,
    group_units,
    index_items,
    plan_split,
)

# ---------------------------------------------------------------- helpers


def text(msg: int, tokens: int = 10, **flags: bool) -> SplitItem:
    return SplitItem(msg, tokens, **flags)


def user(msg: int, tokens: int = 10, **flags: bool) -> SplitItem:
    return SplitItem(msg, tokens, is_user_request=True, **flags)


def call(msg: int, *ids: str, tokens: int = 10, unfinished: bool = False) -> SplitItem:
    return SplitItem(msg, tokens, call_ids=frozenset(ids), unfinished=unfinished)


def result(msg: int, *ids: str, tokens: int = 10, pinned: bool = False) -> SplitItem:
    return SplitItem(msg, tokens, result_ids=frozenset(ids), pinned=pinned)


def spans(units: Sequence[Unit]) -> list[tuple[int, int]]:
    return [(u.start, u.end) for u in units]


def kept_pairing_problems(items: Sequence[SplitItem], keep: Sequence[int]) -> list[str]:
    kept = [items[i] for i in keep]
    pending = {cid for item in kept if item.unfinished for cid in item.call_ids}
    return pairing_problems([(i.call_ids, i.result_ids) for i in kept], pending_ids=pending)


def fifo_pairs(items: Sequence[SplitItem]) -> list[tuple[str, int, int]]:
    """Brute-force oracle: (id, call index, result index); a result takes the oldest open call."""
    pairs: list[tuple[str, int, int]] = []
    used: set[tuple[str, int]] = set()
    for r, item in enumerate(items):
        for rid in sorted(item.result_ids):
            open_calls = [
                c for c in range(r + 1) if rid in items[c].call_ids and (rid, c) not in used
            ]
            if open_calls:
                used.add((rid, open_calls[0]))
                pairs.append((rid, open_calls[0], r))
    return pairs


def latest_request(items: Sequence[SplitItem]) -> int | None:
    requests = [i for i, item in enumerate(items) if item.is_user_request]
    return requests[-1] if requests else None


def finished_turn(items: Sequence[SplitItem]) -> bool:
    """Independent oracle: a later message ends the latest request's turn with a plain answer
    and nothing after the request is unfinished."""
    latest = latest_request(items)
    if latest is None:
        return False
    after = items[latest + 1 :]
    return (
        bool(after)
        and not after[-1].call_ids
        and not after[-1].result_ids
        and after[-1].message_index > items[latest].message_index
        and not any(item.unfinished for item in after)
    )


def forced_units(
    items: Sequence[SplitItem], units: Sequence[Unit], *, force: bool = False
) -> list[bool]:
    """Independent oracle: latest request (unless /compact finds its turn finished), pinned,
    first unfinished and everything after; a finished turn whose request is pinned, whole."""
    latest = latest_request(items)
    whole_turn_from = len(items)
    if force and finished_turn(items):
        assert latest is not None
        whole_turn_from = latest if items[latest].pinned else len(items)
        latest = None
    unfinished = [i for i, item in enumerate(items) if item.unfinished]
    first_unfinished = unfinished[0] if unfinished else len(items)
    return [
        any(items[i].pinned for i in range(u.start, u.end))
        or (latest is not None and u.start <= latest < u.end)
        or u.end > first_unfinished
        or u.end > whole_turn_from
        for u in units
    ]


def expected_tail(
    items: Sequence[SplitItem],
    units: Sequence[Unit],
    forced: Sequence[bool],
    budget: dict[str, int],
) -> list[int]:
    """Independent oracle for the free (not forced) units a plan keeps.

    The longest run of free units from the end that fits the reserve (forced units cost
    nothing; an unkeepable unit ends the run), then trimmed to start at the first kept unit
    holding a user request, so that no turn is kept without its user message.
    """
    longest: list[int] = []
    budget_left = budget["reserve_tokens"]
    start = len(units)
    for position in range(len(units) - 1, -1, -1):
        unit = units[position]
        if not unit.keepable:
            break
        if not forced[position]:
            if unit.tokens > budget_left:
                break
            budget_left -= unit.tokens
            longest.append(position)
        start = position
    users = [
        n
        for n in range(start, len(units))
        if any(items[i].is_user_request for i in range(units[n].start, units[n].end))
    ]
    first_user = users[0] if users else start
    return sorted(n for n in longest if n >= first_user)


def check_structure(items: Sequence[SplitItem], plan: SplitPlan, *, force: bool = False) -> None:
    """Invariants that hold for every input."""
    assert list(plan.compact) == sorted(set(plan.compact))
    assert list(plan.keep) == sorted(set(plan.keep))
    assert sorted(plan.compact + plan.keep) == list(range(len(items)))
    assert plan.total_tokens >= plan.kept_tokens
    request = latest_request(items)
    if request is not None and force and finished_turn(items):
        # /compact after a finished turn: the request goes with its answer, or neither does
        answer = len(items) - 1
        assert request not in plan.keep or answer in plan.keep  # never shown as open
        if not items[request].pinned and not items[answer].pinned:
            assert request in plan.compact and answer in plan.compact
        request = None
    elif request is not None:
        assert request in plan.keep  # the live request is never compacted
    if plan.reason == "below-threshold":
        assert plan.compact == ()
        return
    kept_set = set(plan.keep)
    for unit in group_units(items):
        kept_here = [i for i in range(unit.start, unit.end) if i in kept_set]
        if unit.keepable:
            assert kept_here in ([], list(range(unit.start, unit.end))), f"{unit} was split"
        else:  # only the latest request may be kept out of a unit that cannot be kept
            assert kept_here in ([], [request]), f"{unit} cannot be kept"
    assert kept_pairing_problems(items, plan.keep) == []
    first_result = next((i for i in plan.keep if items[i].result_ids), None)
    if first_result is not None:
        earlier_calls = {c for i in plan.keep if i <= first_result for c in items[i].call_ids}
        assert items[first_result].result_ids <= earlier_calls
    assert (plan.reason == "nothing-safe-to-compact") == (plan.compact == ())


# ---------------------------------------------------------------- strategies

tokens_st = st.integers(0, 500)


def rare(draw: st.DrawFn, one_in: int = 8) -> bool:
    return draw(st.integers(0, one_in - 1)) == 0


class ToolIds:
    """Tool call ids: unique, or restarting at ``call_0`` every round like some servers do."""

    def __init__(self, reuse: bool) -> None:
        self.reuse = reuse
        self.counter = itertools.count()

    def round(self, size: int) -> list[str]:
        if self.reuse:
            self.counter = itertools.count()
        return [f"call_{next(self.counter)}" for _ in range(size)]


@st.composite
def conversations(draw: st.DrawFn) -> list[SplitItem]:
    """Realistic contexts: user turns, texts, sequential and parallel tool rounds."""
    ids = ToolIds(reuse=rare(draw, 3))
    items: list[SplitItem] = []
    msg = 0
    for _ in range(draw(st.integers(0, 2))):  # results whose calls an older tool compacted
        items.append(result(msg, *ids.round(1), tokens=draw(tokens_st)))
        msg += 1
    for _ in range(draw(st.integers(0, 6))):
        items.append(user(msg, draw(tokens_st), pinned=rare(draw)))
        msg += 1
        separate_results = draw(st.booleans())  # 1.x: results live in their own message
        for kind in draw(st.lists(st.sampled_from(["text", "pair", "parallel"]), max_size=5)):
            if kind == "text":
                items.append(text(msg, draw(tokens_st), pinned=rare(draw)))
                continue
            group = ids.round(1 if kind == "pair" else draw(st.integers(2, 4)))
            for cid in group:
                items.append(call(msg, cid, tokens=draw(tokens_st)))
            if rare(draw, 3):
                items.append(text(msg, draw(tokens_st)))
            if separate_results:
                msg += 1
            for cid in draw(st.permutations(group)):
                items.append(result(msg, cid, tokens=draw(tokens_st), pinned=rare(draw, 12)))
            if separate_results:
                msg += 1
        msg += 1
    if items and draw(st.booleans()):  # tool calls still pending at the end
        group = ids.round(draw(st.integers(1, 3)))
        answered = draw(st.sets(st.sampled_from(group), max_size=len(group) - 1))
        for cid in group:
            items.append(call(msg, cid, tokens=draw(tokens_st), unfinished=cid not in answered))
        for cid in sorted(answered):
            items.append(result(msg, cid, tokens=draw(tokens_st)))
        if draw(st.booleans()):
            items.append(text(msg, draw(tokens_st)))
    return items


@st.composite
def arbitrary_items(draw: st.DrawFn) -> list[SplitItem]:
    """Anything the type allows: misordered, reused, duplicated, orphaned ids, random flags."""
    id_sets = st.frozensets(st.sampled_from("abcdef"), max_size=2)
    tool_item = st.builds(
        SplitItem,
        message_index=st.just(0),
        tokens=st.integers(0, 50),
        call_ids=id_sets,
        result_ids=id_sets,
        pinned=st.booleans(),
        unfinished=st.booleans(),
    )
    request = st.builds(
        SplitItem,
        message_index=st.just(0),
        tokens=st.integers(0, 50),
        is_user_request=st.just(True),
        pinned=st.booleans(),
    )
    return draw(st.lists(st.one_of(tool_item, tool_item, request), max_size=14))


budgets = st.fixed_dictionaries(
    {
        "threshold_tokens": st.integers(0, 4000),
        "reserve_tokens": st.integers(0, 2000),
        "fixed_tokens": st.integers(0, 1500),
        "force": st.booleans(),
    }
)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- group_units


def test_parallel_calls_form_one_unit() -> None:
    items = [call(0, "a"), call(0, "b"), result(1, "a"), result(1, "b")]
    assert spans(group_units(items)) == [(0, 4)]


def test_sequential_pairs_with_text_between_are_separate_units() -> None:
    items = [call(0, "a"), result(0, "a"), text(0), call(0, "b"), result(0, "b")]
    assert spans(group_units(items)) == [(0, 2), (2, 3), (3, 5)]


def test_text_and_messages_between_call_and_result_join_the_unit() -> None:
    items = [user(0), call(1, "a"), text(1), text(2), result(3, "a"), text(4)]
    units = group_units(items)
    assert spans(units) == [(0, 1), (1, 5), (5, 6)]
    assert units[1].tokens == 40 and units[1].keepable


def test_crossing_pairs_merge() -> None:
    items = [call(0, "a"), call(0, "b"), result(0, "a"), call(0, "c"), result(0, "b")]
    items += [result(0, "c")]
    assert spans(group_units(items)) == [(0, 6)]


def test_orphan_result_and_lone_call_are_own_units() -> None:
    items = [result(0, "gone"), text(1), call(2, "x", unfinished=True), call(2, "y")]
    units = group_units(items)
    assert spans(units) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert [u.orphan_result for u in units] == [True, False, False, False]
    assert [u.malformed for u in units] == [False, False, False, True]  # y: never answered


def test_misordered_and_duplicate_ids_are_not_keepable() -> None:
    misordered = group_units([result(0, "a"), call(1, "a")])
    assert spans(misordered) == [(0, 1), (1, 2)]
    assert misordered[0].orphan_result and misordered[1].malformed  # call never answered
    concurrent = group_units([call(0, "a"), call(0, "a"), result(1, "a"), result(1, "a")])
    assert spans(concurrent) == [(0, 4)] and concurrent[0].malformed
    second_result = group_units([call(0, "a"), result(0, "a"), result(0, "a")])
    assert spans(second_result) == [(0, 2), (2, 3)]
    assert second_result[0].keepable and second_result[1].orphan_result


def test_sequentially_reused_ids_pair_by_occurrence() -> None:
    items = [call(0, "call_0"), result(0, "call_0"), text(1), call(2, "call_0")]
    items += [call(2, "call_1"), result(3, "call_1"), result(3, "call_0")]
    units = group_units(items)
    assert spans(units) == [(0, 2), (2, 3), (3, 7)]
    assert all(u.keepable for u in units)
    back_to_back = group_units([call(0, "a"), result(0, "a"), call(1, "a"), result(1, "a")])
    assert spans(back_to_back) == [(0, 2), (2, 4)] and all(u.keepable for u in back_to_back)


def test_empty_input() -> None:
    assert group_units([]) == []


@SETTINGS
@given(arbitrary_items())
def test_units_partition_and_are_minimal(items: list[SplitItem]) -> None:
    units = group_units(items)
    boundaries = [0] + [u.end for u in units]
    assert [u.start for u in units] == boundaries[:-1]
    assert boundaries[-1] == len(items)
    assert all(u.end > u.start for u in units)
    assert all(u.tokens == sum(i.tokens for i in items[u.start : u.end]) for u in units)
    pairs = fifo_pairs(items)
    unit_of = {i: n for n, u in enumerate(units) for i in range(u.start, u.end)}
    assert all(unit_of[c] == unit_of[r] for _, c, r in pairs)
    for unit in units:  # minimal: every inner cut would separate a call from its result
        for cut in range(unit.start + 1, unit.end):
            assert any(unit.start <= c < cut <= r for _, c, r in pairs)
    answer = {(tool_id, c): r for tool_id, c, r in pairs}
    answered_results = {(tool_id, r) for tool_id, _, r in pairs}
    for unit in units:
        inside = range(unit.start, unit.end)
        orphan = any(
            (rid, i) not in answered_results for i in inside for rid in items[i].result_ids
        )
        malformed = any(
            ((cid, i) not in answer and not items[i].unfinished)
            or any(  # an earlier call with this id is still open (answered at i or later)
                cid in items[j].call_ids and answer.get((cid, j), len(items)) >= i for j in range(i)
            )
            for i in inside
            for cid in items[i].call_ids
        )
        assert (unit.orphan_result, unit.malformed) == (orphan, malformed)


# ---------------------------------------------------------------- plan_split properties


@SETTINGS
@given(conversations(), budgets)
def test_realistic_plans_are_valid_and_keep_the_longest_tail(
    items: list[SplitItem], budget: dict[str, int]
) -> None:
    plan = plan_split(items, **budget)  # type: ignore[arg-type]
    check_structure(items, plan, force=budget["force"])
    total = budget["fixed_tokens"] + sum(i.tokens for i in items)
    assert plan.total_tokens == total
    assert plan.kept_tokens == budget["fixed_tokens"] + sum(items[i].tokens for i in plan.keep)
    if not budget["force"] and total <= budget["threshold_tokens"]:
        assert plan.reason == "below-threshold" and plan.keep == tuple(range(len(items)))
        return
    units = group_units(items)
    forced = forced_units(items, units, force=budget["force"])
    kept = [u.start in set(plan.keep) for u in units]
    for unit, is_forced, is_kept in zip(units, forced, kept, strict=True):
        if unit.orphan_result:
            assert not is_kept
        elif is_forced:  # latest request, pins, unfinished calls and what follows them
            assert is_kept
    if budget["force"]:
        assert all(
            is_kept == (f and u.keepable) for u, f, is_kept in zip(units, forced, kept, strict=True)
        )
        return
    free = [n for n, f in enumerate(forced) if not f]
    tail_tokens = sum(units[n].tokens for n in free if kept[n])
    assert tail_tokens <= budget["reserve_tokens"]
    assert [n for n in free if kept[n]] == expected_tail(items, units, forced, budget)
    requests = [i for i, it in enumerate(items) if it.is_user_request]
    assert plan.request_over_reserve == bool(
        requests and items[requests[-1]].tokens > budget["reserve_tokens"]
    )


@SETTINGS
@given(arbitrary_items(), budgets)
def test_any_input_gives_a_valid_plan(items: list[SplitItem], budget: dict[str, int]) -> None:
    plan = plan_split(items, **budget)  # type: ignore[arg-type]
    check_structure(items, plan, force=budget["force"])
    if budget["force"] and plan.reason != "nothing-safe-to-compact":
        assert plan.reason == "forced"


@SETTINGS
@given(conversations(), st.lists(budgets, min_size=1, max_size=4))
def test_one_index_serves_every_plan_of_the_same_items(
    items: list[SplitItem], plans: list[dict[str, int]]
) -> None:
    """The ledger keeps one index per sequence and plans from it at every reserve: each
    plan is the one made from scratch, item by item."""
    index = index_items(items)
    assert index.units == tuple(group_units(items))
    for budget in plans:
        fresh = plan_split(list(items), **budget)  # type: ignore[arg-type]
        assert plan_split(items, index=index, **budget) == fresh  # type: ignore[arg-type]
        check_structure(items, fresh, force=budget["force"])


@SETTINGS
@given(conversations(), st.integers(0, 500))
def test_below_threshold_compacts_nothing(items: list[SplitItem], fixed: int) -> None:
    total = fixed + sum(i.tokens for i in items)
    plan = plan_split(items, threshold_tokens=total, reserve_tokens=0, fixed_tokens=fixed)
    assert plan == SplitPlan((), tuple(range(len(items))), total, total, "below-threshold", False)


# ---------------------------------------------------------------- cases from the reference bugs


def test_parallel_tool_calls_are_kept_together_issue_947() -> None:
    items = [user(0), text(1), user(2), text(3), call(3, "a"), call(3, "b")]
    items += [result(4, "a"), result(4, "b"), text(5)]
    plan = plan_split(items, threshold_tokens=50, reserve_tokens=60)
    assert plan.keep == (2, 3, 4, 5, 6, 7, 8) and plan.compact == (0, 1)
    assert plan.reason == "compacted"
    # a reserve that fits only part of the group compacts the whole group
    plan = plan_split(items, threshold_tokens=50, reserve_tokens=30)
    assert plan.keep == (2, 8) and plan.compact == (0, 1, 3, 4, 5, 6, 7)


def test_the_kept_tail_never_starts_inside_an_earlier_turn() -> None:
    """ "不拆分 user-assistant 对话对": a reply is not kept without the message it answers."""
    items = [user(0), text(1), call(1, "a"), result(2, "a"), text(3), user(4), text(5)]
    # The reserve would fit the end of turn 0 (its call, result and answer) and turn 1;
    # turn 0's request does not fit, so its reply goes with it.
    plan = plan_split(items, threshold_tokens=50, reserve_tokens=40)
    assert plan.keep == (5, 6) and plan.compact == (0, 1, 2, 3, 4)
    # When the reserve fits a whole earlier turn, the tail starts at its request.
    plan = plan_split(items, threshold_tokens=50, reserve_tokens=60)
    assert plan.keep == (0, 1, 2, 3, 4, 5, 6)
    items = [user(0), text(1), user(2), text(3), text(3), text(3)]
    plan = plan_split(items, threshold_tokens=40, reserve_tokens=30)
    assert plan.keep == (2, 3, 4, 5), "the turn of the latest request keeps any part of it"


def test_huge_tool_result_is_compacted_with_its_call() -> None:
    items = [user(0, 10), call(1, "a", tokens=10), result(2, "a", tokens=12592)]
    items += [text(3, 50), user(4, 20)]
    plan = plan_split(items, threshold_tokens=10000, reserve_tokens=2000)
    # The answer at 3 ends the turn of request 0: it goes with that request (not kept alone).
    assert plan.compact == (0, 1, 2, 3) and plan.keep == (4,)
    assert plan.kept_tokens == 20 and plan.total_tokens == 12682


def test_reserve_zero_keeps_only_the_forced_units() -> None:
    items = [user(0), text(1, pinned=True), text(1), user(2), call(3, "a"), result(3, "a")]
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=0)
    assert plan.keep == (1, 3) and plan.compact == (0, 2, 4, 5)
    assert plan.request_over_reserve


def test_zero_token_units_fit_a_zero_reserve() -> None:
    items = [user(0, 10), text(1, 10), text(1, 0)]
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=0)
    assert plan.keep == (0, 2) and plan.compact == (1,)


def test_threshold_below_fixed_tokens_still_gives_a_valid_plan() -> None:
    items = [user(0), call(1, "a"), result(1, "a"), text(1), user(2)]
    plan = plan_split(items, threshold_tokens=100, reserve_tokens=20, fixed_tokens=500)
    check_structure(items, plan)
    # The text at 3 would fit the reserve, but it ends the turn of request 0.
    assert plan.compact == (0, 1, 2, 3) and plan.keep == (4,)
    assert plan.total_tokens == 550 and plan.kept_tokens == 510


def test_live_request_larger_than_reserve_is_kept_and_flagged() -> None:
    items = [user(0, 200), text(1, 400), user(2, 5000)]
    plan = plan_split(items, threshold_tokens=1000, reserve_tokens=500)
    assert plan.keep == (2,) and plan.compact == (0, 1)
    assert plan.request_over_reserve and plan.reason == "compacted"
    alone = plan_split([user(0, 5000)], threshold_tokens=1000, reserve_tokens=500)
    assert alone.keep == (0,) and alone.reason == "nothing-safe-to-compact"
    assert alone.request_over_reserve


def test_orphan_result_is_never_kept_even_if_pinned() -> None:
    items = [result(0, "gone", pinned=True), text(1), user(2)]
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=10_000)
    assert 0 in plan.compact and plan.keep == (2,)


def test_unfinished_call_and_everything_after_it_are_kept() -> None:
    items = [user(0), text(1, 300), call(1, "a", unfinished=True), call(1, "b"), result(1, "b")]
    items += [text(1, 400)]
    plan = plan_split(items, threshold_tokens=100, reserve_tokens=0)
    assert plan.compact == (1,) and plan.keep == (0, 2, 3, 4, 5)
    assert kept_pairing_problems(items, plan.keep) == []


def test_pinned_and_request_kept_out_of_order_with_the_tail() -> None:
    items = [text(0, pinned=True), text(0, 100), user(1), text(2, 100), text(2, 100), text(2)]
    plan = plan_split(items, threshold_tokens=100, reserve_tokens=15)
    assert plan.keep == (0, 2, 5) and plan.compact == (1, 3, 4)


def test_force_compacts_everything_safe() -> None:
    items = [user(0), text(1, pinned=True), call(1, "a"), result(1, "a"), user(2), text(3)]
    plan = plan_split(items, threshold_tokens=10**6, reserve_tokens=10**6, force=True)
    assert plan.reason == "forced"  # the finished turn goes with its answer: only the pin stays
    assert plan.keep == (1,) and plan.compact == (0, 2, 3, 4, 5)
    # an open turn (the request not answered yet) keeps its request
    open_turn = items[:5]
    plan = plan_split(open_turn, threshold_tokens=10**6, reserve_tokens=10**6, force=True)
    assert plan.keep == (1, 4) and plan.compact == (0, 2, 3)
    # a turn that ends on a tool result is still running: the request stays
    running = [*items[:5], call(3, "b"), result(3, "b")]
    plan = plan_split(running, threshold_tokens=10**6, reserve_tokens=10**6, force=True)
    assert plan.keep == (1, 4) and plan.compact == (0, 2, 3, 5, 6)
    nothing = plan_split([user(0), text(0, pinned=True)], threshold_tokens=0, reserve_tokens=0)
    assert nothing.reason == "nothing-safe-to-compact" and nothing.compact == ()
    forced_nothing = plan_split([user(0)], threshold_tokens=99, reserve_tokens=0, force=True)
    assert forced_nothing.reason == "nothing-safe-to-compact"


def test_reused_call_ids_keep_the_latest_request_and_its_tools() -> None:
    # OpenAI-compatible servers that send call_0 on every turn
    items = [user(0, 100), call(1, "call_0", tokens=100), result(2, "call_0", tokens=100)]
    items += [user(3, 100), call(4, "call_0", tokens=100), result(5, "call_0", tokens=100)]
    plan = plan_split(items, threshold_tokens=300, reserve_tokens=250)
    assert plan.compact == (0, 1, 2) and plan.keep == (3, 4, 5)
    assert plan.reason == "compacted" and plan.kept_tokens == 300
    assert kept_pairing_problems(items, plan.keep) == []
    forced = plan_split(items, threshold_tokens=300, reserve_tokens=250, force=True)
    assert forced.keep == (3,) and forced.compact == (0, 1, 2, 4, 5)


def test_latest_request_inside_a_malformed_unit_is_kept_alone() -> None:
    # two concurrent calls with one id make a unit that cannot be kept
    items = [user(0), call(1, "a"), user(2, 7), call(3, "a"), result(4, "a"), result(4, "a")]
    items += [text(5)]
    units = group_units(items)
    assert spans(units) == [(0, 1), (1, 6), (6, 7)] and units[1].malformed
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=10_000, fixed_tokens=3)
    assert plan.keep == (2, 6) and plan.compact == (0, 1, 3, 4, 5)
    assert plan.kept_tokens == 3 + 7 + 10 and plan.reason == "compacted"
    forced = plan_split(items, threshold_tokens=0, reserve_tokens=0, force=True)
    # /compact: the turn is answered (text(5)), so the request goes with its answer
    assert forced.keep == () and forced.compact == (0, 1, 2, 3, 4, 5, 6)
    forced = plan_split(items[:-1], threshold_tokens=0, reserve_tokens=0, force=True)
    assert forced.keep == (2,) and forced.compact == (0, 1, 3, 4, 5)


def test_tail_stops_at_a_unit_that_cannot_be_kept() -> None:
    items = [user(0), text(1), call(1, "dangling"), text(2), user(3)]
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=10_000)
    assert plan.keep == (4,) and plan.compact == (0, 1, 2, 3)
    items = [user(0), text(1), call(1, "dangling"), user(2), text(3)]
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=10_000)
    assert plan.keep == (3, 4) and plan.compact == (0, 1, 2)


def test_empty_context() -> None:
    assert plan_split([], threshold_tokens=0, reserve_tokens=0).reason == "below-threshold"
    over = plan_split([], threshold_tokens=0, reserve_tokens=0, fixed_tokens=1)
    assert over.reason == "nothing-safe-to-compact" and over.keep == ()


def test_large_context_is_planned() -> None:
    items: list[SplitItem] = []
    for n in range(20_000):
        items += [user(5 * n), text(5 * n + 1), call(5 * n + 2, f"a{n}", f"b{n}")]
        items += [result(5 * n + 3, f"b{n}"), result(5 * n + 3, f"a{n}")]
    assert len(items) == 100_000
    plan = plan_split(items, threshold_tokens=500_000, reserve_tokens=1000)
    assert plan.reason == "compacted"
    assert len(plan.keep) == 100 and plan.keep[0] == 99_900
    assert plan.kept_tokens == 1000
    assert len(group_units(items)) == 60_000


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold_tokens": -1, "reserve_tokens": 0}, "threshold_tokens must be >= 0"),
        ({"threshold_tokens": 0, "reserve_tokens": -5}, "reserve_tokens must be >= 0"),
        ({"threshold_tokens": 0, "reserve_tokens": 0, "fixed_tokens": -1}, "fixed_tokens"),
    ],
)
def test_bad_budgets_raise_value_error(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_split([user(0)], **kwargs)  # type: ignore[arg-type]


def test_bad_types_raise_type_error() -> None:
    with pytest.raises(TypeError, match="threshold_tokens must be an int"):
        plan_split([], threshold_tokens=1.5, reserve_tokens=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reserve_tokens must be an int"):
        plan_split([], threshold_tokens=1, reserve_tokens=True)
    with pytest.raises(TypeError, match="call_ids must be a frozenset"):
        SplitItem(0, 1, call_ids="abc")  # type: ignore[arg-type]


def test_negative_item_tokens_raise_value_error() -> None:
    with pytest.raises(ValueError, match="SplitItem.tokens must be >= 0, got -3"):
        SplitItem(0, -3)
    with pytest.raises(ValueError, match="message_index"):
        SplitItem(-1, 3)


def test_user_request_item_cannot_carry_tool_ids() -> None:
    with pytest.raises(ValueError, match="user request item cannot carry tool call/result ids"):
        SplitItem(0, 1, call_ids=frozenset({"a"}), is_user_request=True)
    with pytest.raises(ValueError, match=r"result_ids=\['b'\]"):
        SplitItem(0, 1, result_ids=frozenset({"b"}), is_user_request=True)


def test_split_item_accepts_plain_sets() -> None:
    item = SplitItem(0, 1, call_ids={"a"}, result_ids=["b"])  # type: ignore[arg-type]
    assert item.call_ids == frozenset({"a"}) and item.result_ids == frozenset({"b"})


# ---------------------------------------------------------------- pairing_problems


def seq(*pairs: tuple[str, str]) -> list[tuple[frozenset[str], frozenset[str]]]:
    return [(frozenset(c), frozenset(r)) for c, r in pairs]


def test_pairing_valid_sequences() -> None:
    assert pairing_problems([]) == []
    assert pairing_problems(seq(("ab", ""), ("", "b"), ("", "a"), ("", ""))) == []
    assert pairing_problems(seq(("a", "a"))) == []  # call before result within one item
    # sequential reuse (servers sending call_0 every turn): each result answers the open call
    assert pairing_problems(seq(("a", ""), ("", "a"), ("", ""), ("a", ""), ("", "a"))) == []
    assert pairing_problems(seq(("b", "b"), ("b", "b"))) == []


def test_pairing_reports_each_problem() -> None:
    problems = pairing_problems(
        seq(("", "x"), ("", "a"), ("a", ""), ("b", "b"), ("", "b"), ("c", ""), ("c", ""))
        + seq(("", "c"), ("", "c"), ("c", ""))
    )
    assert problems == [
        "item 0: tool result 'x' has no matching tool call",
        "item 1: tool result 'a' comes before its call",
        "item 4: tool result 'b' answers a call that already has a result",
        "item 6: tool call id 'c' duplicates the still unanswered call at item 5",
        "item 2: tool call 'a' is never answered",
        "item 9: tool call 'c' is never answered",
    ]


def test_pairing_pending_calls_may_lack_results() -> None:
    sequence = seq(("a", ""), ("b", ""))
    assert pairing_problems(sequence) == [
        "item 0: tool call 'a' is never answered",
        "item 1: tool call 'b' is never answered",
    ]
    assert pairing_problems(sequence, pending_ids={"a"}) == [
        "item 1: tool call 'b' is never answered"
    ]


def test_compact_keeps_a_pinned_finished_request_with_its_answer() -> None:
    """Found by the property test above: a pinned request stays, so its answer stays too
    (compacting the answer alone would show an answered request as open)."""

    def item(index: int, request: bool, pinned: bool = False) -> SplitItem:
        return SplitItem(index, 10, frozenset(), frozenset(), request, pinned, False)

    items = [item(0, True), item(1, False), item(2, True, pinned=True), item(3, False)]
    plan = plan_split(items, threshold_tokens=0, reserve_tokens=0, fixed_tokens=0, force=True)
    assert plan.keep == (2, 3) and plan.compact == (0, 1)
    unpinned = [item(0, True), item(1, False), item(2, True), item(3, False)]
    plan = plan_split(unpinned, threshold_tokens=0, reserve_tokens=0, fixed_tokens=0, force=True)
    assert plan.keep == () and plan.compact == (0, 1, 2, 3)
