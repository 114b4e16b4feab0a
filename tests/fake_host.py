"""A host-neutral ``HostSession`` over plain data, for testing the engine without AgentScope."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.host.protocol import (
    ArchiveRecord,
    FixedParts,
    MessageView,
    PartKind,
    PartView,
    Role,
    Window,
)
from copaw_context.core.summary import CompactorModel

__all__ = ["FakeHost", "FakeMessage", "call", "result", "text", "user"]

_ids = itertools.count(1)


@dataclass
class FakeMessage:
    """One message: an id, a role and neutral parts (``PartView`` s, edited in place)."""

    role: Role
    parts: list[PartView]
    msg_id: str = field(default_factory=lambda: f"m{next(_ids)}")
    name: str = "agent"
    timestamp: str = "2026-12-01T10:00:00+00:00"
    pinned: bool = False
    part_ids: list[str] = field(default_factory=list)

    def view(self) -> MessageView:
        parts = [replace(p, meta=dict(p.meta)) for p in self.parts]
        return MessageView(self.msg_id, self.role, self.name, self.timestamp, parts, self.pinned)

    def ids(self) -> list[str]:
        """A stable id per part (new parts get one when first asked)."""
        while len(self.part_ids) < len(self.parts):
            self.part_ids.append(f"p{next(_ids)}")
        return self.part_ids


def user(content: str) -> FakeMessage:
    return FakeMessage("user", [PartView("text", content)], name="user")


def text(content: str) -> PartView:
    return PartView("text", content)


def call(call_id: str, name: str = "tool", tool_input: str = "{}") -> PartView:
    return PartView(
        "tool_call", f"{name} {tool_input}", call_id=call_id, tool_name=name, tool_input=tool_input
    )


def result(call_id: str, output: str, name: str = "tool", **meta: Any) -> PartView:
    return PartView(
        "tool_result",
        f"{name} {output}",
        call_id=call_id,
        tool_name=name,
        output=(output,),
        meta=dict(meta),
    )


def _part_dict(part: PartView) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": part.kind, "text": part.text}
    for name in ("call_id", "tool_name", "tool_input"):
        if getattr(part, name) is not None:
            data[name] = getattr(part, name)
    if part.kind == "tool_result":
        data["output"] = [p for p in part.output if isinstance(p, str)]
        data["meta"] = part.meta
    return data


def _message_of(data: Mapping[str, Any], number: int) -> FakeMessage:
    """A message as ``archive_record`` wrote it (``ValueError`` when it is not one)."""
    role, content = data.get("role"), data.get("content")
    if role not in ("user", "assistant", "system") or not isinstance(content, list):
        raise ValueError(f"message {number} is not a fake message (role and content)")
    parts = []
    for part in content:
        if not isinstance(part, dict) or part.get("kind") not in PART_KINDS + ("thinking",):
            raise ValueError(f"message {number} has a part that is not a fake part: {part!r}")
        parts.append(
            PartView(
                part["kind"],
                str(part.get("text", "")),
                call_id=part.get("call_id"),
                tool_name=part.get("tool_name"),
                tool_input=part.get("tool_input"),
                output=tuple(part.get("output", ())),
                meta=dict(part.get("meta", {})),
            )
        )
    return FakeMessage(role, parts, msg_id=str(data.get("id")), name=str(data.get("name", "")))


class FakeHost:
    """Implements :class:`~.protocol.HostSession` over :class:`FakeMessage` s."""

    def __init__(
        self,
        messages: Sequence[FakeMessage] = (),
        *,
        window: int = 32768,
        model_name: str = "gpt-4o",
        system_prompt: str = "You are a careful assistant.",
        tool_schemas: str = "",
        compactor: CompactorModel | None = None,
    ) -> None:
        self.messages = list(messages)
        self.summary = ""
        self.system_prompt = system_prompt
        self.tool_schemas = tool_schemas
        self._window = window
        self._model_name = model_name
        self._compactor = compactor
        self._state: dict[str, Any] = {}
        self._scratch: dict[str, Any] = {}
        self._session = "session-1"
        self.awaiting = False
        self.status_lines: list[str] = []
        self.model_inputs: list[object] = []  # what the engine measured calls with
        self.edited_outside = True  # a test may edit any message before any step

    @property
    def session_id(self) -> str:
        return self._session

    @property
    def agent_name(self) -> str:
        return "agent"

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def state(self) -> MutableMapping[str, Any]:
        return self._state

    @property
    def scratch(self) -> dict[str, Any]:
        return self._scratch

    @property
    def model_key(self) -> str | None:
        return None

    @property
    def primary_model_key(self) -> str | None:
        return None

    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        return [(m.msg_id, len(m.parts)) for m in self.messages[start:]]

    def part_objects(self, start: int = 0) -> list[list[PartView]] | None:
        return [m.parts for m in self.messages[start:]]

    def others_may_edit(self) -> bool:
        return self.edited_outside

    def context_key(self) -> tuple[int, int]:
        return id(self.messages), len(self.messages)

    def view(self, index: int, first_part: int = 0) -> MessageView:
        msg = self.messages[index]
        parts = [replace(p, meta=dict(p.meta)) for p in msg.parts[first_part:]]
        return MessageView(msg.msg_id, msg.role, msg.name, msg.timestamp, parts, msg.pinned)

    async def fixed_parts(self) -> FixedParts:
        return FixedParts(self.system_prompt, self.summary, self.tool_schemas)

    def use_model_input(self, model_input: object) -> None:
        self.model_inputs.append(model_input)

    def window(self) -> Window:
        return Window(self._window, "test")

    def compactor_model(self) -> CompactorModel | None:
        return self._compactor

    def has_separate_summary_model(self) -> bool:
        return self._compactor is not None

    def set_tool_result(
        self, index: int, part: int, output: Sequence[Any], meta: dict[str, Any]
    ) -> None:
        # Edited in place, as both AgentScope adapters edit their blocks.
        block = self.messages[index].parts[part]
        texts = [p for p in output if isinstance(p, str)]
        block.text = f"{block.tool_name} " + "\n".join(texts)
        block.output = tuple(output)
        block.meta = dict(meta)

    def set_text(self, index: int, part: int, content: str) -> None:
        self.messages[index].parts[part].text = content

    def data_url(self, index: int, part: int) -> str:
        return str(self.messages[index].parts[part].meta.get("url", "data:image/png;base64,"))

    def set_data_text(self, index: int, part: int, content: str) -> None:
        self.messages[index].parts[part] = PartView("text", content)

    def archive_record(self, index: int, parts: Sequence[int] | None) -> ArchiveRecord:
        msg = self.messages[index]
        chosen = msg.parts if parts is None else [msg.parts[i] for i in parts]
        positions = range(len(msg.parts)) if parts is None else parts
        ids = msg.ids()
        keys = [f"{msg.msg_id}/{msg.parts[i].kind}:{ids[i]}" for i in positions]
        return ArchiveRecord(
            message={
                "id": msg.msg_id,
                "role": msg.role,
                "name": msg.name,
                "content": [_part_dict(p) for p in chosen],
            },
            timestamp=msg.timestamp,
            archive_id=f"{msg.msg_id}#{abs(hash(json.dumps(keys))) % 10**12}",
            form="fake",
            part_keys=tuple(keys),
        )

    async def commit(self, keep: Sequence[tuple[int, Sequence[int] | None]]) -> None:
        kept: list[FakeMessage] = []
        for index, parts in keep:
            msg = self.messages[index]
            if parts is not None:
                ids = msg.ids()
                msg = replace(
                    msg, parts=[msg.parts[i] for i in parts], part_ids=[ids[i] for i in parts]
                )
            kept.append(msg)
        self.messages = kept

    def summary_text(self) -> str:
        return self.summary

    async def set_summary(self, content: str) -> None:
        self.summary = content

    async def clear(self, *, new_session: bool) -> None:
        self.messages = []
        self.summary = ""
        if new_session:
            self._session = f"session-{next(_ids)}"

    def awaiting_confirmation(self) -> bool:
        return self.awaiting

    @property
    def message_form(self) -> str:
        return "fake"

    def views_of(self, messages: Sequence[Mapping[str, Any]]) -> list[MessageView]:
        return [_message_of(data, index).view() for index, data in enumerate(messages, 1)]

    async def load_context(self, messages: Sequence[Mapping[str, Any]], summary: str) -> None:
        self.messages = [_message_of(data, i) for i, data in enumerate(messages, 1)]
        self.summary = summary

    async def show_status(self, line: str) -> None:
        self.status_lines.append(line)


PART_KINDS: tuple[PartKind, ...] = ("text", "tool_call", "tool_result")


def engine_config(window: int = 4000, **light: Any) -> RunningConfig:
    """A running config for engine tests: ``window`` tokens, o200k_base, no memory summaries."""
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": {"summarise_on_compact": False},
                "light_context_config": {"token_counter": "o200k_base", **light},
            }
        }
    )
