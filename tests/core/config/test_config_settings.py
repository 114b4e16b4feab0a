"""The flat, resolved, frozen ``Settings`` view the steps read (issue 18 item 5)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig, Settings, parse_running_config
from copaw_context.core.context.step_context import StepContext


def _config() -> RunningConfig:
    running = {
        "max_input_length": 50000,
        "daily_memory_dir": "notes",
        "light_context_config": {
            "language": "zh",
            "compactor": "extractive",
            "context_compact_config": {"compact_threshold_ratio": 0.7},
            "tool_result_pruning_config": {"pruning_recent_msg_max_bytes": 200000},
            "extra_read_roots": ["/srv/docs"],
        },
    }
    return parse_running_config({"running": running})


def test_settings_are_the_resolved_values() -> None:
    settings = _config().settings()
    assert (settings.max_input_length, settings.max_input_length_is_set) == (50000, True)
    assert (settings.language, settings.compactor) == ("zh", "extractive")
    assert (settings.compact_threshold_ratio, settings.reserve_threshold_ratio) == (0.7, 0.1)
    # derived and inherited values, resolved
    assert (settings.exempt_recent_max_bytes, settings.exempt_old_max_bytes) == (200000, 12000)
    assert settings.memory_dir == "notes"
    assert settings.extra_read_roots == ("/srv/docs",) and settings.is_light


def test_settings_are_flat_and_frozen() -> None:
    settings = RunningConfig().settings()
    assert all(
        isinstance(getattr(settings, f.name), (bool, int, float, str, tuple, type(None)))
        for f in dataclasses.fields(Settings)
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.language = "zh"  # type: ignore[misc]
    assert hash(settings) == hash(RunningConfig().settings())


def test_every_setting_of_the_sections_reaches_settings() -> None:
    names = {f.name for f in dataclasses.fields(Settings)}
    config = RunningConfig()
    light = config.light_context_config
    leaves = {
        *type(light).model_fields,
        *type(light.context_compact_config).model_fields,
        *type(light.tool_result_pruning_config).model_fields,
        *type(light.store).model_fields,
        *type(config.memory).model_fields,
    } - {"context_compact_config", "tool_result_pruning_config", "store"}
    renamed = {
        "enabled": "compaction_enabled",  # also pruning_enabled, memory_enabled
        "close_timeout_seconds": "memory_close_timeout_seconds",
        "model_max_input_length": "memory_model_max_input_length",
        "dsn": "store_dsn",
    }
    deprecated = {"summariser_model"}
    assert {renamed.get(name, name) for name in leaves - deprecated} <= names
    assert {"pruning_enabled", "memory_enabled"} <= names


def test_the_step_context_exposes_them(tmp_path: Path) -> None:
    config = _config()
    assert StepContext(config, tmp_path).settings == config.settings()
