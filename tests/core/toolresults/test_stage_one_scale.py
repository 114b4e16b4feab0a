"""Stage 1 at scale: parts cut as if joined without joining them, memory bounded by the excerpt."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from copaw_context.core.config.running import ToolResultPruningConfig
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.offload_cut import offload_and_cut
from copaw_context.core.toolresults.policy import ToolResultPruning
from copaw_context.core.toolresults.truncation import (
    count_lines,
    parse_truncation_notice,
    scrub_surrogates,
    truncate_text_output,
)
from copaw_context.core.tools.file_reader import read_text_file


def _pruning(tmp_path: Path, recent: int = 50_000) -> ToolResultPruning:
    config = ToolResultPruningConfig(pruning_recent_msg_max_bytes=recent)
    return ToolResultPruning(config, OffloadStore(tmp_path / "tool_result", 1), tmp_path)


class Image:
    """A data part: passed through untouched."""


async def test_the_parts_that_do_not_fit_are_saved_and_cut_as_one_text(tmp_path: Path) -> None:
    pruning = _pruning(tmp_path, recent=5_000)
    head = "summary \udc80 of the run"
    first = "".join(f"row {i} 中文\n" for i in range(600))
    second = "tail \ud83d part\n" * 300
    image = Image()
    parts, meta, stats = await pruning.bound_fresh("dump", "{}", [head, first, image, second], {})
    assert parts[0] == scrub_surrogates(head) and parts[2] is image and len(parts) == 3
    saved = Path(meta["offloaded"][0])
    joined = scrub_surrogates(first + "\n" + second)
    assert saved.read_bytes() == joined.encode("utf-8")
    budget = 5_000 - len(parts[0].encode("utf-8"))
    assert parts[1] == truncate_text_output(
        joined, 1, count_lines(joined), budget, str(saved), recut_notice=False
    )
    assert (stats.truncated, stats.offloaded) == (1, 1)


async def test_a_fitting_result_is_only_scrubbed(tmp_path: Path) -> None:
    pruning = _pruning(tmp_path)
    parts, meta, stats = await pruning.bound_fresh("dump", "{}", ["ok \udc80", "fine"], {})
    assert parts == ["ok \ufffd", "fine"] and stats.truncated == 0 and "offloaded" not in meta
    assert not (tmp_path / "tool_result").exists()


async def test_stage_one_of_a_huge_output_needs_memory_for_the_excerpt_only(
    tmp_path: Path,
) -> None:
    pruning = _pruning(tmp_path)
    output = "build output line 中文 \udc80\n" * 400_000  # about 12 MB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        parts, meta, _ = await pruning.bound_fresh("shell", "{}", [output], {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - before < 3_000_000, f"{peak - before} bytes"
    body, notice = parse_truncation_notice(parts[0]) or (None, None)
    assert body is not None and notice is not None
    assert notice.total_lines == 400_001 and not notice.total_is_lower_bound  # counted on save
    assert Path(meta["offloaded"][0]).stat().st_size == len(output.encode("utf-8", "replace")) + (
        2 * 400_000  # each surrogate: 3 bytes of U+FFFD, not 1 byte of "?"
    )


async def test_offload_and_cut_is_followed_back_to_the_scrubbed_text(tmp_path: Path) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1)
    text = "".join(f"{i} \udc80 中文 " + "q" * (i % 90) + "\n" for i in range(4000))
    cut, saved = await offload_and_cut(store, text, 10_000, tmp_path, recut_notice=False)
    assert saved is not None
    body, notice = parse_truncation_notice(cut) or (None, None)
    assert body is not None and notice is not None and notice.total_lines == 4001
    collected, line, offset = [body], notice.next_line, notice.next_offset
    while True:
        result = await read_text_file(
            str(saved), start_line=line, line_offset=offset, workspace=tmp_path, max_bytes=10_000
        )
        parsed = parse_truncation_notice(result.text)
        if parsed is None:
            collected.append(result.text)
            break
        collected.append(parsed[0])
        line, offset = parsed[1].next_line, parsed[1].next_offset
    assert "".join(collected) == scrub_surrogates(text)
