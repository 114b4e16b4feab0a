from __future__ import annotations

from copaw_context.core.steps.fresh_share import shared_cap


def test_small_results_keep_whole_and_the_rest_share_equally() -> None:
    sizes = [100, 200, 5000, 9000]
    cap = shared_cap(sizes, 3300)
    assert cap == 1500
    assert sum(min(size, cap) for size in sizes) <= 3300


def test_everything_fits_and_no_room() -> None:
    assert shared_cap([10, 20], 1000) == 20
    assert shared_cap([10, 20], 0) == 0
    assert shared_cap([], 50) == 0


def test_the_combined_layout_starts_each_result_where_its_index_says() -> None:
    """A newline in a tool name or call id (a hostile model) does not shift the starts."""
    from copaw_context.core.host.protocol import PartView
    from copaw_context.core.steps.fresh_share import _layout

    texts = ["one\nline two", "", "three"]
    views = [
        PartView("tool_result", call_id=f"id\n{n}", tool_name="fe\ntch", output=(text,))
        for n, text in enumerate(texts)
    ]
    pieces, starts = _layout(views)
    lines = "\n".join(pieces).split("\n")
    for number, (text, start) in enumerate(zip(texts, starts, strict=True), 1):
        assert lines[start - 1 : start - 1 + text.count("\n") + 1] == text.split("\n")
        assert lines[number] == f"result {number} of 3 (fe tch, call id {number - 1}): line {start}"
