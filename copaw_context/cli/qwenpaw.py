"""``copaw-context qwenpaw install | uninstall | status``: the QwenPaw plugin.

``install`` copies the plugin shipped in the package for the QwenPaw in this Python (or the
one ``--qwenpaw 1.1|2.2`` names): ``copaw_context/qwenpaw/plugin/`` for QwenPaw 1.1,
``copaw_context/qwenpaw2/plugin/`` for QwenPaw 2.2 (``_qwenpaw_targets.py``), each
``plugin.json`` and the backend entry ``plugin.py``, to ``<home>/plugins/copaw-context``,
where QwenPaw's plugin loader finds it at its next start. The plugin imports copaw-context
from QwenPaw's Python, so the package must be installed there (``pip install copaw-context``
in QwenPaw's environment). ``<home>`` is QwenPaw's working folder, found as QwenPaw finds it:
``--home``, else ``$QWENPAW_WORKING_DIR`` (or ``$COPAW_WORKING_DIR``), else ``~/.copaw`` when it
exists, else ``~/.qwenpaw``. Nothing here imports QwenPaw.

Exit status: 0 done (``status``: installed and current), 1 not installed, stale or refused,
2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import copaw_context
from copaw_context.cli._qwenpaw_targets import (
    TARGETS,
    Target,
    agent_lines,
    installed_qwenpaw,
    manifest_target,
    target_for,
)

__all__ = [
    "PLUGIN_FILES",
    "PLUGIN_ID",
    "add_qwenpaw",
    "install_plugin",
    "plugin_source",
    "qwenpaw_home",
]

if TYPE_CHECKING:  # argparse has no public name for this type
    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

PLUGIN_ID = "copaw-context"
"""The plugin's id and folder name under ``<home>/plugins``."""

PLUGIN_FILES = ("plugin.json", "plugin.py")
"""What the plugin folder holds."""


def plugin_source(target: str = "1.1") -> Path:
    """The plugin folder shipped inside the package for QwenPaw ``target`` (1.1, 2.2)."""
    return TARGETS[target].source


