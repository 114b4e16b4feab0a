from __future__ import annotations

from copaw_context.core.fresh_share import shared_cap


def test_small_results_keep_whole_and_the_rest_share_equally() -> None:
    sizes = [100, 200, 5000, 9000]
    cap = shared_cap(sizes, 3300)
    assert cap == 1500
    assert sum(min(size, cap) for size in sizes) <= 3300


def test_everything_fits_and_no_room() -> None:
    assert shared_cap([10, 20], 1000) == 20
    assert shared_cap([10, 20], 0) == 0
    assert shared_cap([], 50) == 0
