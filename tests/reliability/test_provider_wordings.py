"""The provider wording table: every provider's "input too long" error is recognised, its
input figure and limit read, and it reaches overflow recovery through a real agent of either
major (the reply is not killed); rate-limit and quota errors, and look-alikes no compaction
fixes (max_tokens alone over the window or the output cap, a string over its bound, a
moderation refusal), are not taken for overflows: a real agent raises them unretried.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from copaw_context.core.events import ContextEvent
from copaw_context.core.steps.overflow import is_context_overflow, overflow_figures
from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.provider_wordings import RATE_LIMITS, HttpError
from tests.reliability.provider_wordings import WORDINGS as CLOUD_WORDINGS
from tests.reliability.provider_wordings_more import LOOK_ALIKES, MORE_WORDINGS

WINDOW = 16_000
WORDINGS = CLOUD_WORDINGS + MORE_WORDINGS


def test_every_provider_wording_is_recognised_with_its_figures() -> None:
    missed = [w.provider for w in WORDINGS if not is_context_overflow(w.make())]
    wrong = [
        (w.provider, overflow_figures(w.make()), (w.sent, w.limit))
        for w in WORDINGS
        if overflow_figures(w.make()) != (w.sent, w.limit)
    ]
    taken = [name for name, make in RATE_LIMITS if is_context_overflow(make())]
    alike = [name for name, make in LOOK_ALIKES if is_context_overflow(make())]
    record(
        "provider_wordings",
        wordings=len(WORDINGS),
        providers=len({w.provider.split()[0] for w in WORDINGS}),
        recognised=len(WORDINGS) - len(missed),
        figures_read=len(WORDINGS) - len(wrong),
        rate_limits=len(RATE_LIMITS),
        rate_limits_taken=len(taken),
        look_alikes=len(LOOK_ALIKES),
        look_alikes_taken=len(alike),
    )
    assert not missed, f"not recognised: {missed}"
    assert not wrong, f"figures misread (provider, read, stated): {wrong}"
    assert not taken, f"rate limits taken for overflows: {taken}"
    assert not alike, f"look-alikes taken for overflows: {alike}"


async def _answers_after(driver: HostDriver, workspace: Path, error: Exception) -> tuple[str, int]:
    events: list[ContextEvent] = []
    hook = driver.hook(agent_config(WINDOW, "extractive"), workspace, on_event=events.append)
    model = driver.model([error, driver.text_step("answered")], context_size=WINDOW)
    agent = await driver.agent(hook, model)
    try:
        reply = await driver.ask(agent, "what is the status of the build?")
    except Exception as killed:  # the reply died with the provider's error
        reply = f"killed: {type(killed).__name__}"
    recoveries = sum(1 for e in events if e.kind == "overflow_recovery")
    return reply, recoveries


def test_every_wording_is_recovered_by_a_real_agent(driver: HostDriver) -> None:
    replies: dict[str, Any] = {}
    recovered = 0
    for wording in WORDINGS:
        with tempfile.TemporaryDirectory() as name:
            reply, recoveries = asyncio.run(_answers_after(driver, Path(name), wording.make()))
        replies[wording.provider] = reply
        recovered += reply == "answered" and recoveries == 1
    record("provider_wordings_agent", wordings=len(WORDINGS), recovered=recovered)
    killed = {p: r for p, r in replies.items() if r != "answered"}
    assert not killed, f"replies killed or wrong: {killed}"
    assert recovered == len(WORDINGS)


async def _raised_unretried(driver: HostDriver, workspace: Path, error: Exception) -> bool:
    """Whether the agent's reply raised ``error`` itself after one model call, no recovery."""
    events: list[ContextEvent] = []
    hook = driver.hook(agent_config(WINDOW, "extractive"), workspace, on_event=events.append)
    model = driver.model([error, driver.text_step("answered")], context_size=WINDOW)
    agent = await driver.agent(hook, model)
    try:
        await driver.ask(agent, "what is the status of the build?")
    except Exception as raised:
        chain = {id(raised), id(raised.__cause__), id(raised.__context__)}
        recovered = any(e.kind == "overflow_recovery" for e in events)
        return id(error) in chain and not recovered and model.remaining == 1
    return False


def test_look_alikes_are_raised_unretried_by_a_real_agent(driver: HostDriver) -> None:
    retried = []
    for name, make in LOOK_ALIKES:
        with tempfile.TemporaryDirectory() as folder:
            if not asyncio.run(_raised_unretried(driver, Path(folder), make())):
                retried.append(name)
    record(
        "provider_look_alikes_agent",
        look_alikes=len(LOOK_ALIKES),
        raised_unretried=len(LOOK_ALIKES) - len(retried),
    )
    assert not retried, f"compacted and retried, or not raised as it was: {retried}"


def test_a_long_run_of_digits_is_no_figure_and_no_overflow() -> None:
    """An error echoing a long run of digits (token ids, a payload): no figure is read from
    its tail, and every pattern reads from the start of a run (one pass, not one per digit:
    the old patterns took seconds on 40,000 characters)."""
    run = "9," * 50_000 + "9"
    error = HttpError(
        f"bad request: {run} in the messages, {run} in the completion", status_code=400
    )
    assert overflow_figures(error) == (None, None)
    assert not is_context_overflow(error)
    sized = HttpError(
        f"{run} maximum context length is 8192 tokens, resulted in 9000 tokens", status_code=400
    )
    assert overflow_figures(sized) == (9000, 8192)
