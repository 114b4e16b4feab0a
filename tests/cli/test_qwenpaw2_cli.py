"""``copaw-context qwenpaw install --qwenpaw 2.2`` and ``check-config`` on a QwenPaw 2.2
agent.json (nothing here imports QwenPaw; tests/qwenpaw2/ loads the plugin into QwenPaw 2.2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import copaw_context
from copaw_context.cli import main
from copaw_context.cli.qwenpaw import PLUGIN_FILES, plugin_source


def _home(tmp_path: Path, light: dict[str, object]) -> Path:
    home = tmp_path / "qwenpaw-home"
    profiles = {}
    for agent_id, settings in (("native", {**light, "strategy": "native"}), ("default", light)):
        workspace = home / "workspaces" / agent_id
        workspace.mkdir(parents=True)
        agent = {"running": {"light_context_config": settings}}
        (workspace / "agent.json").write_text(json.dumps(agent))
        profiles[agent_id] = {"id": agent_id, "workspace_dir": str(workspace)}
    (home / "config.json").write_text(json.dumps({"agents": {"profiles": profiles}}))
    return home


def test_install_for_qwenpaw_2_says_what_each_agent_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = _home(tmp_path, {})
    assert main(["qwenpaw", "install", "--home", str(home), "--qwenpaw", "2.2"]) == 0
    out = capsys.readouterr().out
    target = home / "plugins" / "copaw-context"
    assert f"Installed the copaw-context plugin {copaw_context.__version__} in {target}" in out
    assert "  for QwenPaw 2.2 (--qwenpaw 2.2)" in out
    assert 'light_context_config.strategy "native"' in out and "Restart QwenPaw" in out
    assert "  agent native: strategy 'native' -> copaw-context" in out
    assert "  agent default: strategy 'scroll' -> QwenPaw's own" in out  # QwenPaw's default
    assert 'set it to "native" for copaw-context' in out
    manifest = json.loads((target / "plugin.json").read_text())
    shipped = json.loads((plugin_source("2.2") / "plugin.json").read_text())
    assert manifest == {**shipped, "version": copaw_context.__version__}
    assert manifest["min_version"] == "2.2.0" and manifest["meta"]["qwenpaw"] == "2.2"
    assert sorted(p.name for p in target.iterdir()) == sorted(PLUGIN_FILES)
    entry = (target / "plugin.py").read_text()
    assert "copaw_context.qwenpaw2.plugin_entry" in entry

    assert main(["qwenpaw", "status", "--home", str(home)]) in (0, 1)  # 1: no QwenPaw here
    out = capsys.readouterr().out
    assert "for        QwenPaw 2.2" in out
    assert "agent      native: strategy 'native' -> " in out

    # Installing for QwenPaw 1.1 replaces it (one plugin folder, either QwenPaw's).
    assert main(["qwenpaw", "install", "--home", str(home), "--qwenpaw", "1.1"]) == 0
    assert "  for QwenPaw 1.1 (--qwenpaw 1.1)" in capsys.readouterr().out
    manifest = json.loads((target / "plugin.json").read_text())
    assert manifest["min_version"] == "1.1.0" and "qwenpaw" not in manifest["meta"]


def test_install_refuses_an_unknown_qwenpaw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qwenpaw", "install", "--home", str(tmp_path), "--qwenpaw", "3.0"]) == 2
    assert "invalid choice: '3.0'" in capsys.readouterr().err
    assert not (tmp_path / "plugins").exists()


def test_check_config_warns_where_qwenpaw_2_would_leave_us_unused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.json"
    light = {"strategy": "scroll", "context_compact_config": {"enabled": False}}
    path.write_text(json.dumps({"running": {"light_context_config": light}}))
    assert main(["check-config", str(path)]) == 0
    err = capsys.readouterr().err
    assert 'running.light_context_config.strategy is "scroll"' in err
    assert 'set it to "native" for copaw-context' in err
    assert "context_compact_config.enabled is false" in err
    assert "only cuts fresh tool results" in err

    path.write_text(json.dumps({"running": {"light_context_config": {"strategy": "native"}}}))
    assert main(["check-config", str(path)]) == 0
    assert "strategy" not in capsys.readouterr().err  # nothing to say: we run
    path.write_text(json.dumps({"running": {}}))  # QwenPaw 1.x or a plain agent: no strategy
    assert main(["check-config", str(path)]) == 0
    assert "strategy" not in capsys.readouterr().err
