"""One map of QwenPaw's memory keys, and a config that is built, never changed (issue 18
item 5): every entry of ``QWENPAW_MEMORY_KEYS`` is inherited, named in ``from_qwenpaw`` and
reported when ``running.memory`` overrides it; no model is mutated after validation."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import ValidationError

from copaw_context.core.config.memory import QWENPAW_MEMORY_KEYS
from copaw_context.core.config.running import ConfigError, RunningConfig, parse_running_config

VALUES = {
    "memory_dir": ("notes/daily", "mine"),
    "summarise_on_compact": (False, True),
    "consolidation_cron": ("30 2 * * 1", "0 1 * * *"),
    "search_max_results": (9, 3),
}


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node: Any = value
    for step in reversed(path):
        node = {step: node}
    return dict(node)


def test_the_map_covers_every_inherited_key() -> None:
    assert sorted(key for _, key in QWENPAW_MEMORY_KEYS) == sorted(VALUES)


@pytest.mark.parametrize(("path", "key"), QWENPAW_MEMORY_KEYS)
def test_each_qwenpaw_key_is_inherited_and_named(path: tuple[str, ...], key: str) -> None:
    theirs, _ = VALUES[key]
    config = parse_running_config({"running": _nested(path, theirs)})
    assert getattr(config.memory, key) == theirs
    assert config.memory.from_qwenpaw == {key: ".".join(path)}
    assert key in config.memory.model_fields_set  # check-config marks it as set (*)
    direct = RunningConfig.model_validate(_nested(path, theirs))
    assert direct == config and direct.memory.from_qwenpaw == config.memory.from_qwenpaw


@pytest.mark.parametrize(("path", "key"), QWENPAW_MEMORY_KEYS)
def test_each_qwenpaw_key_yields_to_ours_with_a_warning(
    path: tuple[str, ...], key: str, caplog: pytest.LogCaptureFixture
) -> None:
    theirs, ours = VALUES[key]
    running = {**_nested(path, theirs), "memory": {key: ours}}
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        config = parse_running_config({"running": running})
    assert getattr(config.memory, key) == ours and config.memory.from_qwenpaw == {}
    assert f"running.{'.'.join(path)} " in caplog.text
    assert f"is overridden by running.memory.{key} " in caplog.text


def test_a_bad_qwenpaw_value_is_reported_once_where_the_file_has_it() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_running_config({"running": {"daily_memory_dir": "/abs"}})
    assert caught.value.path == "running.daily_memory_dir"
    assert "more problem" not in caught.value.allowed


def test_the_config_is_frozen_after_inheriting() -> None:
    config = RunningConfig.model_validate({"daily_memory_dir": "notes"})
    assert config.memory.memory_dir == "notes"
    with pytest.raises(ValidationError):
        config.memory = config.memory  # type: ignore[misc]
    with pytest.raises(ValidationError):
        config.memory.memory_dir = "x"  # type: ignore[misc]
    plain = RunningConfig()
    assert plain.memory.from_qwenpaw == {} and "memory" not in plain.model_fields_set
