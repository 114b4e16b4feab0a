"""Checks on a message read from a file (``/load_history``) before an adapter makes it its
host's message; the adapter only builds the message.

A dump loads back into an agent of the same AgentScope major: a message in the other
major's shape is named as such (:func:`as1_sign`, :func:`as2_sign`, :func:`other_major`).
Every message must serialise the way the archive writes it (:func:`check_archivable`): one
that does not would make every later compaction and ``/clear`` fail.

The dict-block form (AgentScope 1.x's ``Msg``, which QwenPaw uses too) is checked whole by
:func:`check_dict_message`. ``Msg.from_dict`` takes any blocks, and 1.x's formatters trust
them: an image without a ``source`` or a text that is not a string kills every later reply,
a ``tool_use`` without an id reaches the provider unanswered, and an AgentScope 2.x message
passes its 2.x-only keys on (``created_at``, ``finished_at``). Each is refused naming the
message (from 1) and the block (from 1), and what to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from copaw_context.core.archive.lines import dump_line

__all__ = [
    "as1_sign",
    "as2_sign",
    "check_archivable",
    "check_dict_blocks",
    "check_dict_message",
    "other_major",
]

_KINDS = ("text", "thinking", "tool_use", "tool_result", "image", "audio", "video")
_DATA_KINDS = ("image", "audio", "video")
_AS1_KINDS = ("tool_use", "image", "audio", "video")
_AS2_KINDS = ("tool_call", "hint", "data")
_AS2_BLOCK_KEYS = ("created_at", "finished_at", "state", "suggested_rules")
_AS2_MESSAGE_KEYS = ("created_at", "usage", "finished_at", "finished_reason")


class _Refused(ValueError):
    """One block's problem (worded as what to fix)."""


def as1_sign(data: Mapping[str, Any]) -> str | None:
    """What marks ``data`` as an AgentScope 1.x message, if anything does."""
    content = data.get("content")
    if isinstance(content, str):
        return "its content is a text, not a list of blocks"
    for number, block in enumerate(content if isinstance(content, list) else [], 1):
        if isinstance(block, Mapping) and block.get("type") in _AS1_KINDS:
            return f"block {number} has the 1.x type {block.get('type')!r}"
    if "timestamp" in data and "created_at" not in data:
        return "it has the 1.x field 'timestamp'"
    return None


def as2_sign(data: Mapping[str, Any]) -> str | None:
    """What marks ``data`` as an AgentScope 2.x message, if anything does."""
    content = data.get("content")
    for number, block in enumerate(content if isinstance(content, list) else [], 1):
        if not isinstance(block, Mapping):
            continue
        if block.get("type") in _AS2_KINDS:
            return f"block {number} has the 2.x type {block.get('type')!r}"
        keys = [k for k in _AS2_BLOCK_KEYS if k in block]
        if keys:
            return f"block {number} has the 2.x field {keys[0]!r}"
    if "timestamp" not in data:
        keys = [k for k in _AS2_MESSAGE_KEYS if k in data]
        if keys:
            return f"it has the 2.x field {keys[0]!r} and no 1.x 'timestamp'"
    return None


def other_major(number: int, sign: str, *, found: str, runs: str) -> ValueError:
    """The refusal of message ``number``, an AgentScope ``found`` message (``sign`` says
    why), by an agent that runs AgentScope ``runs``."""
    return ValueError(
        f"message {number} is an AgentScope {found} message ({sign}) and this agent runs "
        f"AgentScope {runs}; a dump loads back into an agent of the same major (dump the "
        f"history again from a {runs} agent)"
    )


def check_archivable(number: int, serialise: Callable[[], Any]) -> None:
    """Refuse (``ValueError``) message ``number`` when ``serialise()`` (the message in the
    archive's form) fails or gives what the archive could not write as one JSON line."""
    try:
        dump_line({"message": serialise()})
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(
            f"message {number} cannot be written to the archive ({type(exc).__name__}: "
            f"{str(exc)[:200]}); make its content and metadata plain JSON"
        ) from None


