"""Where an agent's workspace is: the folder of its agent.json, unless one is named."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["agent_json_workspace"]


def agent_json_workspace(
    path: str | os.PathLike[str], workspace_dir: str | os.PathLike[str] | None = None
) -> Path:
    """``workspace_dir`` when given, else the folder that holds the agent.json at ``path``
    (QwenPaw keeps each agent's agent.json in its workspace, ``~/.qwenpaw/workspaces/<id>``)."""
    if workspace_dir is not None:
        return Path(workspace_dir).expanduser()
    return Path(path).expanduser().resolve().parent
