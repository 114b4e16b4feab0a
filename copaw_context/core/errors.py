"""Exception types raised by copaw-context.

CopawContextError
 ├── ConfigError (also a ValueError): a bad agent.json / config value
 └── ArchiveError: the dialog archive could not be written
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["ArchiveError", "ConfigError", "CopawContextError", "json_text", "redact"]

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
_PASSWORD_KEY = re.compile(r"(\bpassword\s*=\s*)('[^']*'|[^\s&']+)", re.IGNORECASE)


class CopawContextError(Exception):
    """Base class of every error raised by copaw-context."""


class ConfigError(CopawContextError, ValueError):
    """A configuration value is invalid.

    The message names the JSON path of the bad value, the value itself (as JSON: ``NaN``,
    ``null``, ``"x"``) and what is allowed. When a rule between two keys fails and the file
    sets only the other one, ``conflict`` is (its JSON path, its value): the message then
    names that key first, as the one to change, and the default it conflicts with.
    """

    def __init__(
        self,
        path: str,
        value: Any,
        allowed: str,
        source: str | None = None,
        *,
        conflict: tuple[str, Any] | None = None,
    ) -> None:
        self.path = path
        self.value = value
        self.allowed = allowed
        self.source = source
        self.conflict = conflict
        where = f" in {source}" if source else ""
        if conflict is None:
            super().__init__(f"{path}{where}: got {redact(json_text(value))}; {allowed}")
            return
        other_path, other_value = conflict
        name, other = path.rpartition(".")[2], other_path.rpartition(".")[2]
        super().__init__(
            f"{other_path}{where}: got {redact(json_text(other_value))}, which conflicts with "
            f"{name} ({redact(json_text(value))}, its default): {name} {allowed}; "
            f"change {other} or set {name} too"
        )


def redact(text: str) -> str:
    """``text`` with the password of any URL in it hidden (``postgresql://u:***@h/db``), and
    of a ``password=...`` pair (a key/value DSN, a URL's query): for messages, logs and
    ``check-config``."""
    return _PASSWORD_KEY.sub(r"\1***", _PASSWORD.sub(r"\1***@", text))


def json_text(value: Any) -> str:
    """``value`` as an agent.json spells it: ``null``, ``true``, ``"text"``, and ``NaN`` or
    ``Infinity`` for the non-finite numbers Python's JSON reader accepts (never ``nan``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class ArchiveError(CopawContextError):
    """The dialog archive could not be written; nothing was removed from the context."""
