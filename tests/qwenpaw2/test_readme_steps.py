"""The README's steps for a QwenPaw 2.2 user, as pasted, in QwenPaw 2.2's own environment: the
pins it names are what is installed here, the ``copaw-context`` commands run (the console
script of this Python, the default QwenPaw folder of a fresh home) and say what they did,
``qwenpaw app`` exists, and the plugin installed that way is what QwenPaw's loader loads (in
a process of its own: QwenPaw's plugin registry is one per process)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

from tests.docs.readme_blocks import readme_blocks

BIN = Path(sys.executable).parent
(STEPS,) = [b for b in readme_blocks() if b.section == "Coming from QwenPaw 2.2"]
COMMANDS = [shlex.split(line.split("#", 1)[0]) for line in STEPS.text.splitlines() if line.strip()]

# What QwenPaw does on its first start: the default agent, its agent.json as a new install
# has it (strategy "scroll"), its profile in config.json.
WRITE_AGENT = """
from qwenpaw.config.config import migrate_legacy_config_to_multi_agent
assert migrate_legacy_config_to_multi_agent()
"""

# What QwenPaw's app does with the plugins folder at start, and what the plugin registered.
LOAD_PLUGINS = """
import asyncio, json, sys
from qwenpaw.plugins.loader import PluginLoader
loader = PluginLoader([sys.argv[1]])
loaded = asyncio.run(loader.load_all_plugins())
registry = loader.registry
print(json.dumps({
    "loaded": sorted(loaded),
    "middlewares": [r.plugin_id for r in registry.get_middleware_factories()],
    "startup": sorted(h.hook_name for h in registry.get_startup_hooks()),
    "shutdown": sorted(h.hook_name for h in registry.get_shutdown_hooks()),
}))
"""


def test_the_pins_are_what_this_environment_has() -> None:
    (pip,) = [c for c in COMMANDS if c[0] == "pip"]
    for text in pip[2:-1]:
        requirement = Requirement(text)
        assert requirement.specifier.contains(version(requirement.name)), text


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def test_the_commands_run_as_pasted(tmp_path: Path) -> None:
    home = tmp_path / ".qwenpaw"  # the default folder of a user whose HOME is tmp_path
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("QWENPAW_WORKING_DIR", None)
    env.pop("COPAW_WORKING_DIR", None)
    written = _run([sys.executable, "-c", WRITE_AGENT], env)
    assert written.returncode == 0, written.stderr
    outputs = {}
    for words in [c for c in COMMANDS if c[0] in ("copaw-context", "qwenpaw")]:
        if words[0] == "qwenpaw":  # QwenPaw's own command line offers it
            words = [*words, "--help"]
        words = [f"{tmp_path}{w[1:]}" if w.startswith("~/") else w for w in words]  # the shell's ~
        done = _run([str(BIN / words[0]), *words[1:]], env)
        assert done.returncode == 0, (words, done.stdout, done.stderr)
        outputs[" ".join(words[:3] if words[1] == "qwenpaw" else words[:2])] = done

    qwenpaw = version("qwenpaw")
    install = outputs["copaw-context qwenpaw install"].stdout
    assert "Installed the copaw-context plugin" in install
    assert f"for QwenPaw 2.2 (QwenPaw {qwenpaw} is installed in this Python)" in install
    assert "agent default: strategy 'scroll' -> QwenPaw's own" in install
    status = outputs["copaw-context qwenpaw status"].stdout
    assert "for        QwenPaw 2.2" in status and f"qwenpaw    {qwenpaw}" in status
    check = outputs["copaw-context check-config"]
    assert "agent.json: valid" in check.stdout
    assert 'strategy is "scroll"' in check.stderr and 'set it to "native"' in check.stderr
    manifest = json.loads((home / "plugins" / "copaw-context" / "plugin.json").read_text())
    assert manifest["id"] == "copaw-context" and manifest["meta"]["qwenpaw"] == "2.2"

    loaded = _run([sys.executable, "-c", LOAD_PLUGINS, str(home / "plugins")], env)
    assert loaded.returncode == 0, loaded.stderr
    registered = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert registered["loaded"] == ["copaw-context"]
    assert registered["middlewares"] == ["copaw-context"]
    assert any("copaw_context_commands" in name for name in registered["startup"])
    assert any("copaw_context_agent_built" in name for name in registered["startup"])
    assert "copaw_context_close" in registered["shutdown"]
