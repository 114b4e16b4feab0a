"""Memory requests fit the window of the model they go to (issue 17 item 5).

Every request of the summariser and the consolidation is counted with the real ``o200k_base``
tokenizer by a scripted model that rejects an over-window request as a provider does; a
rejected request falls back to the extractive path, which writes the user's constraints and
exact errors.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory import MemoryEvent
from copaw_context.core.memory.consolidate import MemoryConsolidator
from copaw_context.core.memory.summariser import MemorySummariser
from copaw_context.core.memory.window import INPUT_SHARE
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ContextWindowExceededError, ScriptedTextModel

WINDOW = 4096


def config(**memory: object) -> RunningConfig:
    light = {"token_counter": "o200k_base"}
    return parse_running_config({"running": {"memory": memory, "light_context_config": light}})


def turn(index: int) -> tuple[TranscriptMessage, ...]:
    ask = (
        f"Request {index}: refactor the parser module number {index} so that quoted fields, "
        "escaped separators and trailing whitespace are handled the same way in every reader; "
        "keep the public names. Never modify vendor/ files. "
        + " ".join(f"detail{index}_{k} about column {k} of table t{index}" for k in range(60))
    )
    result = (
        f'Traceback (most recent call last):\n  File "src/parser_{index}.py", line {40 + index}\n'
        f"ValueError: unterminated quote in field {index} of row {index * 7}\n"
        + "\n".join(f"row {r}: ok {r * index} fields parsed" for r in range(40))
    )
    return (
        TranscriptMessage("user", "user", (TranscriptPart("text", ask),), "2024-05-01T11:00"),
        TranscriptMessage(
            "assistant",
            "friday",
            (
                TranscriptPart("tool_call", '{"cmd": "pytest -q"}', tool_name="run"),
                TranscriptPart("tool_result", result, tool_name="run", is_error=True),
            ),
            "2024-05-01T11:01",
        ),
    )


def compaction(turns: int) -> CompactionRecord:
    messages = tuple(m for t in range(turns) for m in turn(t))
    return CompactionRecord("auto", "s1", "friday", messages, "summary")


def log_text(workspace: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (workspace / "memory").glob("*.md"))


async def test_every_summariser_request_fits_the_models_window_staged(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "## Preferences\n\n"
        + "".join(f"- Preference {i}: tabs, not spaces, in file {i}\n" for i in range(300)),
        encoding="utf-8",
    )
    model = ScriptedTextModel(
        context_size=WINDOW, default="- Lesson: quote fields before splitting"
    )
    events: list[MemoryEvent] = []
    summariser = MemorySummariser.from_config(config(), tmp_path, model, on_event=events.append)
    event = await summariser.summarise(compaction(6))
    sizes = [call.tokens for call in model.calls]
    assert sizes and not any(call.rejected for call in model.calls), sizes
    assert max(sizes) <= int(WINDOW * INPUT_SHARE), sizes
    assert len(sizes) > 1  # staged: the transcript is larger than one request
    assert event.kind == "memory_summary" and event.method == "llm", event
    assert "quote fields before splitting" in log_text(tmp_path)


async def test_the_configured_memory_window_bounds_the_requests(tmp_path: Path) -> None:
    model = ScriptedTextModel(context_size=3000, default="[SILENT]")
    model.context_size = 1_000_000  # the model claims more than the configured window
    summariser = MemorySummariser.from_config(config(model_max_input_length=3000), tmp_path, model)
    await summariser.summarise(compaction(4))
    assert model.calls and max(c.tokens for c in model.calls) <= int(3000 * INPUT_SHARE)


async def test_a_rejected_summariser_request_falls_back_to_the_extractive_entries(
    tmp_path: Path,
) -> None:
    rejection = ContextWindowExceededError("maximum context length is 4096 tokens")
    model = ScriptedTextModel(context_size=WINDOW, default=rejection)
    summariser = MemorySummariser.from_config(config(), tmp_path, model)
    event = await summariser.summarise(compaction(2))
    written = log_text(tmp_path)
    assert event.kind == "memory_summary" and event.method == "extractive", event
    assert "ContextWindowExceededError" in (event.fallback_reason or "")
    assert "Never modify vendor/ files" in written
    assert "ValueError: unterminated quote in field 1 of row 7" in written


def write_logs(workspace: Path, days: int, entries: int) -> None:
    folder = workspace / "memory"
    folder.mkdir(exist_ok=True)
    today = date.today()
    for back in range(days):
        day = today - timedelta(days=back)
        lines = "".join(
            f"- 10:{k % 60:02d} [agent] Lesson {back}.{k}: the build of service s{k} on {day} "
            f"needs NODE_OPTIONS=--max-old-space-size={1024 + k} and the cache at /var/cache/s{k}\n"
            for k in range(entries)
        )
        (folder / f"{day.isoformat()}.md").write_text(f"# {day}\n\n{lines}", encoding="utf-8")


def condensing(request: str) -> str:
    """A model that folds the logs into one counted line under the sections it was given."""
    folded = sum(1 for line in request.splitlines() if line.startswith("- ") and "Lesson" in line)
    return f"## Preferences\n\n- Likes tea\n\n## Lessons\n\n- folded {folded} lessons\n"


async def test_every_consolidation_request_fits_the_models_window_staged(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- Likes tea\n", encoding="utf-8")
    write_logs(tmp_path, days=3, entries=70)
    model = ScriptedTextModel(context_size=WINDOW, default=condensing)
    consolidator = MemoryConsolidator.from_config(config(), tmp_path, model)
    result = await consolidator.consolidate()
    sizes = [call.tokens for call in model.calls]
    assert sizes and not any(call.rejected for call in model.calls), sizes
    assert max(sizes) <= int(WINDOW * INPUT_SHARE), sizes
    assert len(sizes) > 1 and result.method == "llm" and result.written, (sizes, result)


async def test_a_rejected_consolidation_request_falls_back_to_the_extractive_merge(
    tmp_path: Path,
) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- Likes tea\n", encoding="utf-8")
    write_logs(tmp_path, days=1, entries=5)
    rejection = ContextWindowExceededError("maximum context length is 4096 tokens")
    model = ScriptedTextModel(context_size=WINDOW, default=rejection)
    result = await MemoryConsolidator.from_config(config(), tmp_path, model).consolidate()
    memory = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert result.method == "extractive" and result.written
    assert "ContextWindowExceededError" in (result.fallback_reason or "")
    assert "NODE_OPTIONS=--max-old-space-size=1028" in memory


async def test_every_compactor_request_fits_the_models_window_staged() -> None:
    from copaw_context.core.summary.llm import SummaryCompactor
    from copaw_context.core.tokens import TiktokenCounter
    from tests.summaries import six_section_summary

    model = ScriptedTextModel(context_size=WINDOW, default=six_section_summary(1))
    compactor = SummaryCompactor(
        mode="llm", counter=TiktokenCounter("o200k_base"), max_summary_chars=2000
    )
    messages = compaction(6).messages
    result = await compactor.summarise(messages, previous=None, model=model)
    sizes = [call.tokens for call in model.calls]
    assert sizes and not any(call.rejected for call in model.calls), sizes
    assert max(sizes) <= WINDOW and result.stages > 1, (sizes, result)
