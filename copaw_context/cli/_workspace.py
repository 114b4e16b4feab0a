"""The ``--workspace`` folder of a command: checked (and made) before any work starts."""

from __future__ import annotations

from pathlib import Path

__all__ = ["workspace_error"]


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
