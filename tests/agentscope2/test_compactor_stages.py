"""A compactor with a smaller window than the agent's: its stages are packed up to their
room (the window minus the prompt, the summary carried in and the reply reserve), so one
compaction costs about ``input / room`` calls, not one per message, and what early stages
saw is still in the merged summary."""

from __future__ import annotations

import math
import re

from copaw_context.core.summary import SummaryCompactor
from copaw_context.core.summary.budget import summary_budget_chars
from copaw_context.core.summary.prompts import (
    CONVERSATION_CLOSE,
    CONVERSATION_OPEN,
    render_transcript,
)
from copaw_context.core.summary.staging import chunk_messages
from copaw_context.core.tokens import TiktokenCounter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel

AGENT_WINDOW, COMPACTOR_WINDOW = 32000, 4000
_IDS = re.compile(r"\b(?:FACT|END)-\d+\b")


def _conversation(turns: int) -> list[TranscriptMessage]:
    """``turns`` requests of ~700 tokens and replies of ~300, each with a fact at its start
    and another at its end."""
    out: list[TranscriptMessage] = []
    for t in range(turns):
        ask = f"FACT-{t} q{t} " + "words " * 700 + f"END-{t}"
        reply = f"FACT-{1000 + t} done " + "fine " * 300 + f"END-{1000 + t}"
        out.append(TranscriptMessage("user", "user", (TranscriptPart("text", ask),)))
        out.append(TranscriptMessage("assistant", "bot", (TranscriptPart("text", reply),)))
    return out


def _faithful(request: str) -> str:
    """A compactor that keeps every fact id of its previous summary and of its transcript."""
    ids = sorted(set(_IDS.findall(request)), key=lambda i: (i[0], int(i.split("-")[1])))
    return "\n".join(
        [
            "## Goal",
            "- Answer the questions q0 and on",
            "",
            "## Constraints & Preferences",
            "- (none)",
            "",
            "## Progress",
            "### Done",
            *(f"- [x] noted {i}" for i in ids),
            "### In Progress",
            "- (none)",
            "### Blocked",
            "- (none)",
            "",
            "## Key Decisions",
            "- (none)",
            "",
            "## Next Steps",
            "1. Answer the next question",
            "",
            "## Critical Context",
            "- (none)",
        ]
    )


def _transcript_of(request: str) -> str:
    return request.split(CONVERSATION_OPEN, 1)[1].split(CONVERSATION_CLOSE, 1)[0]


async def test_a_small_compactor_gets_full_stages_and_keeps_early_facts() -> None:
    counter = TiktokenCounter("o200k_base")
    messages = _conversation(22)  # 44 messages, ~22,000 tokens
    model = ScriptedTextModel(context_size=COMPACTOR_WINDOW, default=_faithful)
    cap = summary_budget_chars(AGENT_WINDOW)
    compactor = SummaryCompactor(mode="llm", counter=counter, max_summary_chars=cap)
    result = await compactor.summarise(messages, previous=None, model=model)

    assert result.method == "llm", result.fallback_reason
    assert not any(call.rejected for call in model.calls)
    assert all(call.tokens <= COMPACTOR_WINDOW for call in model.calls)
    # What each request could hold: its window minus all but its transcript, minus the
    # reply reserve (at most a quarter of the window).
    reserve = COMPACTOR_WINDOW // 4
    sent = [counter.count(_transcript_of(call.request)) for call in model.calls]
    rooms = [
        COMPACTOR_WINDOW - (call.tokens - tokens) - reserve
        for call, tokens in zip(model.calls, sent, strict=True)
    ]
    total = sum(counter.count(render_transcript([m])) for m in messages)
    fills = [tokens / room for tokens, room in zip(sent, rooms, strict=True)]
    assert len(model.calls) == result.stages <= math.ceil(total / min(rooms)) + 1, (
        f"{len(model.calls)} compactor calls for {total} tokens, rooms {rooms}"
    )
    assert all(fill >= 0.5 for fill in fills[:-1]), fills
    # Every fact reached the compactor, and the early ones survive the later stages.
    seen = " ".join(_transcript_of(call.request) for call in model.calls)
    expected = {i for m in messages for i in _IDS.findall(m.text())}
    assert set(_IDS.findall(seen)) == expected
    assert expected <= set(_IDS.findall(result.text))


