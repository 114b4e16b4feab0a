"""Guarantee 1 (engine): random sessions through the ContextEngine and a fake host keep every
invariant after every step (see tests/reliability/invariants.py), windows 2,000-200,000."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings, target
from hypothesis import strategies as st

from tests.reliability.budget import record, scaled
from tests.reliability.engine_session import EngineSession, Op

WINDOWS = (2000, 2000, 2500, 3000, 4000, 8000, 32000, 200_000)  # tiny windows twice as often
_RESULT_SIZES = (0, 12, 200, 1500, 6000, 30_000, 120_000)

ops = st.one_of(
    st.builds(
        Op,
        kind=st.just("user"),
        size=st.sampled_from((5, 80, 600, 4000, 20_000)),
        cjk=st.booleans(),
    ),
    st.builds(
        Op,
        kind=st.just("tools"),
        size=st.sampled_from(_RESULT_SIZES),
        count=st.integers(1, 5),
        cjk=st.booleans(),
    ),
    st.builds(
        Op,
        kind=st.just("pending"),
        size=st.sampled_from(_RESULT_SIZES),
        count=st.integers(1, 3),
    ),
    st.builds(Op, kind=st.just("text"), size=st.sampled_from((8, 300, 3000)), cjk=st.booleans()),
    st.builds(Op, kind=st.just("thinking"), size=st.sampled_from((50, 2000)), sent=st.booleans()),
    st.sampled_from([Op("pin"), Op("compact"), Op("clear"), Op("new")]),
)

sessions = st.fixed_dictionaries(
    {
        "window": st.sampled_from(WINDOWS),
        "compactor": st.sampled_from(("extractive", "llm")),
        "reuse_ids": st.booleans(),
        "recent_n": st.integers(1, 3),
        "ops": st.lists(ops, min_size=1, max_size=24),
    }
)

TOTALS = {
    "sessions": 0,
    "steps": 0,
    "model_calls": 0,
    "max_input_ratio": 0.0,
    "lost": 0,
    "duplicated": 0,
    "invalid_inputs": 0,
    "over_window": 0,
}


async def run_session(workspace: Path, spec: dict[str, object]) -> EngineSession:
    session = EngineSession(
        workspace,
        window=int(str(spec["window"])),
        compactor=str(spec["compactor"]),
        reuse_ids=bool(spec["reuse_ids"]),
        recent_n=int(str(spec["recent_n"])),
    )
    await session.apply(Op("user", size=60))
    for op in spec["ops"]:  # type: ignore[attr-defined]
        await session.apply(op)
    return session


@settings(
    max_examples=scaled(60, 1500),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sessions)
@example(  # a request over the reserve and four fresh results in a 2,000-token window
    {
        "window": 2000,
        "compactor": "extractive",
        "reuse_ids": False,
        "recent_n": 1,
        "ops": [Op("user", size=4000), Op("tools", size=1500, count=4)],
    }
)
@example(  # found by the soak: a CJK summary and five small fresh results in 2,000 tokens
    {
        "window": 2000,
        "compactor": "extractive",
        "reuse_ids": False,
        "recent_n": 1,
        "ops": [
            Op("user", size=4000, cjk=True),
            Op("text", size=3000),
            Op("user", size=5),
            Op("tools", size=1500, count=5),
        ],
    }
)
@example(  # found by the random run: results in a pinned answer; one message per result
    {
        "window": 2000,
        "compactor": "extractive",
        "reuse_ids": False,
        "recent_n": 1,
        "ops": [
            Op("text", size=8),
            Op("pin", sent=True),
            Op("pending", size=1500, count=3),
            Op("user", size=5),
            Op("user", size=5),
            Op("user", size=4000, cjk=True),
            Op("tools", size=0, count=5),
        ],
    }
)
@example(  # found by the random run: a pinned answer first, no room for the summary
    {
        "window": 2000,
        "compactor": "extractive",
        "reuse_ids": False,
        "recent_n": 1,
        "ops": [
            Op("text", size=8),
            Op("pin", sent=True),
            Op("pending", size=0, count=1),
            Op("pending", size=1500, count=3),
            Op("thinking", size=2000, sent=True),
            Op("user", size=5),
        ],
    }
)
def test_random_engine_sessions_keep_every_invariant(spec: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        session = asyncio.run(run_session(Path(directory), spec))
    figures = session.figures
    target(figures.max_input_ratio, label="model input / window")
    assert figures.steps >= 1
    TOTALS["sessions"] += 1
    TOTALS["steps"] += figures.steps
    TOTALS["model_calls"] += figures.model_calls
    for counted in ("lost", "duplicated", "invalid_inputs", "over_window"):
        TOTALS[counted] += getattr(figures, counted)
    TOTALS["max_input_ratio"] = max(TOTALS["max_input_ratio"], figures.max_input_ratio)


def test_zz_engine_session_figures() -> None:
    """Reports what the property test above tried (runs after it in file order)."""
    assert TOTALS["sessions"] >= 1, "the property test did not run first"
    broken = {k: TOTALS[k] for k in ("lost", "duplicated", "invalid_inputs", "over_window")}
    assert not any(broken.values()), f"the property test met broken invariants: {broken}"
    record("invariants_engine", **TOTALS)
