"""The junk checker (issue 21): real junk found by reason, clean summaries left alone, and
the same rules applied by construction (``drop_junk``) leave nothing for it to find."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from copaw_context.core.summary import (
    JUNK_REASONS,
    Summary,
    SummaryCompactor,
    drop_junk,
    find_junk,
    junk_counts,
)
from copaw_context.core.summary.clean import says_nothing
from copaw_context.core.summary.junk_items import dedup_key
from copaw_context.core.tokens import make_token_counter
from scripts.quality.score import score_summary
from scripts.quality.sessions import build_sessions
from tests.prompt_summaries import GOOD_EN, GOOD_ZH
from tests.summaries import PREVIOUS_SUMMARY, six_section_summary

_BEFORE = Path(__file__).with_name("extractive_before_issue21.md").read_text(encoding="utf-8")


def _before() -> dict[str, tuple[str, str]]:
    """name -> (language, summary) of the extractive summaries written before issue 21."""
    parts = re.split(r"(?m)^=== (\S+) \((en|zh)\) ===\n", _BEFORE)
    return {parts[i]: (parts[i + 1], parts[i + 2]) for i in range(1, len(parts), 3)}


def _reasons(text: str, language: str = "en") -> list[tuple[str, str]]:
    return [(j.reason, j.line) for j in find_junk(text, language)]  # type: ignore[arg-type]


def _doc(**sections: str) -> str:
    """A six-section summary with the given section bodies (default "- (none)")."""
    body = {k: "- (none)" for k in ("goal", "cons", "done", "prog", "block", "dec", "next", "crit")}
    body |= sections
    return (
        f"## Goal\n{body['goal']}\n\n## Constraints & Preferences\n{body['cons']}\n\n"
        f"## Progress\n### Done\n{body['done']}\n### In Progress\n{body['prog']}\n"
        f"### Blocked\n{body['block']}\n\n## Key Decisions\n{body['dec']}\n\n"
        f"## Next Steps\n{body['next']}\n\n## Critical Context\n{body['crit']}\n"
    )


# --------------------------------------------------------------------------- real junk


@pytest.mark.parametrize(
    ("sections", "reason", "line"),
    [
        # the lines issue 21 quotes
        ({"cons": "- Never edit files under vendor/.\n- (none)"}, "placeholder", "- (none)"),
        ({"next": "1. Run the tests\n- [ ] None"}, "placeholder", "- [ ] None"),
        ({"prog": "- [ ] None"}, "placeholder", "- [ ] None"),
        ({"prog": "- [ ] 无"}, "placeholder", "- [ ] 无"),
        ({"next": "1. <the next concrete action>"}, "placeholder", "1. <the next concrete action>"),
        ({"next": "1. 下一个具体动作"}, "placeholder", "1. 下一个具体动作"),
        (
            {"dec": "- decision - reason: use papaparse because it handles quoted newlines"},
            "template_prefix",
            "- decision - reason: use papaparse because it handles quoted newlines",
        ),
        ({"dec": "- 决定 - 原因：改用 DictWriter，因为空表也有表头"}, "template_prefix", None),
        # the template's word alone in front, as Qwen2.5-Coder-1.5B wrote it (docs/quality.md)
        (
            {"dec": "- decision - Because it handles quoted newlines, I used papaparse."},
            "template_prefix",
            "- decision - Because it handles quoted newlines, I used papaparse.",
        ),
        ({"dec": "- 决定 - 因为空表也有表头，改用 DictWriter"}, "template_prefix", None),
        (
            {"dec": "- Understood, I'll keep that in mind."},
            "acknowledgement",
            "- Understood, I'll keep that in mind.",
        ),
        ({"dec": "- 好的，我记住了"}, "acknowledgement", "- 好的，我记住了"),
        ({"crit": '- {"path": "src/api.ts", "status": "ok"}'}, "json", None),
        ({"crit": '- 9c878e"},{"ts":"2026","level":"INFO"}'}, "json", None),
        ({"crit": "- Saved.\n- <<<TRUNCATED>>>"}, "notice", "- <<<TRUNCATED>>>"),
        (
            {"done": "- [x] read_file(src/api.ts): ok — 1  buffer item index"},
            "notice",
            "- [x] read_file(src/api.ts): ok — 1  buffer item index",
        ),
        (
            {"done": "- [x] grep(src): ok — src/api.ts:14:    return fetchUser(id);"},
            "notice",
            None,
        ),
        ({"done": "- [x] memory_search: ok — 2 result(s) for 'tok'"}, "notice", None),
        ({"crit": "- Error: \n- File: src/a.py"}, "empty", "- Error:"),
        ({"next": "1. Ship it\n2."}, "empty", "2."),
        (
            {
                "goal": "- Never edit files under vendor/",
                "cons": "- Never edit files under vendor/",
            },
            "duplicate",
            "- Never edit files under vendor/",
        ),
        (
            {
                "block": "- execute_shell_command: error — KeyError: 'created_at'",
                "crit": "- Error: KeyError: 'created_at'",
            },
            "duplicate",
            "- Error: KeyError: 'created_at'",
        ),
        ({"crit": "- File: src/api.ts\n- `src/api.ts`"}, "duplicate", "- `src/api.ts`"),
        (
            {"crit": "- Error: TypeError: x is undefined\n- Error: npm ERR! in workspace @app/web"},
            "error_noise",
            "- Error: npm ERR! in workspace @app/web",
        ),
        (
            {"crit": "- Error: E   assert 3 == 4\n- Error: 1 failed, 22 passed in 0.51s"},
            "error_noise",
            "- Error: 1 failed, 22 passed in 0.51s",
        ),
        (
            {"crit": "- Error: E   assert 3 == 4\n- Error: tests/test_a.py ..F.....  [ 40%]"},
            "error_noise",
            "- Error: tests/test_a.py ..F.....  [ 40%]",
        ),
    ],
)
def test_each_kind_of_junk_is_found_with_its_reason(
    sections: dict[str, str], reason: str, line: str | None
) -> None:
    found = _reasons(_doc(**sections))
    assert [r for r, _ in found] == [reason], found
    if line is not None:
        assert found[0][1].strip() == line.strip()


def test_the_extractive_summaries_written_before_issue_21_are_full_of_junk() -> None:
    """The seeded sessions' summaries as the extractive compactor wrote them before: the
    snippets of read files, the errors twice, the wrappers around the error."""
    before = _before()
    counts = {name: junk_counts(text, lang) for name, (lang, text) in before.items()}  # type: ignore[arg-type]
    assert counts == {
        "web-build": {"notice": 7, "duplicate": 2, "error_noise": 4},
        "go-service": {"notice": 7, "duplicate": 1, "error_noise": 2},
        "export-zh": {"notice": 6, "duplicate": 2, "error_noise": 1},
        "deploy-zh": {"notice": 7, "duplicate": 2},
    }
    web = dict((line, reason) for reason, line in _reasons(before["web-build"][1]))
    assert web["- Error: npm ERR! path /srv/dashboard"] == "error_noise"
    assert web["- Error: Tests:       1 failed, 7 passed, 8 total"] == "error_noise"
    assert web["- [x] read_file(src/api.ts): ok — 1  buffer item index"] == "notice"
    error = "src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable"
    assert web[f"- Error: {error} to parameter of type 'number'."] == "duplicate"
    zh = dict((line, reason) for reason, line in _reasons(*reversed(before["export-zh"])))
    assert zh["- 错误：Traceback (most recent call last):"] == "error_noise"
    assert zh["- 错误：KeyError: 'created_at'"] == "duplicate"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (GOOD_EN, "en"),
        (GOOD_ZH, "zh"),
        (PREVIOUS_SUMMARY, "en"),
        (six_section_summary(30), "en"),
        (_doc(), "en"),  # every section empty: one "(none)" each is no junk
    ],
)
def test_clean_summaries_have_no_junk(text: str, language: str) -> None:
    assert find_junk(text, language) == []  # type: ignore[arg-type]


def test_similar_items_that_say_different_things_are_no_duplicates() -> None:
    text = _doc(
        cons="- Never edit files under src/\n- Never edit files under vendor/\n"
        "- You must keep rule 5.\n- You must keep rule 59.",
        goal="- User request: Fix the parser.",
        next="1. Continue with the user request: Fix the parser.",
        crit="- File: src/api.ts\n- Keep src/api.ts stable",
    )
    assert find_junk(text) == []


async def test_the_seeded_sessions_are_summarised_without_junk_and_keep_every_fact() -> None:
    for session in build_sessions(seed=7, filler=6):
        compactor = SummaryCompactor(
            mode="extractive", counter=make_token_counter("estimate"), language=session.language
        )
        result = await compactor.summarise(session.messages, previous=None, model=None)
        assert find_junk(result.text, session.language) == [], session.name
        score = score_summary(result.text, session.planted, session.language)
        assert all(kept == planted for kept, planted in score.values()), (session.name, score)
        # the construction left the duplicates of the carried errors out, and says so
        assert result.dropped_by_reason.get("duplicate", 0) >= 1, session.name


# --------------------------------------------------------------------------- construction

_JUNK = [
    "- (none)",
    "- [ ] None",
    "- [ ] 无",
    "- <the next concrete action>",
    "- ",
    "- Error: ",
    "- <<<TRUNCATED>>>",
    "- [x] read_file(a.py): ok — 12  def main():",
    "- Understood, I'll keep that in mind.",
    "- 好的，我记住了",
    '- {"a": 1, "b": [2]}',
]
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9)
_REAL = (
    st.lists(_WORDS, min_size=3, max_size=6)
    .map(lambda ws: "- " + " ".join(ws).capitalize())
    # "- Nothing aaa aaa" is a placeholder by the rule (hypothesis drew it on CI): not real
    .filter(lambda item: not says_nothing(item))
    # nor one starting with a label the rule reads past ("- User aaa" says what "- Aaa" says)
    .filter(lambda item: dedup_key(item)[1] == item.removeprefix("- ").casefold())
)
_SECTION = st.lists(st.one_of(st.sampled_from(_JUNK), _REAL), max_size=5)


def _near(one: str, other: str) -> bool:
    """Whether two generated items are duplicates by :mod:`.junk`'s rule."""
    a, b = (" ".join(item.removeprefix("- ").casefold().split()) for item in (one, other))
    short, long = sorted((a, b), key=len)
    if short == long:
        return True
    at_end = long.startswith(short + " ") or long.endswith(" " + short)
    return at_end and len(short) >= 20 and 5 * len(short) >= 4 * len(long)


