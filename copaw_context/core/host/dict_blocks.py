"""Messages whose content is a string or a list of dict blocks <-> the engine's neutral views.

This is AgentScope 1.x's ``Msg`` (which QwenPaw uses too): a string or a list of TypedDict
blocks without ids; tool calls (``tool_use``) sit in the assistant message and each result
(``tool_result``) in a ``system`` message of its own. An adapter for such a host builds its
``Msg`` objects; everything read or written inside one is done here. Our per-message entry
lives in ``msg.metadata["copaw_context"]``:

- ``pinned``: never compacted (:func:`pin_message`);
- ``results``: per call id, the entry of that tool result (these blocks have no metadata):
  ``pruned_to``, ``offloaded``, ``read_file``, ``unseen``;
- ``origin``: when a compaction cut the message in two, the original block positions of the
  blocks it still holds, so each block keeps its part key (``<msg id>/<type>#<position>``,
  or ``<msg id>/<type>:<call id>`` for calls and results) and is archived exactly once.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from copaw_context.core.host.protocol import MessageView, PartView
from copaw_context.core.host.protocol import archive_id as core_archive_id
from copaw_context.core.host.views import (
    METADATA_KEY,
    data_view,
    entry_in,
    pin_in,
    pinned_in,
    role_of,
    tool_call_view,
    tool_result_view,
)
from copaw_context.core.summary.data_label import data_label

__all__ = [
    "DictMessage",
    "archive_id",
    "blocks_of",
    "data_url",
    "find_result",
    "is_pinned",
    "kept_blocks",
    "message_view",
    "part_keys",
    "pin_message",
    "result_meta",
    "result_parts",
    "set_data_text",
    "set_result",
    "set_text",
]

_DATA_TYPES = ("image", "audio", "video")


class DictMessage(Protocol):
    """What this module reads and writes of a message (1.x's ``Msg`` has all of it)."""

    id: Any
    name: Any
    role: Any
    content: Any
    metadata: Any
    timestamp: Any


def _entry(msg: DictMessage) -> dict[str, Any]:
    return entry_in(msg.metadata)


def _set_entry(msg: DictMessage, entry: dict[str, Any]) -> None:
    if not isinstance(msg.metadata, dict):
        msg.metadata = {}
    msg.metadata[METADATA_KEY] = entry


def pin_message(msg: Any) -> Any:
    """Mark ``msg`` so that compaction never removes it (returns the same message)."""
    if not isinstance(msg.metadata, dict):
        msg.metadata = {}
    pin_in(msg.metadata)
    return msg


def is_pinned(msg: Any) -> bool:
    """Whether ``msg`` was pinned with :func:`pin_message`."""
    return pinned_in(msg.metadata)


def blocks_of(msg: DictMessage) -> list[dict[str, Any]]:
    """The message's blocks (a string content is one text block)."""
    if isinstance(msg.content, str):
        return [{"type": "text", "text": msg.content}]
    return [b if isinstance(b, dict) else {"type": "unknown"} for b in msg.content]


def result_parts(block: dict[str, Any]) -> list[Any]:
    """A tool result's output as neutral parts: ``str`` for text, the block for data."""
    output = block.get("output")
    if output is None:
        return []
    if isinstance(output, str):
        return [output]
    return [
        b.get("text", "") if isinstance(b, dict) and b.get("type") == "text" else b for b in output
    ]


def _part_view(block: dict[str, Any], thinking: bool, meta: dict[str, Any]) -> PartView:
    kind = block.get("type")
    if kind == "text":
        return PartView("text", str(block.get("text", "")))
    if kind == "thinking":
        return PartView("thinking", str(block.get("thinking", "")), sent=thinking)
    if kind == "tool_use":
        raw = block.get("raw_input")
        tool_input = raw if isinstance(raw, str) and raw else _json(block.get("input", {}))
        return tool_call_view(str(block.get("name", "")), tool_input, str(block.get("id", "")))
    if kind == "tool_result":
        call_id = str(block.get("id", ""))
        output = tuple(result_parts(block))
        return tool_result_view(str(block.get("name", "")), output, call_id, meta.get(call_id))
    if kind in _DATA_TYPES:
        return data_view(_data_label(block, str(kind)))
    return PartView("other")


def _data_label(block: Any, kind: str) -> str:
    """``[image] <url>`` / ``[image] data:<media_type> (<n> bytes)`` for a data block."""
    source = block.get("source") if isinstance(block, dict) else None
    if not isinstance(source, dict):
        return data_label(kind=kind)
    url, data, mime = source.get("url"), source.get("data"), source.get("media_type")
    return data_label(
        kind=kind,
        url=url if isinstance(url, str) else None,
        data=data if isinstance(data, str) and not isinstance(url, str) else None,
        media_type=mime if isinstance(mime, str) else None,
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def message_view(msg: DictMessage, thinking: bool, first_part: int = 0) -> MessageView:
    """``msg`` as the engine sees it, from its part ``first_part`` on (``thinking``: whether
    the model's formatter sends thinking blocks back; these blocks carry no provider fields,
    so one answer holds for all)."""
    results = _entry(msg).get("results")
    meta = results if isinstance(results, dict) else {}
    return MessageView(
        msg_id=str(msg.id),
        role=role_of(msg.role),
        name=str(msg.name),
        timestamp=str(msg.timestamp or ""),
        parts=[_part_view(b, thinking, meta) for b in blocks_of(msg)[first_part:]],
        pinned=is_pinned(msg),
    )


def _origin(msg: DictMessage, count: int) -> list[int]:
    stored = _entry(msg).get("origin")
    origin = [int(i) for i in stored] if isinstance(stored, list) else []
    next_free = (max(origin) + 1) if origin else 0
    while len(origin) < count:  # blocks added after a cut (not done by 1.x, but safe)
        origin.append(next_free)
        next_free += 1
    return origin[:count]


def part_keys(msg: DictMessage) -> list[str]:
    """Stable keys of the message's blocks, in order (see the module docstring)."""
    blocks = blocks_of(msg)
    origin = _origin(msg, len(blocks))
    keys: list[str] = []
    for position, block in zip(origin, blocks, strict=True):
        kind = str(block.get("type"))
        if kind in ("tool_use", "tool_result") and block.get("id"):
            keys.append(f"{msg.id}/{kind}:{block['id']}")
        else:
            keys.append(f"{msg.id}/{kind}#{position}")
    return keys


def archive_id(msg: DictMessage) -> str:
    """``msg``'s archive id (``core.host.archive_id``) over its :func:`part_keys`."""
    return core_archive_id(msg.id, part_keys(msg))


def kept_blocks(
    msg: DictMessage, indices: Sequence[int]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The blocks at ``indices`` and the metadata of a copy of ``msg`` holding only them
    (copies; our entry keeps their origin and only their results' entries)."""
    blocks = blocks_of(msg)
    origin = _origin(msg, len(blocks))
    kept = [copy.deepcopy(blocks[i]) for i in indices]
    metadata = copy.deepcopy(msg.metadata) if isinstance(msg.metadata, dict) else {}
    entry = dict(entry_in(metadata))
    entry["origin"] = [origin[i] for i in indices]
    results = entry.get("results")
    if isinstance(results, dict):
        calls = {b.get("id") for b in kept if b.get("type") == "tool_result"}
        entry["results"] = {k: v for k, v in results.items() if k in calls}
    metadata[METADATA_KEY] = entry
    return kept, metadata


def find_result(
    messages: Iterable[DictMessage], call_id: str
) -> tuple[DictMessage, int, dict[str, Any]] | None:
    """The first tool result of ``call_id`` in ``messages`` (message, block index, block)."""
    for msg in messages:
        for index, block in enumerate(blocks_of(msg)):
            if block.get("type") == "tool_result" and block.get("id") == call_id:
                return msg, index, block
    return None


def result_meta(msg: DictMessage, call_id: str) -> dict[str, Any]:
    """Our entry for the tool result of ``call_id`` in ``msg`` (a copy; ``{}`` if none)."""
    results = _entry(msg).get("results")
    entry = results.get(call_id) if isinstance(results, dict) else None
    return dict(entry) if isinstance(entry, dict) else {}


def set_result(msg: DictMessage, part: int, output: Sequence[Any], meta: dict[str, Any]) -> None:
    """Write a tool result's neutral output parts and its entry back into ``msg``."""
    blocks = blocks_of(msg)
    block = blocks[part]
    if block.get("type") != "tool_result":
        raise TypeError(f"part {part} of message {msg.id} is a {block.get('type')}, not a result")
    if isinstance(block.get("output"), str) and len(output) == 1 and isinstance(output[0], str):
        block["output"] = output[0]
    else:
        block["output"] = [{"type": "text", "text": p} if isinstance(p, str) else p for p in output]
    entry = dict(_entry(msg))
    results = dict(entry.get("results") or {})
    results[str(block.get("id", ""))] = dict(meta)
    entry["results"] = results
    _set_entry(msg, entry)


def set_text(msg: DictMessage, part: int, text: str) -> None:
    """Replace the text of a text part (a string content is its only part)."""
    if isinstance(msg.content, str):
        if part != 0:
            raise IndexError(f"message {msg.id} has one part, not {part + 1}")
        msg.content = text
        return
    block = msg.content[part]
    if not isinstance(block, dict) or block.get("type") != "text":
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        raise TypeError(f"part {part} of message {msg.id} is a {kind}, not a text")
    block["text"] = text


def _data_block(msg: DictMessage, part: int) -> dict[str, Any]:
    block = msg.content[part] if isinstance(msg.content, list) else None
    if not isinstance(block, dict) or block.get("type") not in _DATA_TYPES:
        raise TypeError(f"part {part} of message {msg.id} is not an image, audio or video")
    return block


def data_url(msg: DictMessage, part: int) -> str:
    """The URL of a data part, or ``data:<type>;base64,<data>`` for inline data."""
    source = _data_block(msg, part).get("source")
    source = source if isinstance(source, dict) else {}
    if isinstance(source.get("url"), str):
        return str(source["url"])
    mime = source.get("media_type") or "application/octet-stream"
    return f"data:{mime};base64,{source.get('data') or ''}"


def set_data_text(msg: DictMessage, part: int, text: str) -> None:
    """Replace a data part by a text block."""
    _data_block(msg, part)
    assert isinstance(msg.content, list)
    msg.content[part] = {"type": "text", "text": text}
