"""The README's steps for a QwenPaw 1.1 user, as pasted, in QwenPaw's own environment: the
pins it names are what is installed here, ``copaw-context qwenpaw install`` and ``status``
run (the console script of this Python, the default QwenPaw folder), ``qwenpaw app`` exists,
and the plugin installed that way is what QwenPaw's loader loads."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from qwenpaw.plugins.loader import PluginLoader

from copaw_context.qwenpaw import CONTROL_COMMANDS
from tests.docs.readme_blocks import readme_blocks

BIN = Path(sys.executable).parent
(STEPS,) = [b for b in readme_blocks() if b.section == "Coming from QwenPaw"]
COMMANDS = [shlex.split(line.split("#", 1)[0]) for line in STEPS.text.splitlines() if line.strip()]


def test_the_pins_are_what_this_environment_has() -> None:
    (pip,) = [c for c in COMMANDS if c[0] == "pip"]
    for text in pip[2:-1]:
        requirement = Requirement(text)
        assert requirement.specifier.contains(version(requirement.name)), text


def test_the_commands_run_as_pasted(tmp_path: Path) -> None:
    home = tmp_path / ".qwenpaw"  # the default folder of a user whose HOME is tmp_path
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("QWENPAW_WORKING_DIR", None)
    env.pop("COPAW_WORKING_DIR", None)
    outputs = {}
    for words in [c for c in COMMANDS if c[0] in ("copaw-context", "qwenpaw")]:
        if words[0] == "qwenpaw":  # QwenPaw's own command line offers it
            words = [*words, "--help"]
        done = subprocess.run(
            [str(BIN / words[0]), *words[1:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (words, done.stdout, done.stderr)
        outputs[" ".join(words)] = done.stdout
    assert "Installed the copaw-context plugin" in outputs["copaw-context qwenpaw install"]
    status = outputs["copaw-context qwenpaw status"]
    assert f"qwenpaw    {version('qwenpaw')}" in status
    loader = PluginLoader([home / "plugins"])
    loaded = asyncio.run(loader.load_all_plugins())
    assert list(loaded) == ["copaw-context"]
    commands = [r.handler.command_name for r in loader.registry.get_control_commands()]
    assert {f"/{name}" for name in CONTROL_COMMANDS} <= set(commands)
    manifest = json.loads((home / "plugins" / "copaw-context" / "plugin.json").read_text())
    assert manifest["id"] == "copaw-context"
