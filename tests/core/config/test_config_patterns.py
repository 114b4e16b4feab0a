"""The JSON Schema's string patterns and the loader's validators are one rule each (issue 18
item 5): the workspace-directory pattern is built from the validator's refusals and the
extension validator reads the schema's pattern, so a file the schema accepts loads."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.config.running import (
    ConfigError,
    parse_running_config,
    running_config_json_schema,
)

PRUNING = "running.light_context_config.tool_result_pruning_config"


def _properties(section: str) -> dict[str, Any]:
    properties: dict[str, Any] = running_config_json_schema()["$defs"][section]["properties"]
    return properties


def _loads(running: dict[str, Any]) -> bool:
    try:
        parse_running_config({"running": running})
    except ConfigError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab./\\: C\t\n\x01\x1f\u2028\u00a0", max_size=8))
def test_memory_dir_pattern_and_loader_agree(value: str) -> None:
    pattern = _properties("MemoryConfig")["memory_dir"]["pattern"]
    assert _loads({"memory": {"memory_dir": value}}) == bool(re.search(pattern, value)), value


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="md./\\ \nX", max_size=6))
def test_extension_pattern_and_loader_agree(value: str) -> None:
    pattern = _properties("ToolResultPruningConfig")["exempt_file_extensions"]["items"]["pattern"]
    light = {"tool_result_pruning_config": {"exempt_file_extensions": [value]}}
    assert _loads({"light_context_config": light}) == bool(re.search(pattern, value)), value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (" \t", "it is empty"),
        ("a\x01b", "control characters are not allowed"),
        ("/abs", "absolute paths are not allowed"),
        ("D:dir", "absolute paths are not allowed"),
        ("a/../b", '".." would leave the workspace'),
        ("././/", "it names the workspace itself"),
    ],
)
def test_each_refusal_keeps_its_reason(value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_running_config({"running": {"daily_memory_dir": value}})
    assert caught.value.path == "running.daily_memory_dir"
    assert caught.value.allowed == (
        f'must be a directory relative to the workspace, such as "dialog"; {reason}'
    )


def test_extensions_are_lowercased_after_the_pattern_accepts_them() -> None:
    light = {"tool_result_pruning_config": {"exempt_file_extensions": [".MD", ".Txt", "md"]}}
    with pytest.raises(ConfigError) as caught:
        parse_running_config({"running": {"light_context_config": light}})
    assert caught.value.path == f"{PRUNING}.exempt_file_extensions[2]"
    assert caught.value.allowed.startswith('each item must be a file extension starting with "."')
    light["tool_result_pruning_config"]["exempt_file_extensions"].pop()
    config = parse_running_config({"running": {"light_context_config": light}})
    pruning = config.light_context_config.tool_result_pruning_config
    assert pruning.exempt_file_extensions == [".md", ".txt"]
