"""The ledger's incremental state always equals a ledger built from scratch (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.context.ledger import Ledger, PartEntry, TokenMeter
from copaw_context.core.host.protocol import PartView
from copaw_context.core.tokens import EstimateTokenCounter
from tests.fake_host import FakeHost, FakeMessage, call, result, text, user

METER = TokenMeter(EstimateTokenCounter(4))


def never(name: str | None, tool_input: str | None) -> bool:
    return False


def fresh_totals(host: FakeHost) -> tuple[int, int, int, list[tuple[int, int]]]:
    ledger = Ledger()
    ledger.sync(host, METER, never)
    return ledger.tokens, ledger.nbytes, ledger.data, list(ledger.results())


operations = st.lists(
    st.sampled_from(["append", "grow", "replace", "pop", "tool", "new_list", "drop_head", "noop"]),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.integers(0, 10_000))
def test_incremental_sync_matches_a_full_rebuild(ops: list[str], seed: int) -> None:
    host = FakeHost([user("hello")])
    ledger = Ledger()
    for step, op in enumerate(ops):
        n = seed + step
        if op == "append":
            host.messages.append(user(f"message {n} " + "x" * (n % 50)))
        elif op == "grow" and host.messages:
            host.messages[-1].parts.append(text(f"more {n}"))
        elif op == "tool":
            host.messages.append(
                FakeMessage("assistant", [call(f"c{n}"), result(f"c{n}", "out " * (n % 30))])
            )
        elif op == "replace" and host.messages:
            host.messages = [*host.messages[:-1], user(f"replaced {n}")]
        elif op == "pop" and host.messages:
            host.messages = host.messages[:-1]
        elif op == "new_list":
            host.messages = list(host.messages)
        elif op == "drop_head":  # a compaction: the oldest messages leave, the rest move
            host.messages = host.messages[1 + n % 3 :]
        ledger.sync(host, METER, never)
        expected = fresh_totals(host)
        assert (ledger.tokens, ledger.nbytes, ledger.data, list(ledger.results())) == expected
        assert len(ledger.messages) == len(host.messages)


class CountingMeter(TokenMeter):
    """Counts how many texts it was asked to count."""

    def __init__(self) -> None:
        super().__init__(EstimateTokenCounter(4))
        self.counted: list[str] = []

    def part(self, part: PartView) -> tuple[int, int]:
        self.counted.append(part.text)
        return super().part(part)


def snapshot(ledger: Ledger) -> list[object]:
    """Everything the ledger holds about the context, entry by entry."""
    return [
        ledger.tokens,
        ledger.nbytes,
        ledger.data,
        list(ledger.results()),
        sorted(ledger.unseen),
        ledger.unanswered_calls(),
        sorted(ledger.offload_names()),
        [(m.role, m.tokens, m.nbytes, [replace(p) for p in m.parts]) for m in ledger.messages],
    ]


def full(host: FakeHost) -> list[object]:
    ledger = Ledger()
    ledger.sync(host, METER, never)
    return snapshot(ledger)


edits = st.lists(
    st.tuples(
        st.sampled_from(
            ["append", "grow", "tool", "swap", "equal", "bigger", "drop", "insert", "new_list"]
        ),
        st.integers(0, 10_000),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_parts_replaced_anywhere_are_seen_at_the_next_sync(ops: list[tuple[str, int]]) -> None:
    """Another middleware replaces, drops or inserts parts of any message in place (same
    message id, same or another number of parts); the next sync after
    ``expect_outside_edits`` holds what a ledger built from scratch holds."""
    host = FakeHost([user("hello")])
    ledger = Ledger()
    ledger.sync(host, METER, never)
    for step, (op, n) in enumerate(ops):
        target = host.messages[n % len(host.messages)] if host.messages else None
        spot = n % len(target.parts) if target and target.parts else None
        if op == "append":
            host.messages.append(user(f"message {n} " + "x" * (n % 50)))
        elif op == "grow" and host.messages:
            host.messages[-1].parts.append(text(f"more {n}"))
        elif op == "tool":
            output = "out " * (n % 30) + f" in {n % 5:032x}.txt"
            host.messages.append(FakeMessage("assistant", [call(f"c{n}"), result(f"c{n}", output)]))
        elif op == "swap" and target and spot is not None:  # same count, another part
            saved = f" saved to tool_result/{n % 7:032x}.txt" if n % 3 else ""
            target.parts[spot] = result(f"c{n}", "swapped " * (n % 40) + saved, unseen=n % 2 == 0)
        elif op == "equal" and target and spot is not None:  # an equal copy: nothing changed
            target.parts[spot] = replace(target.parts[spot], meta=dict(target.parts[spot].meta))
        elif op == "bigger" and target and spot is not None and target.parts[spot].call_id:
            old = target.parts[spot]
            target.parts[spot] = result(old.call_id or "", "bigger " * 200)
        elif op == "drop" and target and target.parts:
            del target.parts[n % len(target.parts)]
        elif op == "insert" and target:
            target.parts.insert(n % (len(target.parts) + 1), call(f"i{n}"))
        elif op == "new_list":
            host.messages = list(host.messages)
        if step % 3 == 0:
            ledger.sync(host, METER, never)  # a sync in between that looks at the tail only
        ledger.expect_outside_edits()
        ledger.sync(host, METER, never)
        assert snapshot(ledger) == full(host)


def test_only_the_replaced_part_is_counted_again() -> None:
    host = FakeHost([user(f"request {n}") for n in range(40)])
    host.messages.append(FakeMessage("assistant", [call("c1"), result("c1", "short output")]))
    host.messages.extend(user(f"later {n}") for n in range(40))
    meter = CountingMeter()
    ledger = Ledger()
    ledger.sync(host, meter, never)
    ledger.settled = len(ledger.results())  # stage 2 was done with every result
    meter.counted.clear()
    host.messages[40].parts[1] = result("c1", "a much longer output " * 100)  # same count
    ledger.sync(host, meter, never)
    assert meter.counted == [], "the tail only: an old message is not compared"
    ledger.expect_outside_edits()
    ledger.sync(host, meter, never)
    assert meter.counted == ["tool " + "a much longer output " * 100]
    assert snapshot(ledger) == full(host)
    assert ledger.settled == 0, "stage 2 looks at the replaced result again"
    meter.counted.clear()
    ledger.expect_outside_edits()
    ledger.sync(host, meter, never)
    assert meter.counted == [], "nothing changed since"


def test_messages_kept_by_a_compaction_are_not_counted_again() -> None:
    """After a commit the kept tail only moved: its entries are reused, not counted again;
    a message whose blocks are other objects now is counted again."""
    host = FakeHost([user(f"request {n} " + "x" * n) for n in range(30)])
    host.messages.append(FakeMessage("assistant", [call("c1"), result("c1", "out " * 40)]))
    meter = CountingMeter()
    ledger = Ledger()
    ledger.sync(host, meter, never)
    meter.counted.clear()
    host.messages = host.messages[25:]  # the first 25 compacted away
    host.messages[1] = user("request 26, another object now")
    ledger.expect_outside_edits()
    ledger.sync(host, meter, never)
    assert meter.counted == ["request 26, another object now"]
    assert snapshot(ledger) == full(host)


def test_a_host_without_part_objects_still_works() -> None:
    """A host that does not name its parts: messages that grew or shrank are viewed again."""

    class CountOnly(FakeHost):
        def part_objects(self, start: int = 0) -> None:
            return None

    host = CountOnly([user("a"), FakeMessage("assistant", [call("c1"), result("c1", "x")])])
    ledger = Ledger()
    ledger.sync(host, METER, never)
    host.messages[-1].parts.append(text("more"))
    ledger.expect_outside_edits()
    ledger.sync(host, METER, never)
    assert snapshot(ledger) == full(host)
    host.messages[0].parts.append(text("b"))
    host.messages = list(host.messages)  # another container: every message is compared
    ledger.sync(host, METER, never)
    assert snapshot(ledger) == full(host)


def test_a_replaced_result_is_cut_again_whatever_its_entry_says() -> None:
    """A host that keeps the entry apart from the block (1.x: in the message's metadata, by
    call id) hands the replacement the old entry: its cut limit is not taken over."""
    host = FakeHost([user("a"), FakeMessage("assistant", [call("c1"), result("c1", "x")])])
    host.messages.append(user("b"))
    ledger = Ledger()
    ledger.sync(host, METER, never)
    host.messages[1].parts[1] = result("c1", "much bigger " * 500, pruned_to=3000)
    ledger.expect_outside_edits()
    ledger.sync(host, METER, never)
    assert ledger.messages[1].parts[1].pruned_to is None
    assert ledger.messages[1].parts[1].tokens == full_entry(host, 1, 1).tokens


def full_entry(host: FakeHost, index: int, part: int) -> PartEntry:
    ledger = Ledger()
    ledger.sync(host, METER, never)
    return ledger.messages[index].parts[part]
