"""The Summary model: parse and render, merge, carry-over, keeping previous items, fitting."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.summary import (
    SECTION_TITLES,
    Block,
    ExtractedFacts,
    Summary,
    carry_facts,
    fit,
    is_placeholder,
    keep_previous,
    merge,
    section_index,
    subsection_index,
    trim,
    validate_summary,
)
from copaw_context.core.summary.language import SECTION_KEYS
from copaw_context.core.summary.markdown import item_key
from copaw_context.core.summary.model import ITEM_KEYS
from tests.helpers import six_section_summary
from tests.prompt_summaries import GOOD_EN, GOOD_ZH

# ----------------------------------------------------------------- generated summaries

_text = st.builds(
    lambda first, rest: (first + rest).rstrip(),
    st.sampled_from("AbZ中"),
    st.text(alphabet="ab z09 .,:()/_`中文", max_size=24),
)
_bullet = st.tuples(st.sampled_from(["- ", "* ", "- [x] ", "- [ ] ", "2. "]), _text).map("".join)
_continued = st.tuples(_bullet, _text).map(lambda parts: f"{parts[0]}\n  {parts[1]}")
_paragraph = st.one_of(_text, st.tuples(_text, _text).map("\n".join))
_item = st.one_of(_bullet, _bullet, _continued, _paragraph)
_items = st.lists(_item, max_size=4)
_unknown_title = st.sampled_from(["Open Questions", "Risks", "Notes for later", "附录"])
_blocks = st.lists(st.builds(Block, title=_unknown_title, items=_items), max_size=2)


_either_language = st.sampled_from(["en", "zh"])


def _renumbered(items: list[str]) -> list[str]:
    """``items`` as rendered in Next Steps: the numbered ones numbered from 1."""
    out: list[str] = []
    number = 0
    for item in items:
        if item.startswith("2. "):
            number += 1
            item = f"{number}. {item[3:]}"
        out.append(item)
    return out


@st.composite
def summaries(draw: Any, language: Any = _either_language) -> Summary:
    """A Summary built here (canonical layout) with arbitrary well-formed items."""
    lists = {key: draw(_items) for key in ITEM_KEYS}
    return Summary(
        language=draw(language),
        **lists,
        progress_other=draw(_blocks),
        other=draw(_blocks),
    )


def test_generated_titles_are_unknown() -> None:
    for title in ("Open Questions", "Risks", "Notes for later", "附录"):
        assert section_index(title) is None and subsection_index(title) is None


@settings(max_examples=200, deadline=None)
@given(summary=summaries())
def test_render_parse_render_is_a_fixed_point(summary: Summary) -> None:
    text = summary.render()
    parsed = Summary.parse(text, summary.language)
    assert parsed.render() == text
    # nothing was lost on the way: the parsed items, laid out canonically, give the same text
    assert parsed.canonical().render() == text
    assert parsed.written_sections() == set(SECTION_KEYS)


@settings(max_examples=100, deadline=None)
@given(summary=summaries(language=st.just("en")))
def test_a_summary_reads_back_in_either_language(summary: Summary) -> None:
    english = summary.render("en")
    chinese = summary.render("zh")
    assert f"## {SECTION_TITLES['zh'][0]}" in chinese and "## Goal" in english
    for text, none in ((english, "- (none)"), (chinese, "- （无）")):
        parsed = Summary.parse(text)
        for key in ITEM_KEYS:
            items = summary.items(key)
            if key == "next_steps":
                items = _renumbered(items)
            empty = [] if key in ("preamble", "progress_notes") else [none]
            assert parsed.items(key) == (items or empty), key


def test_parse_reads_the_six_sections_of_a_reply_in_english_and_chinese() -> None:
    for text, language in ((GOOD_EN, "en"), (GOOD_ZH, "zh")):
        summary = Summary.parse(text, language)  # type: ignore[arg-type]
        assert summary.written_sections() == set(SECTION_KEYS)
        assert len(summary.goal) == 1 and "count_items()" in summary.goal[0]
        assert summary.done[0].startswith("- [x] ")
        assert summary.in_progress[0].startswith("- [ ] ")
        assert len(summary.blocked) == 1 and is_placeholder(summary.blocked[0])
        assert summary.next_steps[0].startswith("1. ")
        assert summary.critical == ["- E   AssertionError: expected 3, got 4"]
        assert summary.render() == text  # rendered as written
    english = Summary.parse(GOOD_ZH, "en").canonical().render()
    assert english.startswith("## Goal\n修复 /repo/src/app/main.py")
    assert "### In Progress\n- [ ] 修改 `count_items()`" in english


def test_parse_is_lenient_and_keeps_what_it_does_not_know() -> None:
    reply = (
        "```markdown\n"
        "Here is the summary.\n\n"
        "# 🎯 Goals: ship it\n"
        "- and test it\n\n"
        "# Constraints\n- no new deps\n\n"
        "# Progress\nall going well\n## Completed\n- [x] parser\n## Later\n- docs\n\n"
        "# Open Questions\n- which Python?\n\n"
        "# Next Steps\n3. release\n\n"
        "# Goal\n- a second goal heading\n"
        "```"
    )
    summary = Summary.parse(reply)
    assert summary.layout is not None and summary.layout.level == 1
    assert summary.preamble == ["Here is the summary."]
    assert summary.goal == ["ship it", "- and test it", "- a second goal heading"]
    assert summary.constraints == ["- no new deps"]
    assert summary.progress_notes == ["all going well"] and summary.done == ["- [x] parser"]
    assert summary.progress_other == [Block(title="Later", items=["- docs"], heading="## Later")]
    assert [block.title for block in summary.other] == ["Open Questions"]
    assert summary.next_steps == ["3. release"]
    assert summary.written_sections() == {"goal", "constraints", "progress", "next_steps"}
    rendered = summary.render()
    for line in reply.split("\n")[1:-1]:
        assert line in rendered.split("\n")  # every line as written, the fence aside
    canonical = summary.canonical().render()
    assert canonical.startswith("Here is the summary.\n\n## Goal\nship it\n\n- and test it\n")
    assert "### Later\n- docs" in canonical and "1. release" in canonical


def test_placeholders_in_both_languages() -> None:
    summary = Summary.parse("## 目标\n- （无）\n## Goal\n(none)\n## 下一步\n1. None.", "zh")
    assert all(is_placeholder(item) for item in summary.goal + summary.next_steps)


# ----------------------------------------------------------------- merge


def test_merge_unions_sections_moves_finished_items_and_keeps_unknown_ones() -> None:
    previous = Summary.parse(GOOD_EN + "\n## Open Questions\n- which Python?\n")
    new = Summary(
        goal=["Fix the off-by-one in `count_items()` of /repo/src/app/main.py."],
        done=["- [x] Patch `count_items()`"],
        in_progress=["- [ ] Add the regression test"],
        next_steps=["1. Commit", "1. Push"],
        other=[Block(title="Open Questions", items=["- which OS?"])],
    )
    merged = merge(previous, new)
    assert merged.layout is None and len(merged.goal) == 1
    assert merged.done == ["- [x] Read /repo/src/app/main.py", "- [x] Patch `count_items()`"]
    assert merged.in_progress == ["- [ ] Add the regression test"]
    assert merged.blocked == ["- (none)"]
    assert merged.other == [Block(title="Open Questions", items=["- which Python?", "- which OS?"])]
    text = merged.render()
    assert "## Next Steps\n1. Run `pytest -q tests/test_main.py`\n2. Commit\n3. Push\n" in text
    assert validate_summary(text) is None
    assert merge(merged, new).render() == text  # nothing new: no growth


@settings(max_examples=100, deadline=None)
@given(previous=summaries(language=st.just("en")), new=summaries(language=st.just("en")))
def test_merge_keeps_every_real_item(previous: Summary, new: Summary) -> None:
    merged = merge(previous, new)
    kept = {item_key(item) for item in merged.section_items()} | set(map(item_key, merged.preamble))
    finished = {item_key(item) for item in merged.done}
    for summary in (previous, new):
        for key in ITEM_KEYS:
            for item in summary.items(key):
                if not is_placeholder(item):
                    assert item_key(item) in kept or (key == "in_progress" and item in finished)
    assert merge(merged, new).render() == merged.render()


# ----------------------------------------------------------------- carry and keep


def test_carry_facts_adds_only_what_is_missing_and_keeps_the_layout() -> None:
    reply = Summary.parse("# Goal\nFix it.\n\n# Critical Context\n- see /a/b.py\n")
    facts = ExtractedFacts(
        constraints=("Never push.",), error_lines=("E   boom",), file_paths=("/a/b.py",)
    )
    carried = carry_facts(reply, facts)
    assert carried.critical == [
        "- see /a/b.py",
        "- Constraints (verbatim):\n  - Never push.",
        "- Errors (verbatim):\n  - E   boom",
    ]
    assert carried.render().startswith("# Goal\nFix it.\n\n# Critical Context\n- see /a/b.py\n")
    assert carry_facts(carried, facts) is carried
    assert carry_facts(reply, ExtractedFacts(file_paths=("/a/b.py",))) is reply


def test_carry_facts_keeps_a_fact_whole_when_rendering_would_split_it() -> None:
    summary = Summary.parse("## Goal\n- a\n\n## Critical Context\n- x\n\n## Extra\n- y\n")
    fact = "- x\n\n## Extra"  # spans the end of Critical Context in the text
    carried = carry_facts(summary, ExtractedFacts(constraints=(fact, "new")))
    text = carried.render()
    assert fact in text and "- Constraints (verbatim):\n  - new" in text
    assert carried.critical[-1] == "- Verbatim:\n  - " + fact


def test_keep_previous_restores_items_and_replaces_placeholders() -> None:
    previous = Summary.parse(GOOD_EN)
    reply = Summary.parse(
        "## Goal\nAdd a test.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n"
        "### Done\n- [x] Patched\n\n## Key Decisions\n- pytest\n\n## Next Steps\n1. Commit\n\n"
        "## Critical Context\n- E   AssertionError: expected 3, got 4\n"
    )
    kept = keep_previous(reply, previous)
    assert kept.goal == ["Add a test.", previous.goal[0]]
    assert kept.constraints == ["- never touch prod.yaml"]
    assert kept.critical == reply.critical  # already there
    assert kept.done == reply.done and kept.layout == reply.layout
    assert "## Constraints & Preferences\n- never touch prod.yaml\n" in kept.render()
    assert keep_previous(kept, previous) is kept
    assert keep_previous(reply, Summary()) is reply


# ----------------------------------------------------------------- fit


@settings(max_examples=60, deadline=None)
@given(
    summary=summaries(),
    max_chars=st.integers(2000, 6000),
    long_items=st.lists(st.integers(100, 3000), max_size=6),
)
def test_fit_is_within_the_budget_and_keeps_the_six_sections(
    summary: Summary, max_chars: int, long_items: list[int]
) -> None:
    done = [f"- [x] step {i}: " + "x" * size for i, size in enumerate(long_items)]
    summary = summary.model_copy(update={"done": [*summary.done, *done]})
    text = fit(summary, max_chars).text()
    assert len(text) <= max_chars
    if len(summary.render()) <= max_chars:
        assert text == summary.render()
    assert Summary.parse(text).written_sections() == set(SECTION_KEYS)


def test_trim_leaves_out_old_items_but_never_protected_ones() -> None:
    summary = Summary.parse(six_section_summary(500))
    task = summary.goal[0]
    trimmed = trim(summary, {item_key(task)}, 3000)
    text = trimmed.render()
    assert len(text) <= 3000 and trimmed.layout is None
    assert trimmed.goal == [task]
    assert "Finished step 00499" in text and "Finished step 00000" not in text
    assert trimmed.critical[-1].startswith("- Older items were left out")
    assert trim(summary, set(), 10**6).render() == summary.canonical().render()
