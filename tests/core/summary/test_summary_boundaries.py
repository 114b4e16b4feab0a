"""One ``Summary`` crosses a compaction (issue 18 item 4): the model's reply and the previous
summary are each parsed once, and the new summary is rendered once, however many steps
(validation, carry-over, cleaning, fit, the room, the archive, the event) read it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import CompactionRecord
from copaw_context.core.summary import model as summary_model
from copaw_context.core.summary import split_summary_message
from copaw_context.testing import ScriptedTextModel
from tests.fake_host import FakeHost, FakeMessage, call, result, text, user
from tests.fake_host import engine_config as config
from tests.summaries import six_section_summary

REPLY = six_section_summary(3)


def _turns(round_: int) -> list[FakeMessage]:
    messages: list[FakeMessage] = []
    for n in range(14):
        cid = f"r{round_}c{n}"
        messages.append(user(f"question {round_}.{n}: Never touch vendor/. " + "details " * 120))
        messages.append(
            FakeMessage(
                "assistant",
                [text(f"checking {n}"), call(cid, "grep"), result(cid, "match " * 120, "grep")],
            )
        )
    return messages


class _Calls:
    """What Summary.parse and Summary.render were given and gave while counting."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed: Counter[str] = Counter()
        self.rendered: Counter[str] = Counter()
        self.counting = False
        parse, render = summary_model._parse, summary_model._render

        def counted_parse(markdown: str, language: str) -> object:
            if self.counting:
                self.parsed[markdown] += 1
            return parse(markdown, language)  # type: ignore[arg-type]

        def counted_render(summary: summary_model.Summary, language: str) -> str:
            out = render(summary, language)  # type: ignore[arg-type]
            if self.counting:
                self.rendered[out] += 1
            return out

        monkeypatch.setattr(summary_model, "_parse", counted_parse)
        monkeypatch.setattr(summary_model, "_render", counted_render)


@pytest.mark.parametrize("compactor", ["llm", "extractive"])
async def test_a_compaction_parses_each_text_once_and_renders_the_summary_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compactor: str
) -> None:
    calls = _Calls(monkeypatch)
    records: list[CompactionRecord] = []
    engine = ContextEngine(config(4000, compactor=compactor), tmp_path)
    engine.add_compaction_listener(records.append)
    model = ScriptedTextModel([REPLY] * 4) if compactor == "llm" else None
    host = FakeHost(_turns(0), window=4000, compactor=model)
    first = await engine.before_reasoning(host)
    assert first is not None and first.kind == "compaction"
    previous = engine.context.state(host).summary
    assert previous
    host.messages += _turns(1)

    calls.counting = True
    event = await engine.before_reasoning(host)
    calls.counting = False

    assert event is not None and event.kind == "compaction" and event.method == compactor
    summary = engine.context.state(host).summary
    assert summary and summary != previous  # the facts of the new turns were carried in
    assert split_summary_message(host.summary) == summary == records[-1].summary
    expected = {previous: 1, REPLY: 1} if compactor == "llm" else {previous: 1}
    assert dict(calls.parsed) == expected, "each text that comes in is parsed once"
    assert calls.rendered[summary] == 1, "the new summary is rendered once"
    await engine.close()
