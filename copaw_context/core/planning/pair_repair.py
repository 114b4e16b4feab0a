"""Repair the tool call/result pairing of a model input the host holds broken.

A host's own history (its memory, a saved session, a process killed during a tool run) can
hold what no provider accepts: a result before its call or far from it, a result with no
call, two open calls with one id, a call never answered. ``/load_history`` refuses such
files; this plan repairs the *input* of each model call instead, leaving the host's memory
as it is (nothing is lost: what the input leaves out stays in the memory, and is archived
with it when compacted):

- a result with no call (or a second result) is left out of the input;
- a result before its call, or not in the run of results right after its call, is moved there;
- a second open call with an id in use gets a unique id (with its result);
- a call with no result gets a synthetic one: *abandoned* when the turn moved on (a later
  user request, or anything but results after it: a killed run, a lost result), *unfinished*
  when it is the current step's (nothing after it: its result is still coming). Both
  majors of AgentScope do the same when a reply is interrupted ("The tool call has been
  interrupted by the user."), as does LangChain's ``PatchToolCallsMiddleware``.

The plan is host-neutral: an adapter lists each message's blocks as :class:`RepairBlock` s
and builds the input from the :class:`RepairPlan`. Calls and results pair by occurrence
(:func:`~copaw_context.core.planning.pairing.pair_by_occurrence`), so reused ids stay valid.
"""

from __future__ import annotations

import logging
from collections.abc import MutableSet, Sequence
from dataclasses import dataclass, field
from typing import Literal

from copaw_context.core.planning.pairing import pair_by_occurrence

__all__ = [
    "ABANDONED_TEXT",
    "UNFINISHED_TEXT",
    "Missing",
    "PlannedMessage",
    "Repair",
    "RepairBlock",
    "RepairPlan",
    "SYNTHETIC_RESULT_TOKENS",
    "is_request",
    "log_repairs",
    "plan_repair",
]

ABANDONED_TEXT = (
    "[copaw-context] This tool call has no recorded result: the conversation moved on "
    "without it (e.g. the run was interrupted). It may or may not have run; call it again "
    "if its result is needed."
)
"""The synthetic result of a call the turn moved on from."""

UNFINISHED_TEXT = (
    "[copaw-context] This tool call has no result yet (it may still be running); do not "
    "assume its outcome."
)
"""The synthetic result of a call of the current step, whose result has not arrived."""

logger = logging.getLogger("copaw_context")

SYNTHETIC_RESULT_TOKENS = len(ABANDONED_TEXT) // 3 + 8
"""What a synthetic result costs in the input, generously (about 4 characters a token, plus
the tool's name and the block overhead): counted for every call no result answers."""

BlockKind = Literal["call", "result", "hint", "other"]
RepairKind = Literal["orphan", "moved", "renamed", "abandoned", "unfinished"]


@dataclass(frozen=True, slots=True)
class RepairBlock:
    """One content block as the repair sees it: a tool call or result (with its id), a
    host hint (2.x: a turn of its own), or anything else (text, thinking, data)."""

    kind: BlockKind
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Missing:
    """A synthetic result for the call at ``call`` (message, block)."""

    call: tuple[int, int]
    unfinished: bool

    @property
    def text(self) -> str:
        return UNFINISHED_TEXT if self.unfinished else ABANDONED_TEXT


BlockRef = tuple[int, int] | Missing
"""A source block (message, block) or a synthetic result."""


@dataclass(slots=True)
class PlannedMessage:
    """One message of the repaired input: a source message (``source``), its blocks in
    order, or (``source`` None) a new message of results placed after source ``after``."""

    source: int | None
    blocks: list[BlockRef]
    after: int = -1


@dataclass(frozen=True, slots=True)
class Repair:
    """One thing the plan changed, for the log: what, which call id, at which block."""

    kind: RepairKind
    call_id: str
    at: tuple[int, int]


@dataclass(slots=True)
class RepairPlan:
    """The repaired input: ``messages`` in order, new ids by source block, the repairs."""

    messages: list[PlannedMessage]
    renamed: dict[tuple[int, int], str] = field(default_factory=dict)
    repairs: list[Repair] = field(default_factory=list)

    def changed(self, index: int, count: int) -> bool:
        """Whether planned message ``index`` differs from its source (``count`` blocks)."""
        planned = self.messages[index]
        if planned.source is None:
            return True
        expected = [(planned.source, b) for b in range(count)]
        if planned.blocks != expected:
            return True
        return any((planned.source, b) in self.renamed for b in range(count))


def is_request(role: str, blocks: Sequence[RepairBlock]) -> bool:
    """Whether a message is a user request for :func:`plan_repair`: a user message holding
    no tool call or result (1.x and ReMe keep results in user-role messages)."""
    return role == "user" and all(block.kind == "other" for block in blocks)


