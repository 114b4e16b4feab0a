"""The ``--workspace`` folder of a command: checked (and made) before any work starts, and
the settings its agent.json gives."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from copaw_context.core.config.files import read_json_file
from copaw_context.core.config.running import RunningConfig, load_running_config

__all__ = ["workspace_config", "workspace_error"]


def workspace_config(workspace: Path, explicit: str | None) -> RunningConfig:
    """The settings for a command on ``workspace``: ``explicit`` (``--config``, which must
    exist), else ``<workspace>/agent.json`` when it has settings. A workspace agent.json that
    holds no ``running`` (only the ``id`` replicas share, docs/deployment.md) gives the
    defaults; a bad one is a ``ConfigError`` naming it."""
    if explicit:
        return load_running_config(explicit)  # a missing file is an error naming it
    path = workspace / "agent.json"
    if not path.is_file():
        return RunningConfig()
    data = read_json_file(path)
    agents = data.get("agents") if isinstance(data, Mapping) else None
    nested = isinstance(agents, Mapping) and "running" in agents
    if isinstance(data, Mapping) and "running" not in data and not nested:
        return RunningConfig()
    return load_running_config(path)


def workspace_error(workspace: str, *, create: bool) -> str | None:
    """Why ``workspace`` cannot be used as the agent's folder (``None`` when it can).

    With ``create`` a missing folder is made (with its parents); the answer names the path
    and the reason, e.g. a part of the path that is a file.
    """
    path = Path(workspace).expanduser()
    label = f"--workspace {workspace}"
    if path.is_dir():
        return None
    if path.exists() or path.is_symlink():
        kind = "a broken link" if not path.exists() else "a file"
        hint = " (a missing one is created)" if create else ""
        return f"{label}: is {kind}, not a directory; pass a directory{hint}"
    blocker = _file_ancestor(path)
    if blocker is not None:
        return f"{label}: cannot be created: {blocker} is a file, not a directory"
    if not create:
        return f"{label}: no such directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        return f"{label}: cannot be created ({reason}); pass a directory you can write to"
    return None


def _file_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a folder."""
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None
