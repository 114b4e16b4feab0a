"""agent.json read inside QwenPaw (our memory off, QwenPaw's memory keys quiet) and the
QwenPaw 2.x settings that leave copaw-context's middleware unused."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from copaw_context.core.config.files import OVERLAY_NAME
from copaw_context.core.config.inside_qwenpaw import (
    load_inside_qwenpaw,
    load_inside_qwenpaw_or_defaults,
    qwenpaw2_unused_reasons,
    qwenpaw2_warnings,
)


def test_read_inside_qwenpaw_memory_off_quietly_with_the_settings_beside_merged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "agent.json"
    assert load_inside_qwenpaw(path).memory.enabled is False  # no file: the defaults
    running = {
        "memory_manager_backend": "remelight",
        "reme_light_memory_config": {"embedding_model_config": {"model": "x"}},
        "light_context_config": {
            "strategy": "native",
            "tool_result_pruning_config": {"tool_results_cache": "tool_results"},
        },
    }
    path.write_text(json.dumps({"running": running}))
    overlay = {"running": {"light_context_config": {"compactor": "extractive"}}}
    (tmp_path / OVERLAY_NAME).write_text(json.dumps(overlay))
    with caplog.at_level(logging.INFO, logger="copaw_context"):
        config = load_inside_qwenpaw(path)
    assert caplog.records == []  # QwenPaw's memory keys are its memory manager's
    assert config.memory.enabled is False
    assert config.light_context_config.compactor == "extractive"  # from copaw-context.json
    pruning = config.light_context_config.tool_result_pruning_config
    assert pruning.tool_results_cache == "tool_results"  # QwenPaw's folder, from the file


def test_what_leaves_the_middleware_unused() -> None:
    assert qwenpaw2_unused_reasons("native", True) == ([], [])
    blocking, partial = qwenpaw2_unused_reasons("scroll", False, "native")
    assert [b.split(" is ")[0] for b in blocking] == [
        "running.light_context_config.strategy",
        "running.context_manager_backend",
    ]
    assert len(partial) == 1 and "context_compact_config.enabled is false" in partial[0]
    light = {"strategy": "native", "context_compact_config": {"enabled": False}}
    assert len(qwenpaw2_warnings({"running": {"light_context_config": light}}, "light")) == 1
    assert qwenpaw2_warnings({"running": {"light_context_config": {}}}, "light") == []
    assert qwenpaw2_warnings({"agents": {}}, "light") == []


def test_an_invalid_file_is_left_out_and_named(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    running = {"max_input_length": 30000, "light_context_config": {"compact_threshold": 0.5}}
    path.write_text(json.dumps({"running": running}), encoding="utf-8")
    config, error = load_inside_qwenpaw_or_defaults(path)
    assert error is None and config.max_input_length == 30000
    overlay = tmp_path / OVERLAY_NAME
    overlay.write_text('{"running": {"light_context_config": 5}}', encoding="utf-8")
    config, error = load_inside_qwenpaw_or_defaults(path)  # agent.json's settings still hold
    assert error is not None and str(overlay) in str(error) and "light_context_config" in str(error)
    assert config.max_input_length == 30000 and config.memory.enabled is False
    overlay.unlink()
    path.write_text(json.dumps({"running": {"max_input_length": "big"}}), encoding="utf-8")
    config, error = load_inside_qwenpaw_or_defaults(path)  # the defaults
    assert error is not None and "max_input_length" in str(error) and str(path) in str(error)
    assert not config.max_input_length_is_set and config.memory.enabled is False
    pruning = config.light_context_config.tool_result_pruning_config
    assert pruning.tool_results_cache == "tool_results"
