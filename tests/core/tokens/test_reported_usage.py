"""One rule for when reported usage is a full prompt count, whichever adapter reads it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from copaw_context.core.tokens.usage import ReportedUsage


def test_cached_tokens_inside_the_input_count_once() -> None:
    assert ReportedUsage(1200, cache_read_tokens=800).prompt_tokens() == 1200


def test_cached_tokens_counted_apart_are_added() -> None:
    usage = ReportedUsage(100, cache_read_tokens=900, cache_write_tokens=200, cache_apart=True)
    assert usage.prompt_tokens() == 1200


def test_a_cached_share_over_the_input_can_only_be_apart() -> None:
    assert ReportedUsage(100, cache_read_tokens=900).prompt_tokens() == 1000


def test_a_share_counted_apart_and_dropped_is_no_full_count() -> None:
    dropped = ReportedUsage(100, cache_read_tokens=None, cache_write_tokens=None, cache_apart=True)
    assert dropped.prompt_tokens() is None
    assert ReportedUsage(1200, None, None).prompt_tokens() == 1200


def test_no_figure_is_no_count() -> None:
    assert ReportedUsage(None).prompt_tokens() is None
    assert ReportedUsage(0, cache_read_tokens=500).prompt_tokens() is None


@given(
    st.integers(1, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.booleans(),
)
def test_the_count_is_never_below_the_input_nor_above_everything(
    reported: int, read: int, write: int, apart: bool
) -> None:
    count = ReportedUsage(reported, read, write, apart).prompt_tokens()
    assert count is not None and reported <= count <= reported + read + write
