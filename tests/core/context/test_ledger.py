"""The ledger's incremental state always equals a ledger built from scratch (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.context.ledger import Ledger, TokenMeter
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
    st.sampled_from(["append", "grow", "replace", "pop", "tool", "new_list", "noop"]),
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
        ledger.sync(host, METER, never)
        expected = fresh_totals(host)
        assert (ledger.tokens, ledger.nbytes, ledger.data, list(ledger.results())) == expected
        assert len(ledger.messages) == len(host.messages)
