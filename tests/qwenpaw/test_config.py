"""agent.json as QwenPaw 1.1.12 writes it, read by copaw-context inside QwenPaw."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from copaw_context.qwenpaw.config import load_qwenpaw_config
from tests.qwenpaw.kit import QwenPawSite


def test_qwenpaws_own_agent_json_loads_quietly_with_our_memory_off(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    site = QwenPawSite(qwenpaw_home, "config", monkeypatch)
    path = site.workspace / "agent.json"
    with caplog.at_level(logging.INFO, logger="copaw_context"):
        config = load_qwenpaw_config(path)
    assert caplog.records == []  # QwenPaw's memory keys are its memory manager's
    assert config.memory.enabled is False
    pruning = config.light_context_config.tool_result_pruning_config
    assert pruning.tool_results_cache == "tool_results"  # QwenPaw's folder, from the file
    assert config.max_input_length == 131072 and config.max_input_length_is_set

    data = json.loads(path.read_text(encoding="utf-8"))
    data["running"]["light_context_config"]["compact_treshold"] = 0.5  # a typo still warns
    path.write_text(json.dumps(data), encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="copaw_context"):
        load_qwenpaw_config(path)
    assert ["compact_treshold" in r.getMessage() for r in caplog.records] == [True]


def test_the_offload_folder_is_qwenpaws_unless_the_file_names_one(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"running": {"light_context_config": {}}}), encoding="utf-8")
    pruning = load_qwenpaw_config(path).light_context_config.tool_result_pruning_config
    assert pruning.tool_results_cache == "tool_results"
    assert (
        load_qwenpaw_config(
            tmp_path / "none.json"
        ).light_context_config.tool_result_pruning_config.tool_results_cache
        == "tool_results"
    )
    named = {"tool_result_pruning_config": {"tool_results_cache": "saved_outputs"}}
    path.write_text(json.dumps({"running": {"light_context_config": named}}), encoding="utf-8")
    pruning = load_qwenpaw_config(path).light_context_config.tool_result_pruning_config
    assert pruning.tool_results_cache == "saved_outputs"