def plan_repair(
    messages: Sequence[Sequence[RepairBlock]],
    *,
    requests: Sequence[bool],
    inline_results: bool,
) -> RepairPlan | None:
    """The repaired input of ``messages`` (per message its blocks), or None when it needs
    none. ``requests[i]``: message i is a user request. ``inline_results``: a result may sit
    in its call's message, after it (AgentScope 2.x); else results go in messages of their
    own after the call's message (1.x formats a message's results before its calls)."""
    flat = [(mi, bi) for mi, blocks in enumerate(messages) for bi in range(len(blocks))]
    sequence = []
    for mi, bi in flat:
        block = messages[mi][bi]
        cid = frozenset({block.call_id}) if block.call_id else frozenset[str]()
        sequence.append(
            (
                cid if block.kind == "call" else frozenset[str](),
                cid if block.kind == "result" else frozenset[str](),
            )
        )
    pairing = pair_by_occurrence(sequence)
    repairs: list[Repair] = []
    renamed: dict[tuple[int, int], str] = {}
    result_of = {call: result for _, call, result in pairing.pairs}
    used = {messages[mi][bi].call_id for mi, bi in flat} - {None}
    for call_id, index, _earlier in pairing.duplicates:
        new = _unique(call_id, used)
        renamed[flat[index]] = new
        if index in result_of:
            renamed[flat[result_of[index]]] = new
        repairs.append(Repair("renamed", call_id, flat[index]))
    if not inline_results:  # results leave their call's message: reused ids there collide
        _rename_reused(messages, flat, renamed, result_of, used, repairs)
    unanswered = [index for _, index in pairing.unanswered]
    placed: dict[int, list[BlockRef]] = {}  # call flat index -> results to place after it
    removed: set[tuple[int, int]] = set()
    for call_id, index in pairing.orphans:
        later = next(
            (
                c
                for c in unanswered
                if c > index
                and flat[c] not in renamed
                and messages[flat[c][0]][flat[c][1]].call_id == call_id
            ),
            None,
        )
        removed.add(flat[index])
        if later is None:
            repairs.append(Repair("orphan", call_id, flat[index]))
            continue
        unanswered.remove(later)
        placed.setdefault(later, []).append(flat[index])
        repairs.append(Repair("moved", call_id, flat[index]))
    for _, call, result in pairing.pairs:
        if not _in_place(messages, flat[call], flat[result], inline_results):
            removed.add(flat[result])
            placed.setdefault(call, []).append(flat[result])
            call_id = messages[flat[call][0]][flat[call][1]].call_id or ""
            repairs.append(Repair("moved", call_id, flat[result]))
    last_request = max((i for i, r in enumerate(requests) if r), default=-1)
    for index in unanswered:
        mi, bi = flat[index]
        unfinished = mi > last_request and _nothing_after(messages, mi, bi)
        placed.setdefault(index, []).append(Missing((mi, bi), unfinished))
        kind: RepairKind = "unfinished" if unfinished else "abandoned"
        repairs.append(Repair(kind, messages[mi][bi].call_id or "", (mi, bi)))
    if not repairs:
        return None
    if inline_results:
        _gather_groups(messages, flat, placed, removed, result_of)
    return RepairPlan(_build(messages, flat, placed, removed, inline_results), renamed, repairs)


def _unique(call_id: str, used: set[str | None]) -> str:
    k = 2
    while f"{call_id}_{k}" in used:
        k += 1
    used.add(f"{call_id}_{k}")
    return f"{call_id}_{k}"


def _rename_reused(
    messages: Sequence[Sequence[RepairBlock]],
    flat: Sequence[tuple[int, int]],
    renamed: dict[tuple[int, int], str],
    result_of: dict[int, int],
    used: set[str | None],
    repairs: list[Repair],
) -> None:
    """A call reusing the id of an earlier call of its own message gets a unique id (1.x
    formats a message's calls together: both would be open at once)."""
    position = {pos: index for index, pos in enumerate(flat)}
    for mi, blocks in enumerate(messages):
        ids: set[str] = set()
        for bi, block in enumerate(blocks):
            if block.kind != "call" or not block.call_id:
                continue
            if block.call_id in ids and (mi, bi) not in renamed:
                new = _unique(block.call_id, used)
                renamed[(mi, bi)] = new
                result = result_of.get(position[(mi, bi)])
                if result is not None:
                    renamed[flat[result]] = new
                repairs.append(Repair("renamed", block.call_id, (mi, bi)))
            ids.add(block.call_id)


def _run_ok(blocks: Sequence[RepairBlock]) -> bool:
    """Whether ``blocks`` keep a call group's run of results open: no hint, and nothing but
    results once a result came (anything else starts a new turn of the formatter)."""
    seen_result = False
    for block in blocks:
        if block.kind == "hint":
            return False
        if block.kind == "result":
            seen_result = True
        elif seen_result:
            return False
    return True


