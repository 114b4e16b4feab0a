"""check-config as a newcomer reads it (issue 22, item 5): values spelled as JSON, the key the
file changed named in a cross-field error, a warning for limits that cannot fit the window,
and only the settings of the chosen backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from copaw_context.cli import main


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str, str]:
    path = tmp_path / "agent.json"
    path.write_text(text, encoding="utf-8")
    status = main(["check-config", str(path)])
    out, err = capsys.readouterr()
    return status, out, err


def running(**keys: Any) -> str:
    return json.dumps({"running": keys})


def test_a_non_finite_number_is_shown_as_the_file_spells_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = check(tmp_path, capsys, '{"running": {"max_input_length": NaN}}')
    assert status == 2 and out == ""
    assert "running.max_input_length" in err and "got NaN;" in err
    assert "nan" not in err


def test_values_in_the_summary_are_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = running(memory_manager_backend="x", memory={"summariser_model": "qwen"})
    status, out, _ = check(tmp_path, capsys, text)
    assert status == 0
    assert 'memory_manager_backend "x" is not supported' in out
    assert 'summariser_model "qwen" is ignored' in out
    for python in ("None", "True", "False", "'x'", "'qwen'", "nan"):
        assert python not in out


@pytest.mark.parametrize(
    ("section", "changed", "value", "other"),
    [
        ("context_compact_config", "compact_threshold_ratio", 0.1, "reserve_threshold_ratio"),
        (
            "tool_result_pruning_config",
            "pruning_old_msg_max_bytes",
            60000,
            "pruning_recent_msg_max_bytes",
        ),
    ],
)
def test_a_cross_field_error_names_the_key_the_file_changed_first(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    section: str,
    changed: str,
    value: float,
    other: str,
) -> None:
    text = running(light_context_config={section: {changed: value}})
    status, out, err = check(tmp_path, capsys, text)
    assert status == 2 and out == ""
    (line,) = err.splitlines()
    prefix = f"copaw-context: error: running.light_context_config.{section}.{changed} in "
    assert line.startswith(prefix)
    assert f"got {value}, which conflicts with {other}" in line
    assert "its default" in line and f"change {changed} or set {other} too" in line


def test_both_keys_set_keeps_the_rule_of_the_checked_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compact = {"compact_threshold_ratio": 0.2, "reserve_threshold_ratio": 0.2}
    text = running(light_context_config={"context_compact_config": compact})
    status, _, err = check(tmp_path, capsys, text)
    assert status == 2
    assert "reserve_threshold_ratio in " in err and "got 0.2; must be" in err
    assert "below compact_threshold_ratio (0.2)" in err


def test_a_recent_limit_over_the_window_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = check(tmp_path, capsys, running(max_input_length=8000))
    assert status == 0 and "valid" in out
    warnings = [line for line in err.splitlines() if "WARNING" in line]
    assert len(warnings) == 2
    assert "pruning_recent_msg_max_bytes is 50000 bytes, about 12500 tokens" in warnings[0]
    assert "more than the 8000-token window" in warnings[0]
    assert "exempt_recent_max_bytes is 102400 bytes" in warnings[1]


def test_limits_that_fit_are_not_warned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pruning = {"pruning_recent_msg_max_bytes": 8000, "exempt_recent_max_bytes": 8000}
    text = running(
        max_input_length=8000, light_context_config={"tool_result_pruning_config": pruning}
    )
    status, _, err = check(tmp_path, capsys, text)
    assert status == 0 and err == ""


def test_native_shows_only_what_applies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = check(tmp_path, capsys, running(context_manager_backend="native"))
    assert status == 0 and err == ""
    assert "native: AgentScope's built-in compression stays in charge" in out
    for light_only in (
        "compact at",
        "compactor ",
        "tool results ",
        "context_compact_config.",
        "compactor_timeout_seconds",
        "token_counter",
        "offload_retention_days",
    ):
        assert light_only not in out, light_only
    assert "running.light_context_config.extra_read_roots" in out  # read_file still applies
    assert "running.memory.search_max_results" in out
    assert 'apply only with context_manager_backend "light"' in out.splitlines()[-1]


def test_light_shows_the_compaction_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = check(tmp_path, capsys, running())
    assert status == 0
    assert "compact at" in out and "context_compact_config.compact_threshold_ratio" in out
    assert "not shown" not in out
