"""``copaw-context.json`` beside agent.json (issue 19 item 3): our settings that QwenPaw's
rewrite of agent.json drops live there, merged over agent.json; errors name the file that set
the bad value; QwenPaw 2.x's own keys are known."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from copaw_context.cli import main
from copaw_context.core.config.files import OVERLAY_NAME, merge_over
from copaw_context.core.config.running import load_running_config
from copaw_context.core.errors import ConfigError

QWENPAW_AGENT_JSON = {
    "id": "default",
    "name": "Default Agent",
    "language": "en",
    "running": {
        "max_iters": 100,
        "max_input_length": 32000,
        "context_manager_backend": "light",
        "light_context_config": {
            "dialog_path": "dialog",
            "context_compact_config": {"compact_threshold_ratio": 0.8},
            "tool_result_pruning_config": {"pruning_recent_n": 2},
        },
    },
}


def write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_the_file_beside_is_merged_over_agent_json(tmp_path: Path) -> None:
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    overlay = {
        "running": {
            "light_context_config": {
                "compactor": "extractive",
                "show_status": False,
                "context_compact_config": {"reserve_threshold_ratio": 0.2},
            },
            "memory": {"enabled": False},
        }
    }
    write(tmp_path, OVERLAY_NAME, overlay)
    config = load_running_config(agent)
    light = config.light_context_config
    assert light.compactor == "extractive"
    assert light.show_status is False
    assert config.memory.enabled is False
    # merged key by key: agent.json's neighbours of an overlay key stay
    assert light.context_compact_config.reserve_threshold_ratio == 0.2
    assert light.context_compact_config.compact_threshold_ratio == 0.8
    assert light.tool_result_pruning_config.pruning_recent_n == 2
    assert config.max_input_length == 32000
    assert load_running_config(agent, beside=False).light_context_config.compactor != "extractive"


def test_settings_survive_qwenpaw_rewriting_agent_json(tmp_path: Path) -> None:
    """QwenPaw's save_agent_config writes back only its own keys: ours beside it stay."""
    write(
        tmp_path, OVERLAY_NAME, {"running": {"light_context_config": {"compactor": "extractive"}}}
    )
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    before = load_running_config(agent)
    rewritten = json.loads(json.dumps(QWENPAW_AGENT_JSON))
    rewritten["running"]["max_iters"] = 50  # QwenPaw saved a change of its own
    write(tmp_path, "agent.json", rewritten)
    after = load_running_config(agent)
    assert before.light_context_config.compactor == after.light_context_config.compactor
    assert after.light_context_config.compactor == "extractive"


def test_the_nested_docs_shape_merges_too(tmp_path: Path) -> None:
    agent = write(tmp_path, "agent.json", {"agents": {"running": {"max_input_length": 9000}}})
    write(
        tmp_path, OVERLAY_NAME, {"running": {"light_context_config": {"compactor": "extractive"}}}
    )
    config = load_running_config(agent)
    assert config.max_input_length == 9000
    assert config.light_context_config.compactor == "extractive"


def test_a_bad_value_names_the_file_that_set_it(tmp_path: Path) -> None:
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    overlay = write(
        tmp_path, OVERLAY_NAME, {"running": {"light_context_config": {"compactor": "gpt"}}}
    )
    with pytest.raises(ConfigError) as raised:
        load_running_config(agent)
    assert raised.value.source == str(overlay)
    assert raised.value.path == "running.light_context_config.compactor"
    assert f"in {overlay}" in str(raised.value)

    bad_agent = json.loads(json.dumps(QWENPAW_AGENT_JSON))
    bad_agent["running"]["max_input_length"] = -5
    write(tmp_path, "agent.json", bad_agent)
    write(
        tmp_path, OVERLAY_NAME, {"running": {"light_context_config": {"compactor": "extractive"}}}
    )
    with pytest.raises(ConfigError) as raised:
        load_running_config(agent)
    assert raised.value.source == str(agent)
    assert raised.value.path == "running.max_input_length"


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ('{"light_context_config": {}}', "(top level)", 'must be {"running": {...}}'),
        ('{"running": 3}', "running", "must be a JSON object"),
        ('{"running": {}, "agents": {}}', "(top level)", 'must be {"running": {...}}'),
        ('{"running": {', "line 1 column 14", "is not valid JSON"),
        ('{"running": {"a": 1, "a": 2}}', "JSON key", "appears twice"),
        ("   ", f"{OVERLAY_NAME} file", "is empty"),
        ("[1, 2]", "(top level)", 'must be {"running": {...}}'),
    ],
)
def test_a_bad_file_beside_gets_a_clear_error(
    tmp_path: Path, text: str, path: str, words: str
) -> None:
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    overlay = write(tmp_path, OVERLAY_NAME, text)
    with pytest.raises(ConfigError) as raised:
        load_running_config(agent)
    assert raised.value.path == path
    assert words in str(raised.value)
    assert str(overlay) in str(raised.value)


def test_an_empty_running_object_changes_nothing(tmp_path: Path) -> None:
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    write(tmp_path, OVERLAY_NAME, {"running": {}})
    assert load_running_config(agent) == load_running_config(agent, beside=False)


def test_merge_replaces_lists_and_merges_objects() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_over(base, {"a": {"c": [3]}, "e": {"f": 1}}) == {
        "a": {"b": 1, "c": [3]},
        "d": 1,
        "e": {"f": 1},
    }
    assert merge_over(base, {"a": 5}) == {"a": 5, "d": 1}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}  # not changed in place


def test_qwenpaw_2_keys_are_known_and_typos_still_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = json.loads(json.dumps(QWENPAW_AGENT_JSON))
    data["running"]["light_context_config"].update(
        {"strategy": "native", "scroll_config": {"x": 1}, "visual_compact_config": {}}
    )
    agent = write(tmp_path, "agent.json", data)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        load_running_config(agent)
    assert not [r for r in caplog.records if "does not know" in r.getMessage()]
    data["running"]["light_context_config"]["stratgy"] = "native"
    write(tmp_path, "agent.json", data)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        load_running_config(agent)
    (warning,) = [r.getMessage() for r in caplog.records if "does not know" in r.getMessage()]
    assert "light_context_config.stratgy" in warning
    assert "strategy" not in warning.replace("stratgy", "")


def test_check_config_shows_where_each_value_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    overlay = write(
        tmp_path, OVERLAY_NAME, {"running": {"light_context_config": {"compactor": "extractive"}}}
    )
    assert main(["check-config", str(agent)]) == 0
    out = capsys.readouterr().out
    assert f"merged with {overlay} (its values win)" in out
    assert f"+ = set in {OVERLAY_NAME}" in out
    assert '    + running.light_context_config.compactor = "extractive"' in out
    assert "    * running.max_input_length = 32000" in out
    assert "      running.light_context_config.token_counter = " in out


def test_check_config_names_the_file_beside_in_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = write(tmp_path, "agent.json", QWENPAW_AGENT_JSON)
    overlay = write(
        tmp_path, OVERLAY_NAME, {"running": {"light_context_config": {"show_status": "yes"}}}
    )
    assert main(["check-config", str(agent)]) == 2
    err = capsys.readouterr().err
    assert f"running.light_context_config.show_status in {overlay}" in err