def _in_place(
    messages: Sequence[Sequence[RepairBlock]],
    call: tuple[int, int],
    result: tuple[int, int],
    inline: bool,
) -> bool:
    """Whether the result at ``result`` is in the run of results right after its call."""
    (mc, bc), (mr, br) = call, result
    if mr == mc:
        return inline and br > bc and _run_ok(messages[mc][bc + 1 : br])
    if mr < mc or (inline and not _run_ok(messages[mc][bc + 1 :])):
        return False
    between = (b for m in messages[mc + 1 : mr] for b in m)
    return all(b.kind == "result" for b in between) and all(
        b.kind == "result" for b in messages[mr][:br]
    )


def _nothing_after(messages: Sequence[Sequence[RepairBlock]], mi: int, bi: int) -> bool:
    """Whether only calls and results follow the call at (mi, bi): its step has not ended."""
    rest = [*messages[mi][bi + 1 :], *(b for m in messages[mi + 1 :] for b in m)]
    return all(b.kind in ("call", "result") for b in rest)


def _insert_at(blocks: Sequence[RepairBlock], bi: int) -> int:
    """Where results go in a call's own message (2.x): after its group and its results."""
    j = bi + 1
    while j < len(blocks) and blocks[j].kind not in ("result", "hint"):
        j += 1
    while j < len(blocks) and blocks[j].kind == "result":
        j += 1
    return j


def _gather_groups(
    messages: Sequence[Sequence[RepairBlock]],
    flat: Sequence[tuple[int, int]],
    placed: dict[int, list[BlockRef]],
    removed: set[tuple[int, int]],
    result_of: dict[int, int],
) -> None:
    """Results placed in a call's message take their group's other results along (2.x
    formats each message on its own: a group's results split over two messages would be
    two user turns for Anthropic)."""
    position = {pos: index for index, pos in enumerate(flat)}
    targets = {(flat[c][0], _insert_at(messages[flat[c][0]], flat[c][1])) for c in placed}
    for mi, at in targets:
        for bi, block in enumerate(messages[mi][:at]):
            index = position[(mi, bi)]
            result = result_of.get(index)
            if block.kind != "call" or result is None or _insert_at(messages[mi], bi) != at:
                continue
            if flat[result] not in removed and flat[result][0] != mi:
                removed.add(flat[result])
                placed.setdefault(index, []).append(flat[result])


def _build(
    messages: Sequence[Sequence[RepairBlock]],
    flat: Sequence[tuple[int, int]],
    placed: dict[int, list[BlockRef]],
    removed: set[tuple[int, int]],
    inline: bool,
) -> list[PlannedMessage]:
    by_message: dict[int, list[tuple[int, list[BlockRef]]]] = {}
    for index in sorted(placed):
        mi, bi = flat[index]
        by_message.setdefault(mi, []).append((bi, placed[index]))
    out: list[PlannedMessage] = []
    for mi, blocks in enumerate(messages):
        extra = by_message.get(mi, [])
        inserts: dict[int, list[BlockRef]] = {}
        after: list[BlockRef] = []
        for bi, refs in extra:
            if inline:
                inserts.setdefault(_insert_at(blocks, bi), []).extend(refs)
            else:
                after.extend(refs)
        kept: list[BlockRef] = []
        for bi in range(len(blocks) + 1):
            kept.extend(inserts.get(bi, []))
            if bi < len(blocks) and (mi, bi) not in removed:
                kept.append((mi, bi))
        if kept or not blocks:  # a message the repair emptied is left out
            out.append(PlannedMessage(mi, kept))
        if after:
            out.append(PlannedMessage(None, after, after=mi))
    return out


_SAID = {
    "orphan": "a tool result for {id!r} with no call (or a second one) is left out of the "
    "model input; it stays in the agent's memory",
    "moved": "the tool result for {id!r} is moved right after its call in the model input "
    "(the host holds it elsewhere)",
    "renamed": "a second open tool call with the id {id!r} gets a unique id in the model input",
    "abandoned": "the tool call {id!r} has no result and the turn moved on: the model input "
    "gets a synthetic result saying none was recorded",
    "unfinished": "the tool call {id!r} of the current step has no result yet: the model input "
    "gets a synthetic result saying so",
}


def log_repairs(plan: RepairPlan, message_ids: Sequence[str], seen: MutableSet[str]) -> None:
    """Log each repair of ``plan`` once per agent (``seen`` keeps what was logged): one
    warning per model input that needed new repairs."""
    said: list[str] = []
    for repair in plan.repairs:
        msg_id = message_ids[repair.at[0]] if repair.at[0] < len(message_ids) else "?"
        key = f"{repair.kind}:{repair.call_id}:{msg_id}"
        if key not in seen:
            seen.add(key)
            said.append(f"{_SAID[repair.kind].format(id=repair.call_id)} (message {msg_id})")
    if said:
        shown = said[:_SHOWN] + ([f"and {len(said) - _SHOWN} more"] if len(said) > _SHOWN else [])
        logger.warning(
            "copaw-context: the host's history breaks tool pairing, which every provider "
            "rejects; the model input is repaired (the memory is unchanged): %s",
            "; ".join(shown),
        )


_SHOWN = 8
