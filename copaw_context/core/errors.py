"""Exception types raised by copaw-context.

CopawContextError
 ├── ConfigError (also a ValueError): a bad agent.json / config value
 └── ArchiveError: the dialog archive could not be written
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ArchiveError", "ConfigError", "CopawContextError"]


class CopawContextError(Exception):
    """Base class of every error raised by copaw-context."""


class ConfigError(CopawContextError, ValueError):
    """A configuration value is invalid.

    The message names the JSON path of the bad value, the value itself and what is allowed.
    """

    def __init__(self, path: str, value: Any, allowed: str, source: str | None = None) -> None:
        self.path = path
        self.value = value
        self.allowed = allowed
        self.source = source
        where = f" in {source}" if source else ""
        super().__init__(f"{path}{where}: got {_as_json(value)}; {allowed}")


def _as_json(value: Any) -> str:
    """``value`` as the file spells it (``true``, ``null``, ``"text"``); repr otherwise."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)


class ArchiveError(CopawContextError):
    """The dialog archive could not be written; nothing was removed from the context."""
