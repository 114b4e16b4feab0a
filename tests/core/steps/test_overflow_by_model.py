"""What an overflow error teaches is kept per model (the agent's own and its fallback
model): bounded, readable from a state saved before the keys, and never broken by a
hand-edited one. The real-agent side is tests/reliability/test_fallback_model.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from copaw_context.core.context.state import MAX_OVERFLOW_MODELS, SessionState

PRIMARY = "OpenAIChatModel:gpt:32000"


def view(data: dict[str, Any], key: str) -> SessionState:
    return SessionState(data, model_key=key, primary_key=PRIMARY)


def test_a_fallbacks_figures_leave_the_primarys_alone() -> None:
    data: dict[str, Any] = {}
    fallback = view(data, "OllamaChatModel:local:4000")
    fallback.overflow_evidence = fallback.overflow_factor = 8.0
    assert view(data, PRIMARY).overflow_factor == 1.0
    assert "overflow_factor" not in data  # what versions before the keys read
    view(data, PRIMARY).overflow_factor = 1.5
    assert data["overflow_factor"] == 1.5 and fallback.overflow_factor == 8.0


def test_a_state_saved_before_the_keys_is_the_primarys() -> None:
    data: dict[str, Any] = {"overflow_factor": 2.0, "overflow_evidence": 2.0}
    assert view(data, PRIMARY).overflow_factor == 2.0
    assert view(data, "OllamaChatModel:local:4000").overflow_factor == 1.0
    view(data, "OllamaChatModel:local:4000").overflow_factor = 3.0
    assert view(data, PRIMARY).overflow_evidence == 2.0
    assert data["overflow_factor"] == 2.0  # still readable by the version before
    assert SessionState(data).overflow_factor == 2.0  # an unkeyed host: one set, as before


def test_the_figures_kept_stay_bounded_and_keep_the_primary() -> None:
    data: dict[str, Any] = {}
    view(data, PRIMARY).overflow_factor = 1.5
    for n in range(3 * MAX_OVERFLOW_MODELS):
        view(data, f"Local:m{n}:{1000 + n}").overflow_factor = 2.0
    models = data["overflow_by_model"]
    assert len(models) == MAX_OVERFLOW_MODELS and PRIMARY in models
    assert f"Local:m{3 * MAX_OVERFLOW_MODELS - 1}:{1000 + 3 * MAX_OVERFLOW_MODELS - 1}" in models
    json.dumps(data)


def test_forgetting_the_conversation_drops_every_models_figures() -> None:
    data: dict[str, Any] = {}
    view(data, PRIMARY).overflow_factor = 1.5
    view(data, "Local:m:4000").overflow_factor = 4.0
    view(data, PRIMARY).forget_conversation()
    assert not {"overflow_factor", "overflow_by_model"} & set(data)
    assert view(data, "Local:m:4000").overflow_factor == 1.0


@pytest.mark.parametrize(
    "saved", [7, "x", [], {"Local:m:4000": 5}, {"Local:m:4000": {"factor": 10**400}}], ids=repr
)
def test_a_hostile_saved_entry_reads_as_a_number_from_1_to_8(saved: Any) -> None:
    data: dict[str, Any] = {"overflow_by_model": saved}
    state = view(data, "Local:m:4000")
    assert 1.0 <= state.overflow_factor <= 8.0
    state.overflow_factor = 2.0  # and writing over it works
    assert state.overflow_factor == 2.0