def _text(block: Mapping[str, Any], key: str) -> None:
    if not isinstance(block.get(key), str):
        raise _Refused(f'its "{key}" must be text (it is {_kind(block.get(key))})')


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _source(block: Mapping[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise _Refused(
            'it needs a "source": {"type": "url", "url": "..."} or '
            '{"type": "base64", "media_type": "...", "data": "..."}'
        )
    if source.get("type") == "url":
        if not isinstance(source.get("url"), str) or not source["url"]:
            url = _kind(source.get("url"))
            raise _Refused(f'its source "url" must be a non-empty text (it is {url})')
    elif source.get("type") == "base64":
        for key in ("media_type", "data"):
            if not isinstance(source.get(key), str):
                raise _Refused(f'its base64 source needs a "{key}" text')
    else:
        raise _Refused(f'its source "type" must be "url" or "base64", not {source.get("type")!r}')


def _call_fields(block: Mapping[str, Any]) -> None:
    for key in ("id", "name"):
        if not isinstance(block.get(key), str) or not block[key]:
            raise _Refused(
                f'it needs a non-empty "{key}" text (it is {_kind(block.get(key))}): providers '
                "pair calls and results by id"
            )


def _block(block: Mapping[str, Any]) -> None:
    kind = block.get("type")
    if kind not in _KINDS:
        raise _Refused(f"its type {kind!r} is not one AgentScope 1.x knows ({', '.join(_KINDS)})")
    if kind in ("text", "thinking"):
        _text(block, str(kind))
    elif kind in _DATA_KINDS:
        _source(block)
    elif kind == "tool_use":
        _call_fields(block)
        if not isinstance(block.get("input"), Mapping):
            raise _Refused(f'its "input" must be an object (it is {_kind(block.get("input"))})')
        if "raw_input" in block and not isinstance(block["raw_input"], str):
            raise _Refused('its "raw_input" must be text')
    else:  # tool_result
        _call_fields(block)
        output = block.get("output")
        if isinstance(output, str):
            return
        if not isinstance(output, list):
            raise _Refused(f'its "output" must be text or a list of blocks ({_kind(output)})')
        for item in output:
            if not isinstance(item, Mapping) or item.get("type") not in ("text", *_DATA_KINDS):
                raise _Refused('every block of its "output" must be a text, image, audio or video')
            if item["type"] == "text":
                _text(item, "text")
            else:
                _source(item)


def check_dict_blocks(data: Mapping[str, Any], number: int) -> None:
    """Refuse (``ValueError``) a message whose blocks 1.x's formatters cannot take, or an
    AgentScope 2.x message; ``number`` counts from 1."""
    sign = as2_sign(data)
    if sign is not None:
        raise other_major(number, sign, found="2.x", runs="1.x")
    content = data.get("content")
    for index, block in enumerate(content if isinstance(content, list) else [], 1):
        try:
            _block(block)
        except _Refused as exc:
            kind = block.get("type")
            raise ValueError(f"message {number}, block {index} ({kind}): {exc}") from None


def check_dict_message(data: Mapping[str, Any], number: int) -> None:
    """Refuse (``ValueError``) what ``Msg.from_dict`` of 1.x would assert on, and blocks its
    formatters cannot take (:func:`check_dict_blocks`); ``number`` counts from 1."""
    problem = None
    if not isinstance(data.get("name"), str):
        problem = '"name" must be text'
    elif data.get("role") not in ("user", "assistant", "system"):
        problem = '"role" must be "user", "assistant" or "system"'
    elif not isinstance(data.get("content"), str | list):
        problem = '"content" must be text or a list of blocks'
    elif isinstance(data["content"], list) and not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in data["content"]
    ):
        problem = 'every block of "content" must be an object with a "type"'
    elif not isinstance(data.get("metadata") or {}, dict):
        problem = '"metadata" must be an object'
    if problem is not None:
        raise ValueError(f"message {number} is not an AgentScope 1.x message: {problem}")
    check_dict_blocks(data, number)