def test_a_prohibition_under_constraints_is_no_placeholder() -> None:
    prohibitions = ["- No force-push to main", "- Nothing under /etc may be touched"]
    text = _doc(
        cons="\n".join(["- Never edit prod.yaml", *prohibitions, "- No constraints stated"])
    )
    assert [line.line for line in find_junk(text)] == ["- No constraints stated"]
    cleaned, counts = drop_junk(Summary.parse(text))
    assert cleaned.constraints == ["- Never edit prod.yaml", *prohibitions]
    assert counts == {"placeholder": 1}
    # elsewhere such words only say that a section is empty
    assert says_nothing("- No force-push to main") and says_nothing("- Nothing pending")
    assert not says_nothing("- No force-push to main", "constraints")
    assert says_nothing("- No constraints stated", "constraints")


def test_a_near_duplicate_is_judged_by_the_rule_the_property_states() -> None:
    # the example hypothesis found: the second holds the first at its end, 84% as long
    first, second = "- Aaaaaa aaaa aaaaa aaa", "- Aaa aaaaaa aaaa aaaaa aaa"
    assert _near(first, second) and not _near("- Aaa bbb", "- Aaa bbb ccc ddd")
    cleaned, counts = drop_junk(Summary.parse(_doc(crit=f"{first}\n{second}")))
    assert first in cleaned.text() and second not in cleaned.text()
    assert counts == {"duplicate": 1}


