"""Ports LangChain's orphan ToolMessage / AI-message-with-several-calls cases and ReMe's
history layout as seeded host histories (three calls in one message with their results in
reverse order, a result whose call is missing, a call that never got its result): after
compaction every model input is paired for every provider and within the window, on
either major."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ported.kit import assistant, call, play, result, results, text, user
from tests.reliability.drivers import HostDriver


def _history(shape: str, turns: int = 6) -> list[Any]:
    history: list[Any] = []
    for t in range(turns):
        history.append(user(f"request {t} " + "ctx " * 50))
        ids = [f"c{t}_{k}" for k in range(3)]
        if shape == "multi":  # one message with 3 calls, results in reverse order after it
            history.append(assistant([text("checking"), *map(call, ids)]))
            history.append(results([result(i) for i in reversed(ids)]))
        elif shape == "orphan" and t == 1:  # a result whose call is missing
            history.append(results([result(ids[0])]))
        elif shape == "dangling" and t == 1:  # a call that never got its result
            history.append(assistant([call(ids[0])]))
        else:
            history.append(assistant([call(ids[0])]))
            history.append(results([result(ids[0])]))
        history.append(assistant([text(f"answer {t} " + "ok " * 50)]))
    return history


@pytest.mark.parametrize("shape", ["multi", "orphan", "dangling"])
def test_seeded_history_paired_after_compaction(
    driver: HostDriver, tmp_path: Path, shape: str
) -> None:
    turns = [(f"now {i}", [("text", "ok")]) for i in range(3)]
    run = play(driver, tmp_path, 3000, turns, history=_history(shape))
    assert run.replies == ["ok"] * 3
    assert not run.problems, run.problems
