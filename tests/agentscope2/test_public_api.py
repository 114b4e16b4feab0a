"""The public surface: __all__ everywhere, the core free of AgentScope, the chat command."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
from pathlib import Path

import pytest

import copaw_context
from copaw_context.testing import ScriptedChatModel, text_step

PACKAGE = Path(copaw_context.__file__).parent


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")


def test_every_public_name_is_exported_and_importable() -> None:
    assert copaw_context.__all__ == sorted(
        set(copaw_context.__all__), key=copaw_context.__all__.index
    )
    for name in copaw_context.__all__:
        assert getattr(copaw_context, name) is not None


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_declares_all(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    assert "__all__" in names, f"{path} has no __all__"


def test_core_imports_no_agentscope() -> None:
    paths = sorted((PACKAGE / "core").rglob("*.py"))
    assert PACKAGE / "core" / "summary" / "llm.py" in paths  # the subpackages too
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(PACKAGE))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("agentscope") for a in node.names), name
            elif isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("agentscope"), name


async def test_chat_loop_answers_and_handles_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from copaw_context.cli import chat

    model = ScriptedChatModel([text_step("Hello! How can I help?")])
    monkeypatch.setattr(chat, "real_chat_model", lambda *args, **kwargs: model)
    config = tmp_path / "agent.json"
    config.write_text('{"running": {"max_input_length": 20000}}')
    stdin = io.StringIO("hi\n/context\n/exit\n")
    stdout = io.StringIO()
    status = await chat.run_chat(
        str(config), str(tmp_path), model_name="m", stdin=stdin, stdout=stdout
    )
    text = stdout.getvalue()
    assert status == 0
    assert "assistant> Hello! How can I help?" in text
    assert "Window: 20000 tokens (from running.max_input_length)" in text
    model.assert_complete()


def test_demo_settings_match_the_committed_example() -> None:
    from copaw_context import load_running_config
    from copaw_context.cli.demo import demo_config

    example = load_running_config(PACKAGE.parent / "configs" / "agent.demo.json")
    assert example == demo_config()


def _agentscope_modules_loaded(code: str) -> list[str]:
    """AgentScope modules a fresh interpreter imports while running ``code`` (-X importtime)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    )
    names = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    return [name for name in names if name.split(".")[0] == "agentscope"]


def test_importing_the_package_and_its_config_loads_no_agentscope() -> None:
    assert (
        _agentscope_modules_loaded(
            "import copaw_context; from copaw_context import load_running_config, RunningConfig"
        )
        == []
    )
    assert _agentscope_modules_loaded("import copaw_context.core.engine") == []


def test_check_config_does_not_pay_for_agentscope(tmp_path: Path) -> None:
    config = tmp_path / "agent.json"
    config.write_text('{"running": {}}', encoding="utf-8")
    code = (
        "import sys; from copaw_context.cli import main; "
        f"sys.exit(main(['check-config', {str(config)!r}]))"
    )
    assert _agentscope_modules_loaded(code) == []


def test_the_hook_resolves_for_the_installed_major() -> None:
    from copaw_context import MemoryCompactionHook, installed_agentscope_major

    assert installed_agentscope_major() == 2
    assert MemoryCompactionHook.__module__ == "copaw_context.agentscope2.middleware"