def test_a_suffix_one_character_short_of_80_percent_is_no_duplicate() -> None:
    # hypothesis found it in CI: the first is the second's end at 27 of 35 characters (77%)
    first, second = "- Aaaaa aaaaaaa aaaaaaa aaaaa", "- Aaa aaa aaaaa aaaaaaa aaaaaaa aaaaa"
    assert not _near(first, second)
    cleaned, counts = drop_junk(Summary.parse(_doc(crit=f"{first}\n{second}")))
    assert first in cleaned.text() and second in cleaned.text() and not counts
    cleaned, counts = drop_junk(Summary.parse(_doc(crit=f"{second}\n{first}")))
    assert first in cleaned.text() and second in cleaned.text() and not counts


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, min_size=2, max_size=9), st.integers(1, 8), st.booleans(), st.booleans())
@example(["aaa", "aaa", "aaa", "aaa", "aaaaaaaa"], 1, False, False)  # 20 of 24: a duplicate
@example(["aaa", "aaa", "aaaaa", "aaaaaaa", "aaaaaaa", "aaaaa"], 2, False, True)  # 27 of 35
def test_an_end_of_an_item_is_a_duplicate_exactly_when_the_rule_says(
    words: list[str], cut: int, from_start: bool, short_first: bool
) -> None:
    # the rule's edge, tried directly: a word-aligned end of an item, one word short or more
    cut = min(cut, len(words) - 1)
    part = words[:-cut] if from_start else words[cut:]
    whole, end = "- " + " ".join(words).capitalize(), "- " + " ".join(part).capitalize()
    # neither is a placeholder beside a real item ("- None")
    assume(not any(find_junk(_doc(crit=f"- Run the suite\n{one}")) for one in (end, whole)))
    # nor starts with a label the rule reads past ("- User aaa" says what "- Aaa" says)
    plain = [" ".join(one.removeprefix("- ").casefold().split()) for one in (end, whole)]
    assume([dedup_key(one)[1] for one in (end, whole)] == plain)
    pair = (end, whole) if short_first else (whole, end)
    cleaned, counts = drop_junk(Summary.parse(_doc(crit="\n".join(pair))))
    kept = cleaned.items("critical")
    dropped = pair[1] not in kept
    assert pair[0] in kept
    assert dropped == _near(whole, end)
    assert counts == ({"duplicate": 1} if dropped else {})