def test_a_message_split_across_stages_keeps_every_word() -> None:
    counter = TiktokenCounter("o200k_base")
    messages = _conversation(4)
    stages = chunk_messages(messages, 900, counter)
    assert len(stages) >= 2
    assert all(counter.count(render_transcript(stage)) <= 900 for stage in stages)
    words = [w for stage in stages for m in stage for w in m.text().split() if w != "[…]"]
    assert words == [w for m in messages for w in m.text().split()]


def test_a_message_larger_than_a_stage_is_still_cut() -> None:
    counter = TiktokenCounter("o200k_base")
    huge = "FACT-1 " + "error: build failed at step 7 " * 2000 + " END-1"
    message = TranscriptMessage("user", "user", (TranscriptPart("text", huge),))
    stages = chunk_messages([message], 1000, counter)
    assert len(stages) == 1 and len(stages[0]) == 1
    shown = render_transcript(stages[0])
    assert counter.count(shown) <= 1000
    assert "characters omitted" in shown and "FACT-1" in shown and "END-1" in shown


def test_messages_of_many_parts_are_split_between_and_inside_parts() -> None:
    counter = TiktokenCounter("o200k_base")
    messages = [
        TranscriptMessage(
            "assistant",
            "bot",
            tuple(
                TranscriptPart("tool_result", f"R-{m}-{i} " + "line of output\n" * 20, "sh", "c")
                for i in range(6)
            ),
        )
        for m in range(6)
    ]
    stages = chunk_messages(messages, 900, counter)
    costs = [counter.count(render_transcript(stage)) for stage in stages]
    assert max(costs) <= 900 and all(cost >= 450 for cost in costs[:-1]), costs
    assert any(len(m.parts) < 6 for stage in stages for m in stage)  # some were split
    words = [w for s in stages for m in s for p in m.parts for w in p.text.split() if w != "[…]"]
    assert words == [w for m in messages for p in m.parts for w in p.text.split()]


class _Recording:
    """A counter that records what it counted."""

    def __init__(self, counter: TiktokenCounter) -> None:
        self.counter = counter
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.counter.name

    def count(self, text: str) -> int:
        self.texts.append(text)
        return self.counter.count(text)


async def test_known_counts_are_not_counted_again_and_stages_still_fit() -> None:
    counter = TiktokenCounter("o200k_base")
    known = [
        TranscriptMessage(
            m.role,
            m.name,
            tuple(
                TranscriptPart(
                    p.kind,
                    p.text,
                    p.tool_name,
                    p.tool_call_id,
                    p.is_error,
                    tokens=counter.count(p.text),
                )
                for p in m.parts
            ),
            m.timestamp,
        )
        for m in _conversation(22)
    ]
    recording = _Recording(counter)
    model = ScriptedTextModel(context_size=COMPACTOR_WINDOW, default=_faithful)
    cap = summary_budget_chars(AGENT_WINDOW)
    compactor = SummaryCompactor(mode="llm", counter=recording, max_summary_chars=cap)  # type: ignore[arg-type]
    result = await compactor.summarise(known, previous=None, model=model)

    assert result.method == "llm", result.fallback_reason
    assert all(call.tokens <= COMPACTOR_WINDOW for call in model.calls)
    assert len(result.calls) == len(model.calls) == result.stages >= 2
    whole = [m.parts[0].text for m in known]
    # Only a message split across two stages is counted (its head); no whole message is.
    assert not [t for t in recording.texts if any(text in t for text in whole)]
    seen = " ".join(_transcript_of(call.request) for call in model.calls)
    expected = {i for m in known for i in _IDS.findall(m.text())}
    assert set(_IDS.findall(seen)) == expected
