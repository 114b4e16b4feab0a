"""``copaw-context qwenpaw install | uninstall | status`` (the QwenPaw plugin folder).

Nothing here imports QwenPaw: the commands work in any environment and say when QwenPaw is
missing from it. tests/qwenpaw/ loads the installed plugin into real QwenPaw.
"""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest

import copaw_context
from copaw_context.cli import main
from copaw_context.cli.qwenpaw import PLUGIN_FILES, plugin_source, qwenpaw_home


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "qwenpaw-home"
    workspace = home / "workspaces" / "a1"
    workspace.mkdir(parents=True)
    profiles = {
        "a1": {"id": "a1", "workspace_dir": str(workspace)},
        "a2": {"id": "a2", "workspace_dir": str(home / "workspaces" / "a2")},
    }
    (home / "config.json").write_text(json.dumps({"agents": {"profiles": profiles}}))
    agent = {"running": {"context_manager_backend": "light"}}
    (workspace / "agent.json").write_text(json.dumps(agent))
    return home


def test_install_status_uninstall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = _home(tmp_path)
    assert main(["qwenpaw", "status", "--home", str(home)]) == 1
    assert "not installed" in capsys.readouterr().out

    assert main(["qwenpaw", "install", "--home", str(home)]) == 0
    out, err = capsys.readouterr()
    target = home / "plugins" / "copaw-context"
    assert f"Installed the copaw-context plugin {copaw_context.__version__} in {target}" in out
    assert '"light" (the default)' in out and "Restart QwenPaw" in out
    assert sorted(p.name for p in target.iterdir()) == sorted(PLUGIN_FILES)
    manifest = json.loads((target / "plugin.json").read_text())
    shipped = json.loads((plugin_source() / "plugin.json").read_text())
    assert manifest == {**shipped, "version": copaw_context.__version__}
    assert manifest["id"] == "copaw-context" and manifest["entry"] == {"backend": "plugin.py"}
    assert (target / "plugin.py").read_bytes() == (plugin_source() / "plugin.py").read_bytes()
    if find_spec("qwenpaw") is None:  # this environment has no QwenPaw: said, not refused
        assert "QwenPaw is not installed in this Python" in err

    assert main(["qwenpaw", "install", "--home", str(home)]) == 0  # again: replaced
    capsys.readouterr()
    assert main(["qwenpaw", "status", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert f"plugin     {target} (version {copaw_context.__version__})" in out
    assert "agent      a1: context_manager_backend 'light' -> copaw-context" in out
    assert "agent      a2: context_manager_backend 'light' -> copaw-context" in out  # default

    assert main(["qwenpaw", "uninstall", "--home", str(home)]) == 0
    assert "QwenPaw uses its own light context manager again" in capsys.readouterr().out
    assert not target.exists() and (home / "plugins").is_dir()
    assert main(["qwenpaw", "uninstall", "--home", str(home)]) == 1
    assert main(["qwenpaw", "status", "--home", str(home)]) == 1
    assert "a1: context_manager_backend 'light' -> QwenPaw's own" in capsys.readouterr().out


def test_a_stale_plugin_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = _home(tmp_path)
    assert main(["qwenpaw", "install", "--home", str(home)]) == 0
    manifest = home / "plugins" / "copaw-context" / "plugin.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "version": "0.0.1"}))
    capsys.readouterr()
    assert main(["qwenpaw", "status", "--home", str(home)]) == 1
    assert f"this package is {copaw_context.__version__}: install again" in capsys.readouterr().out


def test_another_plugin_in_the_folder_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = _home(tmp_path)
    other = home / "plugins" / "copaw-context"
    other.mkdir(parents=True)
    (other / "plugin.json").write_text(json.dumps({"id": "someone-else", "version": "1"}))
    assert main(["qwenpaw", "install", "--home", str(home)]) == 1
    assert "is not copaw-context's plugin" in capsys.readouterr().err
    assert main(["qwenpaw", "uninstall", "--home", str(home)]) == 1
    assert json.loads((other / "plugin.json").read_text())["id"] == "someone-else"


def test_the_home_is_found_as_qwenpaw_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("QWENPAW_WORKING_DIR", raising=False)
    monkeypatch.delenv("COPAW_WORKING_DIR", raising=False)
    assert qwenpaw_home() == (tmp_path / ".qwenpaw").resolve()
    (tmp_path / ".copaw").mkdir()  # a legacy CoPaw install
    assert qwenpaw_home() == (tmp_path / ".copaw").resolve()
    monkeypatch.setenv("COPAW_WORKING_DIR", str(tmp_path / "legacy"))
    assert qwenpaw_home() == (tmp_path / "legacy").resolve()
    monkeypatch.setenv("QWENPAW_WORKING_DIR", str(tmp_path / "qp"))
    assert qwenpaw_home() == (tmp_path / "qp").resolve()
    assert qwenpaw_home(str(tmp_path / "given")) == (tmp_path / "given").resolve()
    assert main(["qwenpaw", "install"]) == 0
    assert (tmp_path / "qp" / "plugins" / "copaw-context" / "plugin.json").is_file()


def test_a_missing_home_is_said_and_a_new_one_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "typo-home"
    assert main(["qwenpaw", "status", "--home", str(home)]) == 1
    assert f"home       {home} does not exist" in capsys.readouterr().out
    assert not home.exists()  # status creates nothing
    assert main(["qwenpaw", "uninstall", "--home", str(home)]) == 1
    assert "not installed" in capsys.readouterr().out and not home.exists()
    assert main(["qwenpaw", "install", "--home", str(home)]) == 0
    assert f"warning: {home} did not exist and was created" in capsys.readouterr().err
    assert main(["qwenpaw", "install", "--home", str(home)]) == 0  # again: no warning now
    assert "did not exist" not in capsys.readouterr().err
    empty = tmp_path / "empty-home"
    empty.mkdir()
    assert main(["qwenpaw", "status", "--home", str(empty)]) == 1
    out = capsys.readouterr().out
    assert "not installed in" in out and "does not exist" not in out and "agent " not in out


def test_unreadable_agent_files_are_named_and_left_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = _home(tmp_path)
    agent_json = home / "workspaces" / "a1" / "agent.json"
    agent_json.write_text("{bad")
    agent_json.chmod(0o444)  # read-only and malformed: install never writes it
    config = json.loads((home / "config.json").read_text())
    config["agents"]["profiles"]["a3"] = "not a profile"
    (home / "config.json").write_text(json.dumps(config))
    assert main(["qwenpaw", "install", "--home", str(home)]) == 0
    assert main(["qwenpaw", "install", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert f"a1: {agent_json} is not valid JSON (line 1, column 2" in out
    assert "QwenPaw cannot load the agent until then" in out
    assert f"a3: {home / 'config.json'} names no workspace_dir for it" in out
    assert "a2: context_manager_backend 'light' -> copaw-context" in out  # none yet: defaults
    assert agent_json.read_text() == "{bad"
    (home / "config.json").write_text("[1, 2]")
    assert main(["qwenpaw", "status", "--home", str(home)]) == 0
    assert f"{home / 'config.json'} is not a JSON object" in capsys.readouterr().out
    assert main(["qwenpaw", "uninstall", "--home", str(home)]) == 0
    assert main(["qwenpaw", "uninstall", "--home", str(home)]) == 1
    assert agent_json.read_text() == "{bad" and (home / "config.json").read_text() == "[1, 2]"
