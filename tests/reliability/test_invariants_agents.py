"""Guarantee 1 (real agents): random sessions of real agents with scripted models keep every
invariant at every model call and after every turn, windows 2,000-200,000."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler

WINDOWS = (2000, 2000, 2500, 4000, 8000, 32000, 200_000)  # tiny windows twice as often
_SIZES = (0, 40, 2000, 12_000, 60_000, 200_000)

actions = st.builds(
    Action,
    sizes=st.lists(st.sampled_from(_SIZES), min_size=0, max_size=4).map(tuple),
    cjk=st.booleans(),
    reuse_ids=st.booleans(),
    thinking=st.sampled_from((0, 0, 200, 3000)),
)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    command = draw(st.sampled_from(["", "", "", "", "", "", "/compact", "/clear"]))
    if command:
        return Turn(command)
    size = draw(st.sampled_from((20, 200, 3000, 20_000)))
    request = f"request {draw(st.integers(0, 10**6))}: " + filler(size, size, draw(st.booleans()))
    pinned = size <= 200 and draw(st.integers(0, 5)) == 0
    return Turn(request, tuple(draw(st.lists(actions, max_size=4))), pinned)


sessions = st.fixed_dictionaries(
    {
        "window": st.sampled_from(WINDOWS),
        "compactor": st.sampled_from(("extractive", "llm")),
        "turns": st.lists(turns(), min_size=1, max_size=6),
    }
)

TOTALS = {
    "sessions": 0,
    "turns": 0,
    "model_calls": 0,
    "max_input_ratio": 0.0,
    "lost": 0,
    "duplicated": 0,
    "invalid_inputs": 0,
    "over_window": 0,
}


async def run_session(driver: HostDriver, workspace: Path, spec: dict[str, object]) -> AgentSession:
    session = AgentSession(
        driver, workspace, window=int(str(spec["window"])), compactor=str(spec["compactor"])
    )
    await session.start()
    for turn in spec["turns"]:  # type: ignore[attr-defined]
        await session.run(turn)
    return session


@settings(
    max_examples=scaled(25, 600),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(spec=sessions)
def test_random_agent_sessions_keep_every_invariant(
    driver: HostDriver, spec: dict[str, object]
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        session = asyncio.run(run_session(driver, Path(directory), spec))
    assert session.figures.steps >= 1
    target(session.figures.max_input_ratio, label="model input / window")
    TOTALS["sessions"] += 1
    TOTALS["turns"] += session.figures.steps
    TOTALS["model_calls"] += session.figures.model_calls
    for counted in ("lost", "duplicated", "invalid_inputs", "over_window"):
        TOTALS[counted] += getattr(session.figures, counted)
    TOTALS["max_input_ratio"] = max(TOTALS["max_input_ratio"], session.figures.max_input_ratio)


def test_zz_agent_session_figures(driver: HostDriver) -> None:
    """Reports what the property test above tried with ``driver`` (runs after it in file
    order)."""
    assert TOTALS["sessions"] >= 1, "the property test did not run first"
    broken = {k: TOTALS[k] for k in ("lost", "duplicated", "invalid_inputs", "over_window")}
    assert not any(broken.values()), f"the property test met broken invariants: {broken}"
    record("invariants_agents", **TOTALS)
