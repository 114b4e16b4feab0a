"""The prompt-cache benchmark's measure (``benchmarks/cache_script.py``): a re-cut's loss split
into the cut result itself and what followed it, and the tokens not served from the cache
split into those sent for the first time and those sent again."""

from __future__ import annotations

import json

from benchmarks.cache_script import Script, fresh_tokens, measure_inputs
from copaw_context.core.tokens import make_token_counter


def _tool(call_id: str, text: str) -> str:
    return json.dumps({"role": "tool", "tool_call_id": call_id, "content": text}, sort_keys=True)


def test_a_re_cut_loses_the_cut_result_and_what_follows_it() -> None:
    tools, system = "[]", json.dumps({"role": "system", "content": "You are terse."})
    long_a, long_b = "alpha line\n" * 400, "beta line\n" * 400
    first = [tools, system, _tool("a", long_a), _tool("b", long_b)]
    # The next input cuts result a to its head and keeps b: b is sent again all the same.
    second = [tools, system, _tool("a", long_a[:200] + "<<<TRUNCATED>>>"), _tool("b", long_b)]
    figures = measure_inputs([first, second])
    counter = make_token_counter("o200k_base")

    def tokens(text: str) -> int:
        return counter.count(text)

    assert figures.breaks == {"re-cut": 1, "compaction": 0, "other": 0}
    lost = figures.lost["re-cut"]
    assert lost > figures.lost_in_cut
    # The cut result's own loss is its previous text beyond the head both share; the
    # follower (b, unchanged) is the rest of the loss.
    assert 0 < figures.lost_in_cut < tokens(first[2])
    assert lost - figures.lost_in_cut >= tokens(first[3])
    assert figures.uncached == figures.input_tokens - figures.reused_tokens
    # Not cached in the second input: the cut text of a (never sent before) and b, sent again.
    assert figures.sent_again == tokens(first[3])
    assert figures.first_sent == figures.uncached - tokens(first[3])
    assert figures.as_dict()["lost_in_cut"] == figures.lost_in_cut
    assert figures.as_dict()["uncached"] == figures.uncached


def test_an_input_that_only_grows_loses_nothing() -> None:
    tools, system = "[]", json.dumps({"role": "system", "content": "You are terse."})
    first = [tools, system, _tool("a", "one\n" * 50)]
    second = [*first, _tool("b", "two\n" * 50)]
    figures = measure_inputs([first, second])
    assert figures.breaks == {"re-cut": 0, "compaction": 0, "other": 0}
    assert figures.lost_in_cut == 0
    # Only the first input and the new result are not cached, each sent for the first time.
    assert figures.uncached == figures.input_tokens - figures.reused_tokens
    assert figures.first_sent == figures.uncached and figures.sent_again == 0
    assert figures.reused_tokens == sum(make_token_counter("o200k_base").count(s) for s in first)


def test_the_fresh_floor_counts_what_the_model_is_shown_of_each_output() -> None:
    outputs = {"q0": "short output\n", "q1": "x" * 120_000}
    script = Script([("request", [("q0",), ("q1",)])], outputs)
    counter = make_token_counter("o200k_base")
    expected = counter.count(outputs["q0"]) + counter.count("x" * 50_000)
    assert fresh_tokens(script) == expected
    assert fresh_tokens(script, 10) == counter.count("short outp") + counter.count("x" * 10)
    # Bytes, not characters: a Chinese character is three; one cut in two is left out.
    wide = Script([("request", [("q0",)])], {"q0": "构建失败" * 10})
    assert fresh_tokens(wide, 7) == counter.count("构建")
