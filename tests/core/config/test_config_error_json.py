"""A hook built with a bad agent.json raises a ConfigError worded like check-config's error
(issue 22 item 5, core side): values spelled as JSON (NaN, "x", null, true), and a rule
between two keys names the key the file set first, with the default it conflicts with. The
existing content of each message (what is allowed, typo hints) stays."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.errors import ConfigError, json_text

LIGHT = "running.light_context_config"


def _hook_error(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "agent.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        MemoryCompactionHook.from_agent_json(path, workspace_dir=tmp_path / "ws")
    return caught.value


@pytest.mark.parametrize(
    ("value", "shown", "python"),
    [
        ("NaN", "NaN", "nan"),
        ('"x"', '"x"', "'x'"),
        ("null", "null", "None"),
        ("true", "true", "True"),
        ("[1, false]", "[1, false]", "False"),
    ],
)
def test_the_value_is_spelled_as_json(tmp_path: Path, value: str, shown: str, python: str) -> None:
    error = _hook_error(tmp_path, '{"running": {"max_input_length": ' + value + "}}")
    message = str(error)
    assert message.startswith(f"running.max_input_length in {tmp_path / 'agent.json'}: ")
    assert f"got {shown}; must be a whole number" in message
    assert python not in message.replace("a whole number", "")


def test_a_cross_field_error_names_the_key_the_file_set(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "running": {
                "light_context_config": {"context_compact_config": {"compact_threshold_ratio": 0.1}}
            }
        }
    )
    error = _hook_error(tmp_path, text)
    key = f"{LIGHT}.context_compact_config.compact_threshold_ratio"
    assert error.conflict == (key, 0.1)
    assert str(error).startswith(f"{key} in {tmp_path / 'agent.json'}: got 0.1, which conflicts ")
    assert (
        "with reserve_threshold_ratio (0.1, its default): reserve_threshold_ratio must be"
        in str(error)
    )
    assert str(error).endswith("change compact_threshold_ratio or set reserve_threshold_ratio too")
    assert error.path == f"{LIGHT}.context_compact_config.reserve_threshold_ratio"  # the rule's key


def test_the_cache_and_dialog_rule_names_the_dialog_path_the_file_set() -> None:
    data = {"running": {"light_context_config": {"dialog_path": "tool_result/archive"}}}
    with pytest.raises(ConfigError) as caught:
        parse_running_config(data)
    message = str(caught.value)
    assert message.startswith(f'{LIGHT}.dialog_path: got "tool_result/archive", which conflicts')
    assert (
        'with tool_results_cache ("tool_result", its default): tool_results_cache must not be '
        in (message)
    )
    assert 'dialog_path ("tool_result/archive"), inside it or around it' in message
    assert message.endswith("change dialog_path or set tool_results_cache too")


def test_both_keys_set_keep_the_rule_of_the_checked_key() -> None:
    both = {"dialog_path": "same", "tool_result_pruning_config": {"tool_results_cache": "same"}}
    with pytest.raises(ConfigError) as caught:
        parse_running_config({"running": {"light_context_config": both}})
    assert caught.value.conflict is None
    assert str(caught.value).startswith(
        f'{LIGHT}.tool_result_pruning_config.tool_results_cache: got "same"; must not be '
        'dialog_path ("same")'
    )


def test_typo_hints_and_rules_stay(caplog: pytest.LogCaptureFixture) -> None:
    data: dict[str, Any] = {"running": {"light_context_config": {"compactor": "LLM"}}}
    with pytest.raises(ConfigError) as caught:
        parse_running_config(data)
    assert str(caught.value) == (
        f'{LIGHT}.compactor: got "LLM"; must be "llm" or "extractive" (case-sensitive). '
        + str(caught.value).split("(case-sensitive). ", 1)[1]
    )
    parse_running_config({"running": {"light_context_config": {"compactr": "llm"}}})
    assert f"{LIGHT}.compactr (did you mean compactor?)" in caplog.text


def test_warnings_spell_values_as_json(caplog: pytest.LogCaptureFixture) -> None:
    parse_running_config({"running": {"memory_manager_backend": "adbpg"}})
    assert 'memory_manager_backend is "adbpg"' in caplog.text


def test_json_text_never_spells_python() -> None:
    assert [json_text(v) for v in (math.nan, math.inf, -math.inf, None, True, "x", 1.5)] == [
        "NaN",
        "Infinity",
        "-Infinity",
        "null",
        "true",
        '"x"',
        "1.5",
    ]