def qwenpaw_home(home: str | None = None) -> Path:
    """QwenPaw's working folder: ``home``, or the one QwenPaw itself would use."""
    if home:
        return Path(home).expanduser().resolve()
    for name in ("QWENPAW_WORKING_DIR", "COPAW_WORKING_DIR"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser().resolve()
    legacy = Path("~/.copaw").expanduser()
    return (legacy if legacy.exists() else Path("~/.qwenpaw").expanduser()).resolve()


_NEW_HOME = (
    "did not exist and was created: QwenPaw loads plugins from its own working folder "
    "(--home DIR, else $QWENPAW_WORKING_DIR, else ~/.qwenpaw); check that this is it"
)


def _plugin_dir(home: Path) -> Path:
    return home / "plugins" / PLUGIN_ID


def _manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "plugin.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def install_plugin(home: Path, qwenpaw: Target = TARGETS["1.1"]) -> Path:
    """Copy the plugin for ``qwenpaw`` to ``home`` (replacing a copy of ours, for either
    QwenPaw); returns its folder.

    Raises ``FileExistsError`` when the folder holds another plugin."""
    target = _plugin_dir(home)
    if target.exists():
        existing = _manifest(target)
        if existing is None or existing.get("id") != PLUGIN_ID:
            raise FileExistsError(f"{target} exists and is not copaw-context's plugin")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".copaw-context-", dir=target.parent))
    try:
        for name in PLUGIN_FILES:
            shutil.copyfile(qwenpaw.source / name, staging / name)
        manifest = _manifest(staging) or {}
        manifest["version"] = copaw_context.__version__
        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        (staging / "plugin.json").write_text(text, encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _python_note(target: Target) -> str | None:
    """What is wrong with this Python for the plugin for ``target``, if anything."""
    found = installed_qwenpaw()
    if found is None:
        return (
            f"QwenPaw is not installed in this Python ({sys.executable}); install "
            "copaw-context into the Python QwenPaw runs with, or the plugin cannot import it"
        )
    if not target.runs(found):
        return (
            f"QwenPaw {found} is installed; the plugin is for QwenPaw {target.name}.x "
            "(copaw-context qwenpaw install --qwenpaw 1.1 or 2.2; README: Coming from QwenPaw)"
        )
    return None


def _run_install(args: argparse.Namespace) -> int:
    home = qwenpaw_home(args.home)
    target, chosen = target_for(args.qwenpaw)
    created = not home.exists()
    try:
        folder = install_plugin(home, target)
    except (FileExistsError, OSError) as error:
        print(f"copaw-context: error: {error}", file=sys.stderr)
        return 1
    print(f"Installed the copaw-context plugin {copaw_context.__version__} in {folder}")
    print(f"  for QwenPaw {target.name} ({chosen})")
    if created:
        print(f"copaw-context: warning: {home} {_NEW_HOME}", file=sys.stderr)
    note = _python_note(target)
    if note is not None:
        print(f"copaw-context: warning: {note}", file=sys.stderr)
    print(f"{target.what} Restart QwenPaw to load it.")
    for line in agent_lines(home, target, installed=True):
        print(f"  agent {line}")
    return 0


def _run_uninstall(args: argparse.Namespace) -> int:
    target = _plugin_dir(qwenpaw_home(args.home))
    manifest = _manifest(target) if target.exists() else None
    if manifest is None or manifest.get("id") != PLUGIN_ID:
        print(f"copaw-context: the plugin is not installed in {target.parent}")
        return 1
    shutil.rmtree(target)
    print(
        f"Removed {target}. QwenPaw uses its own light context manager again after a restart "
        "(the dialog archive and tool outputs copaw-context wrote stay in the workspaces)."
    )
    return 0


def _run_status(args: argparse.Namespace) -> int:
    home = qwenpaw_home(args.home)
    target = _plugin_dir(home)
    manifest = _manifest(target) if target.exists() else None
    status = 0
    if not home.is_dir():
        print(
            f"home       {home} does not exist (QwenPaw creates it at its first start; "
            "--home DIR or $QWENPAW_WORKING_DIR for another folder)"
        )
    if manifest is None or manifest.get("id") != PLUGIN_ID:
        print(f"plugin     not installed in {target.parent} (copaw-context qwenpaw install)")
        status = 1
    else:
        installed = manifest.get("version")
        current = installed == copaw_context.__version__
        print(
            f"plugin     {target} (version {installed}"
            + ("" if current else f"; this package is {copaw_context.__version__}: install again")
            + ")"
        )
        status = 0 if current else 1
    made_for = manifest_target(manifest or {})
    if manifest is not None:
        print(f"for        QwenPaw {made_for.name}")
    qwenpaw = installed_qwenpaw()
    print(f"qwenpaw    {qwenpaw or 'not installed in this Python'} ({sys.executable})")
    note = _python_note(made_for)
    if note is not None:
        print(f"           {note}")
        if manifest is not None and qwenpaw is not None:
            status = 1  # the plugin of the other QwenPaw: install again
    for line in agent_lines(home, made_for, installed=status == 0):
        print(f"agent      {line}")
    return status


def add_qwenpaw(subcommands: _Subcommands) -> None:
    """Register ``qwenpaw`` and its actions."""
    parser = subcommands.add_parser(
        "qwenpaw",
        help="install copaw-context into QwenPaw 1.1 or 2.2 (a QwenPaw plugin)",
        description="Install, remove or check the QwenPaw plugin that makes copaw-context "
        'the context manager of QwenPaw 1.1 agents (context_manager_backend "light"), or '
        'runs its middleware in QwenPaw 2.2 agents (light_context_config.strategy "native"), '
        "and answers /compact [note] in QwenPaw's chat.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    for name, text, handler in (
        ("install", "copy the plugin into QwenPaw's plugins folder", _run_install),
        ("uninstall", "remove the plugin (QwenPaw's own manager again)", _run_uninstall),
        ("status", "show the plugin, QwenPaw and each agent's backend", _run_status),
    ):
        action = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument(
            "--home",
            metavar="DIR",
            help="QwenPaw's working folder (default: $QWENPAW_WORKING_DIR, else ~/.qwenpaw)",
        )
        if name == "install":
            action.add_argument(
                "--qwenpaw",
                choices=sorted(TARGETS),
                help="the QwenPaw the plugin is for (default: the one installed in this "
                "Python; 1.1 when there is none)",
            )
        action.set_defaults(handler=handler)
