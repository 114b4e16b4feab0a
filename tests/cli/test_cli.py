"""The copaw-context command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from copaw_context import __version__
from copaw_context.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


def test_check_config_summarises_a_valid_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(CONFIGS / "agent.seed-example.json")]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "valid" in out.splitlines()[0]
    assert "light: copaw-context replaces AgentScope's built-in compression" in out
    assert "128000 tokens (max_input_length, set in the file)" in out
    assert "compact at 102400 tokens (0.8 x 128000); keep newest 12800 tokens (0.1 x 128000)" in out
    assert "newest 2 tool results keep 50000 bytes, older ones 3000 bytes" in out
    assert ".md files, tool chat_with_agent: 102400 bytes recent, 12000 bytes old" in out
    assert "tool_result/ (files kept 5 days)" in out
    assert "dialog/" in out
    assert "auto: chosen from the model name" in out
    assert "llm, timeout 120 s, 1 retry" in out


def test_check_config_says_when_the_window_is_the_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check-config", str(CONFIGS / "agent.minimal.json")]) == 0
    out = capsys.readouterr().out
    assert "131072 tokens by default; max_input_length is not set" in out
    assert "compact at 104857 tokens (0.8 x 131072); keep newest 13107 tokens (0.1 x 131072)" in out


def test_check_config_shows_switched_off_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.json"
    light = {
        "compactor": "extractive",
        "compactor_retries": 0,
        "language": "zh",
        "token_counter": "o200k_base",
        "extra_read_roots": ["/srv/docs"],
        "context_compact_config": {"enabled": False},
        "tool_result_pruning_config": {"enabled": False, "exempt_tool_names": []},
    }
    backend = {"context_manager_backend": "light", "light_context_config": light}
    path.write_text(json.dumps({"running": backend}), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "compaction      off" in out
    assert "tool results    off" in out
    assert "extractive, timeout 120 s, 0 retries" in out
    assert "o200k_base tokenizer" in out
    assert "language        zh" in out
    assert "workspace, /srv/docs" in out


def test_check_config_accepts_raised_qwenpaw_limits_and_shows_effective_exempt_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qwenpaw = json.loads((CONFIGS / "agent.qwenpaw.json").read_text(encoding="utf-8"))
    pruning = qwenpaw["running"]["light_context_config"]["tool_result_pruning_config"]
    pruning.update(pruning_recent_msg_max_bytes=200000, pruning_old_msg_max_bytes=20000)
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(qwenpaw), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "newest 2 tool results keep 200000 bytes, older ones 20000 bytes" in out
    assert ".md files, tool chat_with_agent: 200000 bytes recent, 20000 bytes old" in out


def test_check_config_rejects_an_invalid_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.json"
    compact = {"compact_threshold_ratio": 0.2, "reserve_threshold_ratio": 0.2}
    path.write_text(
        json.dumps({"running": {"light_context_config": {"context_compact_config": compact}}}),
        encoding="utf-8",
    )
    assert main(["check-config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "copaw-context: error: running.light_context_config.context_compact_config."
        f"reserve_threshold_ratio in {path}: got 0.2; must be a number between 0 and 0.3 "
        "and below compact_threshold_ratio (0.2)\n"
    )


def test_check_config_reports_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_unknown_keys_are_warned_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.json"
    light = {"strategy": "scroll", "show_stauts": True}  # QwenPaw 2.x's key, and a typo
    path.write_text(json.dumps({"running": {"light_context_config": light}}))
    assert main(["check-config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "valid" in out
    assert "copaw-context: WARNING:" in err
    assert "running.light_context_config.show_stauts (did you mean show_status?)" in err
    (unknown,) = [line for line in err.splitlines() if "does not know" in line]
    assert "light_context_config.strategy" not in unknown  # known: QwenPaw 2.x's own key


def test_version_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"copaw-context {__version__}\n"
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().err
    assert main(["check-config"]) == 2
    assert "PATH" in capsys.readouterr().err


def test_installed_console_script_checks_the_seed_example() -> None:
    script = Path(sys.executable).with_name("copaw-context")
    result = subprocess.run(
        [str(script), "check-config", "configs/agent.seed-example.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "compact at 102400 tokens (0.8 x 128000)" in result.stdout


def test_module_entry_point_exits_2_on_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text('{"running": {"max_input_length": 10}}', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "copaw_context.cli", "check-config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "running.max_input_length" in result.stderr and "got 10" in result.stderr


def _schema_leaves(schema: dict[str, Any], name: str, prefix: str) -> list[str]:
    """Dotted paths of every leaf setting, from the committed JSON Schema (not the models)."""
    leaves = []
    for key, node in schema["$defs"][name]["properties"].items():
        ref = node.get("$ref") or next(
            (n["$ref"] for n in node.get("allOf", []) + node.get("anyOf", []) if "$ref" in n), None
        )
        if ref:
            leaves += _schema_leaves(schema, ref.rsplit("/", 1)[1], f"{prefix}{key}.")
        else:
            leaves.append(f"{prefix}{key}")
    return leaves


def test_check_config_shows_every_setting_and_the_effective_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every setting of the schema is printed with its value and whether the file sets it;
    the breaker, the memory model's window and the window-bounded MEMORY.md share too."""
    schema = json.loads((ROOT / "configs" / "agent-json.schema.json").read_text("utf-8"))
    leaves = _schema_leaves(schema, "RunningConfig", "running.")
    assert len(leaves) > 40 and "running.memory.model_max_input_length" in leaves
    path = tmp_path / "agent.json"
    running = {
        "max_input_length": 4000,
        "light_context_config": {
            "compactor_failure_limit": 2,
            "compactor_pause_max_compactions": 5,
        },
        "memory": {"model_max_input_length": 1000},
    }
    path.write_text(json.dumps({"running": running}), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    out = capsys.readouterr().out
    printed = {}
    for line in out.splitlines():
        flag, _, rest = line.strip().partition("running.")
        if line.startswith("    ") and " = " in rest:
            key, _, value = rest.partition(" = ")
            printed[f"running.{key}"] = (flag.strip() == "*", value)
    assert sorted(printed) == sorted(leaves)
    assert printed["running.light_context_config.compactor_failure_limit"] == (True, "2")
    assert printed["running.memory.model_max_input_length"] == (True, "1000")
    assert printed["running.memory.memory_prompt_max_bytes"] == (False, "16000")
    assert printed["running.light_context_config.show_status"] == (False, "false")
    assert "after 2 failed compaction(s) in a row, extractive for 2" in out
    assert "doubling up to 5" in out
    assert "memory model    window 1000 tokens (memory.model_max_input_length;" in out
    assert f"request up to {int(1000 * 0.6)} tokens" in out
    assert f"up to {4000 * 2 // 5} bytes of MEMORY.md (memory_prompt_max_bytes 16000" in out


@pytest.mark.parametrize(
    ("light", "shown"),
    [
        ({"compactor_retries": True}, "got true;"),
        ({"show_status": None}, "got null;"),
        ({"language": "fr"}, 'got "fr";'),
        ({"extra_read_roots": "notes"}, 'got "notes";'),
    ],
)
def test_config_errors_show_values_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], light: dict[str, Any], shown: str
) -> None:
    """The value in an error is spelled as in the file (``true``, ``null``, ``"fr"``)."""
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"running": {"light_context_config": light}}), encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"running.light_context_config.{next(iter(light))} in {path}: {shown}" in err, err
