"""AgentScope 1.x messages <-> the engine's neutral views.

A 1.x ``Msg`` holds a string or a list of TypedDict blocks without ids; tool calls
(``tool_use``) sit in the assistant message and each result (``tool_result``) in a ``system``
message of its own. Our per-message entry lives in ``msg.metadata["copaw_context"]``:

- ``pinned``: never compacted (:func:`pin_message`);
- ``results``: per call id, the entry of that tool result (1.x blocks have no metadata):
  ``pruned_to``, ``offloaded``, ``read_file``, ``unseen``;
- ``origin``: when a compaction cut the message in two, the original block positions of the
  blocks it still holds, so each block keeps its part key (``<msg id>/<type>#<position>``,
  or ``<msg id>/<type>:<call id>`` for calls and results) and is archived exactly once.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, cast

from agentscope.message import Msg

from copaw_context.core.host.protocol import MessageView, PartView, Role
from copaw_context.core.host.protocol import archive_id as core_archive_id
from copaw_context.core.summary.data_label import data_label

__all__ = [
    "ARCHIVE_FORM",
    "METADATA_KEY",
    "ThinkingPolicy",
    "archive_id",
    "blocks_of",
    "data_url",
    "is_pinned",
    "message_view",
    "part_keys",
    "pin_message",
    "result_meta",
    "result_parts",
    "set_data_text",
    "set_result",
    "set_text",
    "with_blocks",
]

METADATA_KEY = "copaw_context"
"""Key of this package's entry in ``Msg.metadata``."""

ARCHIVE_FORM = "agentscope1.Msg"
"""How an archived message is serialised: ``Msg.to_dict()`` (loads with ``Msg.from_dict``)."""

ThinkingPolicy = bool
"""Whether the model's formatter sends thinking blocks back (1.x blocks carry no provider
fields, so one answer holds for all)."""

_DATA_TYPES = ("image", "audio", "video")


def _entry(msg: Msg) -> dict[str, Any]:
    metadata = msg.metadata if isinstance(msg.metadata, dict) else {}
    entry = metadata.get(METADATA_KEY)
    return entry if isinstance(entry, dict) else {}


def _set_entry(msg: Msg, entry: dict[str, Any]) -> None:
    if not isinstance(msg.metadata, dict):
        msg.metadata = {}
    msg.metadata[METADATA_KEY] = entry


def pin_message(msg: Msg) -> Msg:
    """Mark ``msg`` so that compaction never removes it (returns the same message)."""
    _set_entry(msg, {**_entry(msg), "pinned": True})
    return msg


def is_pinned(msg: Msg) -> bool:
    """Whether ``msg`` was pinned with :func:`pin_message`."""
    return _entry(msg).get("pinned") is True


def blocks_of(msg: Msg) -> list[dict[str, Any]]:
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


def _part_view(block: dict[str, Any], thinking: ThinkingPolicy, meta: dict[str, Any]) -> PartView:
    kind = block.get("type")
    if kind == "text":
        return PartView("text", str(block.get("text", "")))
    if kind == "thinking":
        return PartView("thinking", str(block.get("thinking", "")), sent=thinking)
    if kind == "tool_use":
        raw = block.get("raw_input")
        tool_input = raw if isinstance(raw, str) and raw else _json(block.get("input", {}))
        name = str(block.get("name", ""))
        return PartView(
            "tool_call",
            f"{name} {tool_input}",
            call_id=str(block.get("id", "")),
            tool_name=name,
            tool_input=tool_input,
        )
    if kind == "tool_result":
        output = tuple(result_parts(block))
        texts = [p for p in output if isinstance(p, str)]
        call_id = str(block.get("id", ""))
        entry = meta.get(call_id)
        return PartView(
            "tool_result",
            str(block.get("name", "")) + " " + "\n".join(texts),
            data_blocks=len(output) - len(texts),
            call_id=call_id,
            tool_name=str(block.get("name", "")),
            output=output,
            meta=dict(entry) if isinstance(entry, dict) else {},
        )
    if kind in _DATA_TYPES:
        return PartView("data", _data_label(block, str(kind)), sent=False, data_blocks=1)
    return PartView("other")


