"""Pairing faults already in a host's own history (its memory, a saved session; not via
``/load_history``, which refuses them) never reach the provider, on either major.

Seeded into the agent's context: a result before its call, a result three turns from its
call, parallel calls whose results interleave with a later call, two open calls with one id,
a result given twice, an orphan result, ReMe's user-role results (1.x), and a call left
without a result at the end (the run was killed during the tool call and the session saved,
then resumed from the saved state). In a window where nothing is compacted (32K) and one
where compaction runs (3K), with and without ``/compact``: every model input is valid for
OpenAI, Anthropic and DashScope (``openai_pairing_problems`` among them) and within the
window, nothing of the history is lost (every block in the context or the archive), and
each repair is logged once.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.host_history import SHAPES, abandoned_calls, history, seed
from tests.reliability.invariants import StepFigures, archived_keys, check_model_input

_ASKS = 3


async def _run(
    driver: HostDriver, ws: Path, shape: str, window: int, command: str, *, restart: bool
) -> dict[str, Any]:
    problems: list[str] = []
    figures = StepFigures()

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        try:
            check_model_input(
                formatted, driver.tool_schemas(call), window, figures, unique_ids=False
            )
        except AssertionError as error:
            problems.append(str(error)[:500])
        return driver.text_step("ok")

    hook = driver.hook(agent_config(window, "extractive"), ws)
    agent = await driver.agent(hook, driver.model([answer] * 8, context_size=window), [])
    await seed(agent, history(shape))
    if restart:  # the process was killed during the tool run; the saved session resumes
        saved = driver.save_state(agent)
        hook = driver.hook(agent_config(window, "extractive"), ws)
        agent = await driver.agent(hook, driver.model([answer] * 8, context_size=window), [])
        await driver.load_state(agent, saved)
    created = Counter(driver.context_keys(agent))
    replies = []
    for i in range(_ASKS):
        replies.append(await driver.ask(agent, f"now {i}"))
        if command and i == 0:
            await driver.ask(agent, command)
        pending = (await driver.engine_state(hook, agent)).get("pending_archive") or []
        _check_kept(
            Counter(driver.context_keys(agent)) + archived_keys(ws / "dialog", pending),
            created,
            figures,
        )
    await hook.close()
    return {"replies": replies, "problems": problems, "figures": figures}


def _check_kept(found: Counter[str], created: Counter[str], figures: StepFigures) -> None:
    """Every seeded block in the context or the archive, as often as it was seeded (two
    calls with one id in one message share a key)."""
    lost = [k for k, n in created.items() if found[k] < n]
    twice = [k for k, n in created.items() if found[k] > n]
    figures.lost += len(lost)
    figures.duplicated += len(twice)
    assert not lost, f"in neither the context nor the archive: {lost[:5]}"
    assert not twice, f"in the context and the archive, or twice: {twice[:5]}"


@pytest.mark.parametrize("window", [3000, 32000])
@pytest.mark.parametrize("command", ["", "/compact"])
@pytest.mark.parametrize("shape", SHAPES)
def test_host_history_faults_never_reach_the_provider(
    driver: HostDriver, shape: str, command: str, window: int
) -> None:
    with tempfile.TemporaryDirectory() as name:
        out = asyncio.run(
            _run(driver, Path(name), shape, window, command, restart=shape == "dangling_last")
        )
    figures: StepFigures = out["figures"]
    record(
        f"host history fault: {shape}",
        driver=driver.name,
        window=window,
        command=command or "auto",
        model_calls=figures.model_calls,
        invalid_inputs=figures.invalid_inputs,
        over_window=figures.over_window,
        lost=figures.lost,
        max_input_ratio=round(figures.max_input_ratio, 3),
    )
    assert out["replies"] == ["ok"] * _ASKS
    assert figures.model_calls >= _ASKS
    assert not out["problems"], out["problems"][:2]


def test_each_repair_is_logged_once(driver: HostDriver, caplog: pytest.LogCaptureFixture) -> None:
    """An orphan result and a call left without a result, in a window where nothing is
    compacted: three model calls repair both, each repair logged once."""
    messages = history("orphan_first")[:-1] + history("dangling_last", turns=1)
    with tempfile.TemporaryDirectory() as name, caplog.at_level(logging.WARNING, "copaw_context"):
        out = asyncio.run(_run_seeded(driver, Path(name), messages))
    said = [r.getMessage() for r in caplog.records if "every provider" in r.getMessage()]
    assert out["problems"] == []
    assert len(said) == 1, "one warning, at the first input"
    assert said[0].count("'ghost' with no call") == 1, said
    assert said[0].count("call 't0_a' has no result and the turn moved on") == 1, said
    assert out["calls"] == _ASKS


async def _run_seeded(
    driver: HostDriver, ws: Path, messages: list[Any], window: int = 32000
) -> dict[str, Any]:
    problems: list[str] = []
    figures = StepFigures()

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        try:
            check_model_input(formatted, driver.tool_schemas(call), window, figures)
        except AssertionError as error:
            problems.append(str(error)[:500])
        return driver.text_step("ok")

    hook = driver.hook(agent_config(window, "extractive"), ws)
    agent = await driver.agent(hook, driver.model([answer] * 4, context_size=window), [])
    await seed(agent, messages)
    for i in range(_ASKS):
        await driver.ask(agent, f"now {i}")
    await hook.close()
    return {
        "problems": problems,
        "calls": figures.model_calls,
        "over_window": figures.over_window,
        "ratio": figures.max_input_ratio,
    }


@pytest.mark.parametrize("pad", [1200, 1500])
def test_many_abandoned_calls_fit_the_window(driver: HostDriver, pad: int) -> None:
    """Thirty calls a host left without results, below the compaction threshold as stored:
    their synthetic results count, so the input that answers them still fits the window."""
    with tempfile.TemporaryDirectory() as name:
        out = asyncio.run(_run_seeded(driver, Path(name), abandoned_calls(30, pad), window=3000))
    record(
        "host history fault: 30 abandoned calls",
        driver=driver.name,
        pad=pad,
        model_calls=out["calls"],
        over_window=out["over_window"],
        max_input_ratio=round(out["ratio"], 3),
    )
    assert out["problems"] == []
    assert out["calls"] == _ASKS
