"""One overflow error does not shrink the window for good (issue 17 item 3), on both majors.

A real agent's scripted model rejects one call as too long; the factor the engine learns is
only what the error's figures support (a modest step when it has none, the input figure of
OpenAI's ``max_tokens`` wording rather than its total), successful calls take a guess back,
and ``/clear`` resets what was learned.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.provider_wordings import HttpError

WINDOW = 16_000
QUESTION = "Summarise the release plan: " + " ".join(
    f"step {i} ships module m{i}." for i in range(400)
)
LATER = 12


def _factor(state: Any) -> float:
    return float(state.get("overflow_factor", 1.0))


async def _session(driver: HostDriver, workspace: Path, error: Exception) -> dict[str, Any]:
    hook = driver.hook(agent_config(WINDOW, "extractive"), workspace)
    steps = [error, driver.text_step("planned")]
    steps += [driver.text_step(f"fine {i}") for i in range(LATER)]
    steps += [
        error,
        driver.text_step("again"),
        driver.text_step("after"),
    ]
    model = driver.model(steps, context_size=WINDOW)
    agent = await driver.agent(hook, model)
    replies = [await driver.ask(agent, QUESTION)]
    state = await driver.engine_state(hook, agent)
    sent, learned = int(state["last_prompt_tokens"]), _factor(state)
    factors = []
    for i in range(LATER):
        replies.append(await driver.ask(agent, f"and item {i}?"))
        factors.append(_factor(await driver.engine_state(hook, agent)))
    replies.append(await driver.ask(agent, QUESTION))
    before_clear = _factor(await driver.engine_state(hook, agent))
    replies.append(await driver.ask(agent, "/clear"))
    replies.append(await driver.ask(agent, "hello again"))
    after_clear = _factor(await driver.engine_state(hook, agent))
    return {
        "sent": sent,
        "learned": learned,
        "factors": factors,
        "before_clear": before_clear,
        "after_clear": after_clear,
        "replies": replies,
    }


def _run(driver: HostDriver, error: Exception) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        return asyncio.run(_session(driver, Path(name), error))


def test_an_overflow_without_figures_is_a_modest_step_taken_back(driver: HostDriver) -> None:
    error = HttpError("the input length exceeds the context length", status_code=400)
    run = _run(driver, error)
    assert run["replies"][0] == "planned" and run["replies"][-1] == "after"
    assert 1.0 < run["learned"] <= 1.5, f"one error without figures set x{run['learned']}"
    falling = sum(1 for a, b in zip(run["factors"], run["factors"][1:], strict=False) if b < a)
    assert run["factors"][-1] == 1.0, f"successes left x{run['factors'][-1]}"
    assert run["after_clear"] == 1.0, f"/clear kept x{run['after_clear']}"
    record(
        "overflow_without_figures",
        learned=run["learned"],
        successes=len(run["factors"]),
        falling_steps=falling,
        after_successes=run["factors"][-1],
        after_clear=run["after_clear"],
    )


def test_the_max_tokens_wording_is_read_as_its_input_figure(driver: HostDriver) -> None:
    """OpenAI's "you requested N tokens (M in the messages, K in the completion)": M input
    tokens, fewer than our own count here, so our count is not multiplied at all. (The
    completion's share is below the window: one that fills it is no overflow at all.)"""
    error = HttpError(
        "This model's maximum context length is 16000 tokens. However, you requested 16500 "
        "tokens (1000 in the messages, 15500 in the completion). Please reduce the length of "
        "the messages or completion.",
        status_code=400,
    )
    run = _run(driver, error)
    assert run["sent"] > 1000, "the test needs our count above the stated input"
    assert run["replies"][0] == "planned"
    assert run["learned"] == 1.0, f"x{run['learned']} learned from an input of 1,000 tokens"
    record("overflow_max_tokens_wording", sent=run["sent"], learned=run["learned"])


def test_a_figure_backed_factor_is_reset_by_clear(driver: HostDriver) -> None:
    error = HttpError("prompt is too long: 40000 tokens > 16000 maximum", status_code=400)
    run = _run(driver, error)
    assert run["replies"][0] == "planned" and run["replies"][-1] == "after"
    assert run["learned"] > 1.0 and run["before_clear"] > 1.0
    assert run["after_clear"] == 1.0, f"/clear kept x{run['after_clear']}"
    record(
        "overflow_factor_clear",
        sent=run["sent"],
        learned=run["learned"],
        before_clear=run["before_clear"],
        after_clear=run["after_clear"],
    )
