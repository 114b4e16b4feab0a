"""Reading the config files: agent.json and the ``copaw-context.json`` kept beside it.

QwenPaw rewrites agent.json with only the keys it knows (``save_agent_config``, and QwenPaw
2.x's ``Workspace.start()``), so a setting of ours that QwenPaw does not have (``compactor``,
``show_status``, ``token_counter``, ``running.memory``, ...) would be erased there. The same
settings in ``copaw-context.json``, in the folder of agent.json, survive: that file is merged
over agent.json's ``running`` section, key by key (a value in it wins; nested objects merge;
a list or any other value replaces agent.json's whole).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from copaw_context.core.errors import ConfigError, json_text

__all__ = [
    "OVERLAY_NAME",
    "leaf_paths",
    "merge_over",
    "overlay_beside",
    "read_json_file",
    "read_overlay",
]

OVERLAY_NAME = "copaw-context.json"
"""The settings file beside agent.json that QwenPaw never rewrites."""


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _brief(value: object) -> object:
    text = json_text(value)
    return value if len(text) <= 80 else f"{text[:77]}..."


def read_json_file(path: str | os.PathLike[str], what: str = "agent.json") -> Any:
    """The parsed JSON of ``path``; every way it can be unreadable is a :class:`ConfigError`
    naming the file (``what`` says which kind of file it should be)."""
    source, where = str(path), f"{what} file"
    try:
        text = Path(path).expanduser().read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(where, source, f"no such file; pass the path of an {what}") from None
    except IsADirectoryError:
        raise ConfigError(where, source, f"is a directory; pass the {what} inside it") from None
    except UnicodeDecodeError as error:
        raise ConfigError(where, source, f"is not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise ConfigError(where, source, f"cannot be read ({error.strerror})") from None
    if not text.strip():
        raise ConfigError(
            where, source, 'is empty; it must hold a JSON object, e.g. {"running": {}}'
        )
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicates)
    except json.JSONDecodeError as error:
        lines = text.splitlines()
        line = lines[error.lineno - 1].strip() if error.lineno <= len(lines) else ""
        position = f"line {error.lineno} column {error.colno}"
        allowed = f"is not valid JSON ({error.msg}); fix the syntax there"
        raise ConfigError(position, _brief(line), allowed, source) from None
    except _DuplicateKeyError as error:
        allowed = "appears twice in one JSON object; keep only one"
        raise ConfigError("JSON key", error.key, allowed, source) from None
    except RecursionError:
        allowed = f"nests arrays or objects too deeply to be an {what}; fix the file"
        raise ConfigError(where, source, allowed) from None


def overlay_beside(agent_json: str | os.PathLike[str]) -> Path:
    """Where the ``copaw-context.json`` of ``agent_json`` is (it may not exist)."""
    return Path(agent_json).expanduser().parent / OVERLAY_NAME


def read_overlay(path: Path) -> dict[str, Any] | None:
    """The ``running`` object of the settings file at ``path``; ``None`` when there is none."""
    if not path.exists():
        return None
    data = read_json_file(path, OVERLAY_NAME)
    source = str(path)
    if not isinstance(data, Mapping) or set(data) != {"running"}:
        shown = _brief(data) if not isinstance(data, Mapping) else sorted(map(str, data))
        allowed = (
            'must be {"running": {...}} holding the settings to use over agent.json\'s, '
            'e.g. {"running": {"light_context_config": {"compactor": "extractive"}}}'
        )
        raise ConfigError("(top level)", shown, allowed, source)
    running = data["running"]
    if not isinstance(running, Mapping):
        allowed = "must be a JSON object holding the settings (an empty {} changes nothing)"
        raise ConfigError("running", _brief(running), allowed, source)
    return dict(running)


def merge_over(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overlay``'s values over it; objects on both sides merge key by key."""
    merged = dict(base)
    for key, value in overlay.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = merge_over(below, value)
        else:
            merged[key] = value
    return merged


def leaf_paths(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """The dotted path of every value in ``data`` that is not itself an object."""
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from leaf_paths(value, f"{path}.")
        else:
            yield path
