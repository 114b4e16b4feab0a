"""The running.memory section, QwenPaw's memory keys, and check-config's memory rows."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from copaw_context.cli import main
from copaw_context.core.config.running import (
    MemoryConfig,
    RunningConfig,
    load_running_config,
    parse_running_config,
    running_config_json_schema,
)
from copaw_context.core.errors import ConfigError

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def running(**keys: Any) -> dict[str, Any]:
    return {"running": keys}


def test_defaults() -> None:
    memory = RunningConfig().memory
    assert memory == MemoryConfig()
    assert (memory.enabled, memory.memory_dir, memory.summarise_on_compact) == (
        True,
        "memory",
        True,
    )
    assert (memory.consolidation_cron, memory.consolidate_days) == ("0 0 * * *", 7)
    assert (memory.memory_prompt_max_bytes, memory.search_max_results) == (16000, 5)
    assert memory.summariser_model is None and memory.from_qwenpaw == {}


def test_qwenpaw_agent_json_carries_its_memory_settings_over(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        config = load_running_config(CONFIGS / "agent.qwenpaw.json")
    assert caplog.records == []
    memory = config.memory
    assert memory.consolidation_cron == "0 23 * * *"
    assert memory.search_max_results == 2
    assert memory.memory_dir == "memory" and memory.summarise_on_compact is True
    assert memory.from_qwenpaw["consolidation_cron"] == "reme_light_memory_config.dream_cron"
    assert memory.from_qwenpaw["memory_dir"] == "daily_memory_dir"


def test_qwenpaw_keys_map_and_our_section_wins(caplog: pytest.LogCaptureFixture) -> None:
    reme = {
        "summarize_when_compact": False,
        "dream_cron": "30 2 * * 1",
        "auto_memory_search_config": {"max_results": 9},
    }
    config = parse_running_config(
        running(daily_memory_dir="notes/daily", reme_light_memory_config=reme)
    )
    memory = config.memory
    assert memory.memory_dir == "notes/daily"
    assert memory.summarise_on_compact is False
    assert memory.consolidation_cron == "30 2 * * 1"
    assert memory.search_max_results == 9
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        both = parse_running_config(
            running(daily_memory_dir="daily", memory={"memory_dir": "mine"})
        )
    assert both.memory.memory_dir == "mine" and both.memory.from_qwenpaw == {}
    overridden = 'running.daily_memory_dir ("daily") is overridden by running.memory.memory_dir'
    assert f'{overridden} ("mine")' in caplog.text


def test_unsupported_qwenpaw_settings_are_reported(caplog: pytest.LogCaptureFixture) -> None:
    reme = {
        "auto_memory_interval": 5,
        "embedding_model_config": {"model": "text-embedding-v4"},
        "auto_memory_search_config": {"enabled": True, "min_score": 0.5},
    }
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        config = parse_running_config(
            running(
                memory_manager_backend="adbpg",
                reme_light_memory_config=reme,
                memory={"search_max_result": 3},
            ),
            "a.json",
        )
    text = caplog.text
    assert config.memory.search_max_results == 5
    assert 'memory_manager_backend is "adbpg"' in text
    assert "running.reme_light_memory_config.embedding_model_config" in text
    assert "auto_memory_interval is not implemented" in text
    assert "auto_memory_search_config.enabled is not implemented" in text
    assert "running.memory.search_max_result (did you mean search_max_results?)" in text
    assert all(record.getMessage().startswith("a.json: ") for record in caplog.records)


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        (
            running(memory={"consolidation_cron": "61 0 * * *"}),
            "running.memory.consolidation_cron",
            "cron",
        ),
        (
            running(memory={"consolidation_cron": "  "}),
            "running.memory.consolidation_cron",
            "empty",
        ),
        (
            running(reme_light_memory_config={"dream_cron": "every night"}),
            "running.reme_light_memory_config.dream_cron",
            "cron",
        ),
        (running(daily_memory_dir="../up"), "running.daily_memory_dir", '".."'),
        (running(memory={"memory_dir": "/abs"}), "running.memory.memory_dir", "absolute"),
        (
            running(memory={"search_max_results": 0}),
            "running.memory.search_max_results",
            "1 and 50",
        ),
        (
            running(memory={"memory_prompt_max_bytes": 100}),
            "running.memory.memory_prompt_max_bytes",
            "2000",
        ),
        (running(memory={"enabled": "yes"}), "running.memory.enabled", "true or false"),
        (running(memory=[]), "running.memory", "JSON object"),
        (
            running(reme_light_memory_config={"auto_memory_search_config": {"max_results": 99}}),
            "running.reme_light_memory_config.auto_memory_search_config.max_results",
            "between 1 and 50",
        ),
    ],
)
def test_bad_memory_values_name_their_own_path(data: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_running_config(data)
    assert caught.value.path == path
    assert words in caught.value.allowed
    assert "more problem" not in caught.value.allowed  # a QwenPaw value is reported once


def test_cron_is_normalised_and_schema_knows_the_section() -> None:
    config = parse_running_config(running(memory={"consolidation_cron": " 0  3 * * * "}))
    assert config.memory.consolidation_cron == "0 3 * * *"
    schema = running_config_json_schema()
    properties = schema["$defs"]["RunningConfig"]["properties"]
    assert {"memory", "daily_memory_dir", "reme_light_memory_config"} <= set(properties)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(running(memory={"search_max_results": 3}))) == []
    assert list(validator.iter_errors(running(memory={"search_max_results": 0}))) != []


def test_check_config_prints_the_effective_memory_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(CONFIGS / "agent.qwenpaw.json")]) == 0
    out = capsys.readouterr().out
    assert "memory          MEMORY.md (or legacy Memory.md) and memory/YYYY-MM-DD.md" in out
    assert 'cron "0 23 * * *" (local time)' in out
    assert "(from running.reme_light_memory_config.dream_cron)" in out
    assert "up to 2 results" in out
    assert "memory prompt   up to 16000 bytes of MEMORY.md" in out
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(running(memory={"enabled": False})), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    assert "memory          off" in capsys.readouterr().out
    path.write_text(json.dumps(running(memory={"summarise_on_compact": False})), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    assert "memory summary  off" in capsys.readouterr().out


def test_summariser_model_is_deprecated_and_check_config_says_what_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Found from outside: the setting was never read, yet check-config showed it as the
    summariser's model."""
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(running(memory={"summariser_model": "qwen-turbo"})), "utf-8")
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        assert main(["check-config", str(path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "memory summary" in line)
    assert "model: the compactor's (the hook's compactor_model=, else the agent's own)" in row
    assert 'summariser_model "qwen-turbo" is ignored (deprecated)' in row
    assert "close() waits up to 30 s" in row
    assert "running.memory.summariser_model is deprecated and ignored" in caplog.text
    assert "pass it to the hook as compactor_model=" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        load_running_config(CONFIGS / "agent.qwenpaw.json")
    assert "summariser_model" not in caplog.text  # not set: no warning