def _data_label(block: Any, kind: str) -> str:
    """``[image] <url>`` / ``[image] data:<media_type> (<n> bytes)`` for a 1.x data block."""
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


def message_view(msg: Msg, thinking: ThinkingPolicy, first_part: int = 0) -> MessageView:
    """``msg`` as the engine sees it, from its part ``first_part`` on."""
    role: Role = msg.role if msg.role in ("user", "assistant", "system") else "assistant"
    results = _entry(msg).get("results")
    meta = results if isinstance(results, dict) else {}
    return MessageView(
        msg_id=str(msg.id),
        role=role,
        name=str(msg.name),
        timestamp=str(msg.timestamp or ""),
        parts=[_part_view(b, thinking, meta) for b in blocks_of(msg)[first_part:]],
        pinned=is_pinned(msg),
    )


def _origin(msg: Msg, count: int) -> list[int]:
    stored = _entry(msg).get("origin")
    origin = [int(i) for i in stored] if isinstance(stored, list) else []
    next_free = (max(origin) + 1) if origin else 0
    while len(origin) < count:  # blocks added after a cut (not done by 1.x, but safe)
        origin.append(next_free)
        next_free += 1
    return origin[:count]


def part_keys(msg: Msg) -> list[str]:
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


def archive_id(msg: Msg) -> str:
    """``msg``'s archive id (``core.host.archive_id``) over its :func:`part_keys`."""
    return core_archive_id(msg.id, part_keys(msg))


def with_blocks(msg: Msg, indices: Sequence[int]) -> Msg:
    """A copy of ``msg`` holding only the blocks at ``indices`` (same id and timestamp)."""
    blocks = blocks_of(msg)
    origin = _origin(msg, len(blocks))
    kept = [copy.deepcopy(blocks[i]) for i in indices]
    metadata = copy.deepcopy(msg.metadata) if isinstance(msg.metadata, dict) else {}
    part = Msg(msg.name, cast(Any, kept), msg.role, metadata, msg.timestamp, msg.invocation_id)
    part.id = msg.id
    entry = dict(_entry(part))
    entry["origin"] = [origin[i] for i in indices]
    results = entry.get("results")
    if isinstance(results, dict):
        calls = {b.get("id") for b in kept if b.get("type") == "tool_result"}
        entry["results"] = {k: v for k, v in results.items() if k in calls}
    _set_entry(part, entry)
    return part


def result_meta(msg: Msg, call_id: str) -> dict[str, Any]:
    """Our entry for the tool result of ``call_id`` in ``msg`` (a copy; ``{}`` if none)."""
    results = _entry(msg).get("results")
    entry = results.get(call_id) if isinstance(results, dict) else None
    return dict(entry) if isinstance(entry, dict) else {}


def set_result(msg: Msg, part: int, output: Sequence[Any], meta: dict[str, Any]) -> None:
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


def set_text(msg: Msg, part: int, text: str) -> None:
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


def _data_block(msg: Msg, part: int) -> dict[str, Any]:
    block = msg.content[part] if isinstance(msg.content, list) else None
    if not isinstance(block, dict) or block.get("type") not in _DATA_TYPES:
        raise TypeError(f"part {part} of message {msg.id} is not an image, audio or video")
    return block


def data_url(msg: Msg, part: int) -> str:
    """The URL of a data part, or ``data:<type>;base64,<data>`` for inline data."""
    source = _data_block(msg, part).get("source")
    source = source if isinstance(source, dict) else {}
    if isinstance(source.get("url"), str):
        return str(source["url"])
    mime = source.get("media_type") or "application/octet-stream"
    return f"data:{mime};base64,{source.get('data') or ''}"


def set_data_text(msg: Msg, part: int, text: str) -> None:
    """Replace a data part by a text block."""
    _data_block(msg, part)
    assert isinstance(msg.content, list)
    msg.content[part] = {"type": "text", "text": text}
