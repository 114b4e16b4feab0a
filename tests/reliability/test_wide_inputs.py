"""Wide inputs: many parallel tool results at once, and a request of many text blocks.

* A real agent's model makes N tool calls at once (30 in an 8K window, 200 in 16K, 60 in
  4K), each result a few KB: every model input fits the window (counted from scratch with
  o200k_base), every call keeps its result, and every full text is recoverable from the file
  its notice names (also when the results share one combined file, when even its
  pointers are too many for the window: 120 in 4K, and when the combined file cannot be
  written: each result is then saved alone).
* A request of many text blocks (60 blocks of 1.8 KB in 8K, 25 of 1.2 KB in 4K): cut by the
  message's total, its full text saved first; 3,000 blocks of 6 characters shrink when cut.
* 40 pinned requests of 3 KB in 8K: each is cut to its share of the room.
"""

from __future__ import annotations

import asyncio
import errno
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.steps.fresh_share import COMPACT_POINTER, OMITTED_NOTE
from copaw_context.core.store import files as file_store
from copaw_context.core.toolresults import offload
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input


def _payload(index: int, chars: int) -> str:
    line = f"result {index:04d} row {{row:04d}} of the inventory export\n"
    text = "".join(line.format(row=row) for row in range(chars // len(line) + 1))
    return text[:chars]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


_COMBINED_FILE = re.compile(r"their full texts are in (\S+) \(read it with read_file\)")
_START = re.compile(r"In the file named above: start_line=(\d+)\]$")
_OWN_FILE = re.compile(r"^\[Output moved to (\S+) \(read it with read_file\)\]$")


def _recover(workspace: Path, results: list[str], index: int, expected: str) -> bool:
    """Whether the full text of result ``index`` is where what the model saw says it is: the
    result itself (not cut), the file its notice or pointer names, or the combined file named
    by the first result, from its start line on (given by the pointer, or by the file's
    index for a compact pointer)."""
    shown = results[index]
    parsed = parse_truncation_notice(shown)
    if parsed is not None:
        assert parsed[1].file_path, f"a cut result names no file: {shown[-300:]!r}"
        return _read(workspace, parsed[1].file_path) == expected
    own = _OWN_FILE.match(shown)
    if own is not None:
        return _read(workspace, own.group(1)) == expected
    start = _START.search(shown)
    if start is None and shown != COMPACT_POINTER:
        return shown == expected
    named = _COMBINED_FILE.search(results[0])
    assert named, f"the first result names no combined file: {results[0][:300]!r}"
    lines = _read(workspace, named.group(1)).split("\n")
    if start is None:  # the index at the top of the file says where it starts
        entry = re.compile(rf"result {index + 1} of \d+ \(.*\): line (\d+)")
        start = next(filter(None, (entry.fullmatch(line) for line in lines)), None)
        assert start is not None, f"result {index + 1} is not in the combined file's index"
    first = int(start.group(1)) - 1
    return "\n".join(lines[first : first + expected.count("\n") + 1]) == expected


def _read(workspace: Path, name: str) -> str:
    path = Path(name)
    return (path if path.is_absolute() else workspace / path).read_text(encoding="utf-8")


async def _parallel(
    driver: HostDriver, workspace: Path, window: int, count: int, chars: int
) -> tuple[StepFigures, list[str]]:
    figures = StepFigures()
    seen: list[list[dict[str, Any]]] = []

    def fetch(index: int) -> str:
        """Fetch one record.

        Args:
            index (`int`): Record number.
        """
        return _payload(index, chars)

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        check_model_input(formatted, driver.tool_schemas(call), window, figures)
        seen.append(formatted["openai"])
        return driver.text_step("done")

    async def first(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        check_model_input(formatted, driver.tool_schemas(call), window, figures)
        return driver.tool_step([("fetch", {"index": n}, None) for n in range(count)])

    hook = driver.hook(agent_config(window, "extractive"), workspace)
    model = driver.model([first, answer], context_size=window)
    agent = await driver.agent(hook, model, [fetch])
    assert await driver.ask(agent, "Fetch every record.") == "done"
    results = [_text(m.get("content")) for m in seen[-1] if m.get("role") == "tool"]
    return figures, results


@pytest.mark.parametrize(
    ("window", "count", "chars"),
    [(8000, 30, 3000), (16000, 200, 1800), (4000, 60, 900), (4000, 120, 800), (2000, 60, 800)],
)
def test_parallel_results_fit_the_window(
    driver: HostDriver, window: int, count: int, chars: int
) -> None:
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        figures, results = asyncio.run(_parallel(driver, workspace, window, count, chars))
        assert len(results) == count, f"{len(results)} results for {count} calls"
        recovered = sum(
            _recover(workspace, results, index, _payload(index, chars)) for index in range(count)
        )
        combined = sum(bool(_START.search(s)) or s == COMPACT_POINTER for s in results)
        assert recovered == count, f"{count - recovered} full texts are in no file"
        saved = len(list((workspace / "tool_result").glob("*.txt")))
    record(
        "parallel_results",
        window=window,
        results=count,
        result_chars=chars,
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        invalid_inputs=figures.invalid_inputs,
        recovered=recovered,
        combined=combined,
        files_saved=saved,
    )


def _says_unsaved(shown: str) -> bool:
    """Whether a result says its full text could not be saved (a notice naming no file)."""
    parsed = parse_truncation_notice(shown)
    return shown == OMITTED_NOTE or (parsed is not None and parsed[1].file_path is None)


@pytest.mark.parametrize(("window", "free_bytes"), [(8000, 16_000), (4000, 0)])
def test_parallel_results_fit_when_the_combined_file_cannot_be_written(
    driver: HostDriver, monkeypatch: pytest.MonkeyPatch, window: int, free_bytes: int
) -> None:
    """60 results; the disk has room for each result alone but not for the one combined
    file (ENOSPC): each is saved alone and points to its own file (each used to be cut to
    64 bytes with its own ~360-byte notice: 8,935 tokens in 8K). With no room at all (4K),
    every result says it could not be saved, within the window (6,148 tokens before)."""
    count, chars = 60, 800
    refused: list[int] = []
    real = offload.write_atomically

    def nearly_full(directory: Path, parts: Any, *args: Any) -> Any:
        size = sum(len(str(part).encode("utf-8")) for part in parts)
        if size > free_bytes and directory.name == "tool_result":
            refused.append(size)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(directory, parts, *args)

    monkeypatch.setattr(offload, "write_atomically", nearly_full)  # an offload with no store
    monkeypatch.setattr(file_store, "write_atomically", nearly_full)  # the workspace's store
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        figures, results = asyncio.run(_parallel(driver, workspace, window, count, chars))
        assert refused, "the combined file was never refused"
        assert len(results) == count, f"{len(results)} results for {count} calls"
        recovered = sum(
            _recover(workspace, results, index, _payload(index, chars)) for index in range(count)
        )
        unsaved = sum(_says_unsaved(shown) for shown in results)
        assert recovered + unsaved == count, f"{count - recovered - unsaved} results lost"
        assert recovered == count or not free_bytes, "a result fit its own file but was not saved"
        saved = len(list((workspace / "tool_result").glob("*.txt")))
    record(
        "parallel_results_combined_unwritable",
        window=window,
        results=count,
        result_chars=chars,
        free_bytes=free_bytes,
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        invalid_inputs=figures.invalid_inputs,
        writes_refused=len(refused),
        recovered=recovered,
        said_unsaved=unsaved,
        files_saved=saved,
    )


def _block(index: int, chars: int) -> str:
    line = f"block {index:03d} line {{row:03d}} of the pasted design notes\n"
    text = "".join(line.format(row=row) for row in range(chars // len(line) + 1))
    return text[:chars].rstrip("\n")


async def _many_blocks(
    driver: HostDriver, workspace: Path, window: int, blocks: list[str]
) -> StepFigures:
    figures = StepFigures()

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        check_model_input(formatted, driver.tool_schemas(call), window, figures)
        return driver.text_step("read")

    hook = driver.hook(agent_config(window, "extractive"), workspace)
    model = driver.model([answer], context_size=window)
    agent = await driver.agent(hook, model)
    assert await driver.ask(agent, blocks) == "read"
    return figures


@pytest.mark.parametrize(("window", "count", "chars"), [(8000, 60, 1800), (4000, 25, 1200)])
def test_a_request_of_many_text_blocks_is_cut_by_its_total(
    driver: HostDriver, window: int, count: int, chars: int
) -> None:
    blocks = [_block(index, chars) for index in range(count)]
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        figures = asyncio.run(_many_blocks(driver, workspace, window, blocks))
        saved = [
            p.read_text(encoding="utf-8") for p in (workspace / "dialog" / "requests").glob("*.txt")
        ]
    whole = "\n".join(blocks)
    assert whole in saved, "the request's full text is in no file"
    record(
        "multi_block_request",
        window=window,
        blocks=count,
        block_chars=chars,
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        invalid_inputs=figures.invalid_inputs,
        files_saved=len(saved),
        saved_whole=saved.count(whole),
    )


@pytest.mark.parametrize(("window", "count", "chars"), [(8000, 3000, 6), (8000, 1000, 20)])
def test_a_request_of_thousands_of_tiny_blocks_shrinks_when_cut(
    driver: HostDriver, window: int, count: int, chars: int
) -> None:
    """Each later block used to become a 62-byte marker, so the cut grew the request 2.8x
    (18,378 -> 51,544 tokens in 8K): the later blocks now share one marker."""
    blocks = [f"b{index:05d}"[:chars].ljust(chars, "x") for index in range(count)]
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        figures = asyncio.run(_many_blocks(driver, workspace, window, blocks))
        saved = [
            p.read_text(encoding="utf-8") for p in (workspace / "dialog" / "requests").glob("*.txt")
        ]
    whole = "\n".join(blocks)
    assert whole in saved, "the request's full text is in no file"
    record(
        "tiny_block_request",
        window=window,
        blocks=count,
        block_chars=chars,
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        invalid_inputs=figures.invalid_inputs,
        saved_whole=saved.count(whole),
    )


def test_many_pinned_requests_longer_than_the_pinned_cut_fit_the_window(
    driver: HostDriver,
) -> None:
    """40 pinned requests of 3 KB in 8K used to reach 11,846 tokens: each pin was cut to a
    fixed 1,024 bytes (and only when nothing was left to compact). Now to its share of the
    room, after a compaction too; every full text saved first."""
    window, turns = 8000, 40
    figures = StepFigures()
    pins = [f"pinned rule {n}: " + "never touch vendor files " * 120 for n in range(turns)]

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        check_model_input(formatted, driver.tool_schemas(call), window, figures)
        return driver.text_step("ok")

    async def run(workspace: Path) -> None:
        hook = driver.hook(agent_config(window, "extractive"), workspace)
        model = driver.model([answer] * (turns + 1), context_size=window)
        agent = await driver.agent(hook, model)
        for pin in pins:
            assert await driver.ask(agent, pin, pinned=True) == "ok"

    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        asyncio.run(run(workspace))
        saved = {
            p.read_text(encoding="utf-8") for p in (workspace / "dialog" / "requests").glob("*.txt")
        }
    assert figures.model_calls == turns
    cut = sum(pin in saved for pin in pins)
    assert cut, "no pinned request was cut"
    record(
        "pinned_requests",
        window=window,
        pinned=turns,
        pin_chars=len(pins[0]),
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        invalid_inputs=figures.invalid_inputs,
        pins_saved_whole=cut,
    )
