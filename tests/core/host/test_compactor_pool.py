"""The compactor agents' pool and the streamed progress (moved from the 2.x summariser),
checked without a host."""

from __future__ import annotations

from copaw_context.core.host.compactor_pool import AgentPool, ProgressTally


def test_pool_builds_only_when_none_is_idle() -> None:
    made: list[object] = []

    def build() -> object:
        made.append(object())
        return made[-1]

    pool = AgentPool(build)
    first, second = pool.take(), pool.take()  # overlapping requests: two agents
    assert first is not second and pool.built == 2
    pool.give(first)
    assert pool.take() is first and pool.built == 2  # the idle one is reused


def test_an_agent_not_given_back_is_never_reused() -> None:
    pool = AgentPool(object)
    cancelled = pool.take()  # its reply did not finish: never given back
    assert pool.take() is not cancelled and pool.built == 2


def test_progress_reports_the_characters_received_so_far() -> None:
    seen: list[int] = []
    tally = ProgressTally(seen.append)
    for delta in ("abc", None, "", "de"):
        tally.add(delta)
    assert seen == [3, 3, 3, 5] and tally.received == 5
    ProgressTally(None).add("quiet")  # no callback: nothing to report
