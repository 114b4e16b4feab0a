"""Long sessions of a real agent (the peers2 round's long-conversation probe; no single peer
suite has it): random tool outputs (0-200 KB, CJK, parallel calls, reused ids, thinking),
/compact and restarts from saved state on the way. Every model input fits the window counted
with o200k_base, is valid (paired) for OpenAI, Anthropic and DashScope and holds the latest
request; after every turn every part is in the context or the archive exactly once. The
reliability suite's property test draws sessions of at most 6 turns; here 2 sessions of
16-20 turns run in the suite (5 of 100-110 under ``COPAW_SOAK=1``, and in
``scripts/ported_full_runs.py``, which prints the counted figures)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler
from tests.reliability.invariants import StepFigures

_SIZES = (0, 40, 600, 2000, 9000, 40_000, 200_000)

actions = st.builds(
    Action,
    sizes=st.lists(st.sampled_from(_SIZES), min_size=1, max_size=5).map(tuple),
    cjk=st.booleans(),
    reuse_ids=st.sampled_from((False, False, False, True)),
    thinking=st.sampled_from((0, 0, 0, 300, 4000)),
)


@st.composite
def turn(draw: st.DrawFn) -> Turn | str:
    kind = draw(st.sampled_from(["ask"] * 14 + ["/compact", "restart"]))
    if kind != "ask":
        return kind if kind == "restart" else Turn(kind)
    size = draw(st.sampled_from((20, 200, 1500, 6000)))
    text = f"request {draw(st.integers(0, 10**6))}: " + filler(size, size, draw(st.booleans()))
    return Turn(text, tuple(draw(st.lists(actions, min_size=2, max_size=6))))


def sessions(min_turns: int, max_turns: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "window": st.sampled_from((3000, 8000, 32_000)),
            "compactor": st.sampled_from(("extractive", "llm")),
            "turns": st.lists(turn(), min_size=min_turns, max_size=max_turns),
        }
    )


def long_sessions(examples: int, min_turns: int, max_turns: int) -> Callable[..., Any]:
    """Wrap a test of one drawn session spec in the long-session settings."""
    return lambda test: settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
            HealthCheck.large_base_example,
        ],
    )(given(spec=sessions(min_turns, max_turns))(test))


async def _run(driver: HostDriver, workspace: Path, spec: dict[str, Any]) -> AgentSession:
    session = AgentSession(driver, workspace, window=spec["window"], compactor=spec["compactor"])
    await session.start()
    for step in spec["turns"]:
        if step == "restart":
            await session.restart()
        else:
            await session.run(step)
    return session


def check_long_session(driver: HostDriver, spec: dict[str, Any]) -> StepFigures:
    """Run ``spec``; fail on any broken invariant; the session's counted figures."""
    with tempfile.TemporaryDirectory() as directory:
        session = asyncio.run(_run(driver, Path(directory), spec))
    figures = session.figures
    asks = [t for t in spec["turns"] if isinstance(t, Turn) and t.actions]
    assert figures.model_calls >= sum(len(t.actions) + 1 for t in asks)  # every step was checked
    assert not session.problems, session.problems[:3]
    assert (figures.over_window, figures.invalid_inputs, figures.lost) == (0, 0, 0)
    assert figures.duplicated == 0
    return figures


@long_sessions(scaled(2, 5), scaled(16, 100), scaled(20, 110))
def test_long_random_sessions_keep_every_invariant(
    driver: HostDriver, spec: dict[str, Any]
) -> None:
    figures = check_long_session(driver, spec)
    record(
        "ported_long_sessions",
        window=spec["window"],
        compactor=spec["compactor"],
        turns=len(spec["turns"]),
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        invalid_inputs=figures.invalid_inputs,
        lost=figures.lost,
        duplicated=figures.duplicated,
    )