@settings(max_examples=80, deadline=None)
@given(st.lists(_SECTION, min_size=8, max_size=8))
def test_dropping_junk_leaves_none_and_keeps_every_distinct_real_item(
    sections: list[list[str]],
) -> None:
    keys = ("goal", "cons", "done", "prog", "block", "dec", "next", "crit")
    text = _doc(
        **{k: "\n".join(items) or "- (none)" for k, items in zip(keys, sections, strict=True)}
    )
    doc = Summary.parse(text)
    cleaned, counts = drop_junk(doc)
    assert find_junk(cleaned) == []
    assert set(counts) <= set(JUNK_REASONS)
    real = [item for items in sections for item in items if item not in _JUNK]
    out = cleaned.text()
    # a real item is never junk: it stays, unless it says what a kept one says (the
    # duplicate rule: the same words, or one at an end of the other and 80% as long)
    kept = [item for item in real if item in out]
    assert all(any(_near(item, other) for other in kept) for item in real if item not in out)
    again, more = drop_junk(cleaned)
    assert not more and again is cleaned  # nothing left to drop: the same summary
    if not find_junk(doc):
        assert cleaned is doc and not counts


def test_the_template_word_alone_in_front_is_stripped_and_the_item_kept() -> None:
    text = _doc(dec="- decision - Because it handles quoted newlines, I used papaparse.")
    cleaned, counts = drop_junk(Summary.parse(text))
    assert "- Because it handles quoted newlines, I used papaparse." in cleaned.render()
    assert "decision - " not in cleaned.render() and counts == {"template_prefix": 1}
    for kept in ("- Decision made: papaparse", "- decisions - see below", "- decision-tree lib"):
        assert not _reasons(_doc(dec=kept)), kept  # a word, not the template's slot
