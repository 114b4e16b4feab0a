"""Which QwenPaw the plugin is installed for: QwenPaw 1.1 (copaw-context as its context
manager) or QwenPaw 2.2 (copaw-context's middleware in its agents), and what each means for
the agents of a QwenPaw folder. Nothing here imports QwenPaw."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import copaw_context
from copaw_context.core.config.inside_qwenpaw import QWENPAW2_NATIVE, qwenpaw2_unused_reasons

__all__ = [
    "TARGETS",
    "Target",
    "agent_lines",
    "installed_qwenpaw",
    "manifest_target",
    "target_for",
]


@dataclass(frozen=True)
class Target:
    """One QwenPaw line the package ships a plugin for."""

    name: str
    """``"1.1"`` or ``"2.2"``, as ``--qwenpaw`` takes it."""
    package: str
    """The package folder holding the plugin (``qwenpaw``, ``qwenpaw2``)."""
    what: str
    """What the plugin makes QwenPaw do, for the install message."""

    @property
    def source(self) -> Path:
        """The plugin folder shipped inside the package."""
        return Path(copaw_context.__file__).parent / self.package / "plugin"

    def runs(self, version_text: str) -> bool:
        """Whether QwenPaw ``version_text`` is of this line."""
        return version_text == self.name or version_text.startswith(f"{self.name}.")


TARGETS = {
    "1.1": Target(
        "1.1",
        "qwenpaw",
        "At its next start QwenPaw runs copaw-context for every agent whose agent.json has "
        'running.context_manager_backend "light" (the default), and /compact [note] in its '
        "chat is copaw-context's.",
    ),
    "2.2": Target(
        "2.2",
        "qwenpaw2",
        "At its next start QwenPaw runs copaw-context's middleware in every agent whose "
        f'agent.json has running.light_context_config.strategy "{QWENPAW2_NATIVE}" (QwenPaw\'s '
        'default is "scroll") and compaction enabled, and /compact [note], /context, /clear '
        "and /new in its chat are copaw-context's.",
    ),
}


def installed_qwenpaw() -> str | None:
    """The QwenPaw version installed in this Python, if any."""
    try:
        return version("qwenpaw")
    except PackageNotFoundError:
        return None


def target_for(option: str | None) -> tuple[Target, str]:
    """The target for ``--qwenpaw`` (``option``), else for the QwenPaw in this Python (1.1
    when there is none or it is another line), and how it was chosen."""
    if option is not None:
        return TARGETS[option], f"--qwenpaw {option}"
    found = installed_qwenpaw()
    for target in TARGETS.values():
        if found is not None and target.runs(found):
            return target, f"QwenPaw {found} is installed in this Python"
    if found is None:
        return TARGETS["1.1"], "no QwenPaw in this Python; --qwenpaw 2.2 for QwenPaw 2.2"
    return TARGETS["1.1"], f"QwenPaw {found} is neither 1.1 nor 2.2; --qwenpaw to choose"


def manifest_target(manifest: dict[str, Any]) -> Target:
    """The target an installed plugin's ``plugin.json`` is for (1.1 when it does not say)."""
    meta = manifest.get("meta")
    name = meta.get("qwenpaw") if isinstance(meta, dict) else None
    return TARGETS.get(str(name), TARGETS["1.1"])


def _unreadable(path: Path, error: Exception) -> str:
    """Why ``path`` cannot be read, naming it and the fix."""
    if isinstance(error, json.JSONDecodeError):
        why = f"is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
    elif isinstance(error, OSError):
        why = f"cannot be read ({error.strerror or error})"
    else:
        why = f"is not a JSON object ({error})"
    return f"{path} {why}; fix or restore the file"


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise TypeError(f"it holds a {type(data).__name__}")
    return data


def _agents(home: Path) -> tuple[list[tuple[str, Any, str]], str]:
    """(agent id, parsed agent.json or None, what is wrong with it: "" when nothing) of each
    agent in ``home``'s config.json, and what is wrong with config.json ("" when nothing,
    also when there is none yet)."""
    path = home / "config.json"
    if not path.exists():
        return [], ""
    try:
        profiles = _read_json(path)["agents"]["profiles"]
    except (OSError, ValueError, TypeError) as error:
        return [], _unreadable(path, error)
    except KeyError:
        return [], ""  # no agents yet
    found: list[tuple[str, Any, str]] = []
    for agent_id, ref in profiles.items() if isinstance(profiles, dict) else ():
        folder = ref.get("workspace_dir") if isinstance(ref, dict) else None
        if not isinstance(folder, str) or not folder:
            found.append((str(agent_id), None, f"{path} names no workspace_dir for it"))
            continue
        agent_json = Path(folder).expanduser() / "agent.json"
        try:
            data = _read_json(agent_json)
        except FileNotFoundError:
            found.append((str(agent_id), None, ""))  # QwenPaw writes it at the agent's start
            continue
        except (OSError, ValueError, TypeError) as error:
            problem = _unreadable(agent_json, error) + " (QwenPaw cannot load the agent until then)"
            found.append((str(agent_id), None, problem))
            continue
        found.append((str(agent_id), data, ""))
    return found, ""


def agent_lines(home: Path, target: Target, installed: bool) -> list[str]:
    """One line per agent of ``home``: the setting that decides, and who runs its context."""
    agents, problem = _agents(home)
    lines = [f"? (no agents listed): {problem}"] if problem else []
    for agent_id, data, problem in agents:
        if problem:
            lines.append(f"{agent_id}: {problem}")
            continue
        running = data.get("running") if isinstance(data, dict) else None
        running = running if isinstance(running, dict) else {}
        if target.name == "1.1":
            backend = str(running.get("context_manager_backend", "light"))  # QwenPaw's default
            runs = "copaw-context" if backend == "light" and installed else "QwenPaw's own"
            lines.append(f"{agent_id}: context_manager_backend {backend!r} -> {runs}")
            continue
        light = running.get("light_context_config")
        light = light if isinstance(light, dict) else {}
        strategy = light.get("strategy", "scroll")  # QwenPaw 2.2's default
        compact = light.get("context_compact_config")
        enabled = compact.get("enabled", True) if isinstance(compact, dict) else True
        backend = running.get("context_manager_backend", "light")
        blocking, partial = qwenpaw2_unused_reasons(strategy, enabled, backend)
        runs = "copaw-context" if installed and not blocking else "QwenPaw's own"
        lines.append(f"{agent_id}: strategy {strategy!r} -> {runs}")
        lines += [f"  {reason}" for reason in [*blocking, *partial]]
    return lines
