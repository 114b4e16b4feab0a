"""Consolidation of the daily logs into MEMORY.md, and its cron schedule (no real waiting)."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.config.running import parse_running_config
from copaw_context.core.memory import (
    MemoryConsolidator,
    MemoryEvent,
    MemoryFiles,
    MemoryScheduler,
    extractive_merge,
)
from copaw_context.core.memory.consolidate import STATE_FILE
from copaw_context.testing import ManualClock, ScriptedTextModel

NOW = datetime(2024, 5, 1, 23, 0).astimezone()


def write_log(workspace: Path, day: str, *entries: str) -> Path:
    path = workspace / "memory" / f"{day}.md"
    path.parent.mkdir(exist_ok=True)
    new = not path.exists()
    with path.open("a", encoding="utf-8") as handle:
        if new:
            handle.write(f"# {day}\n\n")
        handle.writelines(f"- 10:00 [agent] {entry}\n" for entry in entries)
    return path


def consolidator(
    workspace: Path, model: ScriptedTextModel | None = None, **options: object
) -> tuple[MemoryConsolidator, list[MemoryEvent]]:
    events: list[MemoryEvent] = []
    files = MemoryFiles(workspace, clock=lambda: NOW)
    return MemoryConsolidator(files, model, on_event=events.append, **options), events  # type: ignore[arg-type]


def memory_text(workspace: Path) -> str:
    return (workspace / "MEMORY.md").read_text(encoding="utf-8")


async def test_extractive_fold_appends_unique_entries_under_dated_sections(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- Likes tea\n", encoding="utf-8")
    write_log(tmp_path, "2024-04-30", "likes tea.", "Uses pnpm", "Uses pnpm")
    write_log(tmp_path, "2024-05-01", "Lesson: make clean fixes the linker error")
    write_log(tmp_path, "2024-05-02", "from the future")  # after today: not yet
    memory, events = consolidator(tmp_path)
    result = await memory.consolidate()
    assert result.written and result.method == "extractive" and result.fallback_reason is None
    assert result.folded_days == ("2024-04-30", "2024-05-01") and result.entries == 4
    assert memory_text(tmp_path) == (
        "## Preferences\n\n- Likes tea\n\n"
        "## Notes from 2024-04-30\n\n- Uses pnpm\n\n"
        "## Notes from 2024-05-01\n\n- Lesson: make clean fixes the linker error\n"
    )
    assert result.backup is not None
    assert result.backup.read_text(encoding="utf-8") == "## Preferences\n\n- Likes tea\n"
    state = json.loads((tmp_path / "memory" / STATE_FILE).read_text(encoding="utf-8"))
    assert set(state["logs"]) == {"2024-04-30", "2024-05-01"}
    assert [e.kind for e in events] == ["memory_consolidation"]
    again = await memory.consolidate()
    assert not again.written and again.entries == 0 and again.folded_days == ()
    assert len(list((tmp_path / "memory" / "backups").iterdir())) == 1


async def test_only_what_was_appended_since_is_folded(tmp_path: Path) -> None:
    write_log(tmp_path, "2024-05-01", "first fact")
    memory, _ = consolidator(tmp_path)
    await memory.consolidate()
    write_log(tmp_path, "2024-05-01", "second fact", "first fact")
    result = await memory.consolidate()
    assert result.entries == 2 and result.written
    assert memory_text(tmp_path).count("first fact") == 1
    assert memory_text(tmp_path).endswith("- first fact\n- second fact\n")
    log = tmp_path / "memory" / "2024-05-01.md"
    log.write_text("# rewritten\n\n- 09:00 [agent] third fact\n", encoding="utf-8")
    result = await memory.consolidate()  # rewritten: folded again whole
    assert result.entries == 1 and memory_text(tmp_path).endswith("- third fact\n")


async def test_consolidate_days_limits_the_window_and_chinese_titles(tmp_path: Path) -> None:
    for day in ("2024-04-28", "2024-04-29", "2024-04-30"):
        write_log(tmp_path, day, f"fact of {day}")
    memory, _ = consolidator(tmp_path, days=2, language="zh")
    result = await memory.consolidate()
    assert result.folded_days == ("2024-04-29", "2024-04-30")
    assert "## 2024-04-30 日志摘录\n\n- fact of 2024-04-30" in memory_text(tmp_path)
    assert "2024-04-28" not in memory_text(tmp_path)


async def test_the_model_merges_when_its_answer_is_sound(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- npm\n", encoding="utf-8")
    write_log(tmp_path, "2024-05-01", "Preference: switched to pnpm")
    model = ScriptedTextModel(["```markdown\n## Preferences\n\n- pnpm (switched from npm)\n```"])
    memory, events = consolidator(tmp_path, model)
    result = await memory.consolidate()
    assert result.method == "llm" and result.written and result.fallback_reason is None
    assert memory_text(tmp_path) == "## Preferences\n\n- pnpm (switched from npm)\n"
    system_prompt, request = model.calls[0].system_prompt, model.calls[0].request
    assert "newest wins" in system_prompt and "keep every existing" in system_prompt.lower()
    assert "- npm" in request and "### 2024-05-01\n- Preference: switched to pnpm" in request
    assert events[0].method == "llm"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("## Other\n\n- pnpm\n", "dropped section(s) 'Preferences'"),
        ("[SILENT]", "empty"),
        ("", "empty"),
        (RuntimeError("quota"), "the model failed: RuntimeError: quota"),
        (TimeoutError(), "did not answer"),
    ],
)
async def test_a_bad_model_answer_falls_back_to_the_extractive_merge(
    tmp_path: Path, answer: object, reason: str
) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- npm\n", encoding="utf-8")
    write_log(tmp_path, "2024-05-01", "switched to pnpm")
    memory, _ = consolidator(tmp_path, ScriptedTextModel([answer]))
    result = await memory.consolidate()
    assert result.method == "extractive" and reason in (result.fallback_reason or "")
    assert memory_text(tmp_path) == (
        "## Preferences\n\n- npm\n\n## Notes from 2024-05-01\n\n- switched to pnpm\n"
    )


async def test_a_much_shorter_answer_is_refused(tmp_path: Path) -> None:
    long_memory = "## Facts\n\n" + "".join(f"- fact {n}\n" for n in range(200))
    (tmp_path / "MEMORY.md").write_text(long_memory, encoding="utf-8")
    write_log(tmp_path, "2024-05-01", "one more")
    memory, _ = consolidator(tmp_path, ScriptedTextModel(["## Facts\n\n- fact 0\n"]))
    result = await memory.consolidate()
    assert "less than half" in (result.fallback_reason or "")
    assert memory_text(tmp_path).startswith(long_memory)


async def test_an_edit_during_the_model_call_is_not_lost(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- npm\n", encoding="utf-8")
    write_log(tmp_path, "2024-05-01", "switched to pnpm")
    files = MemoryFiles(tmp_path, clock=lambda: NOW)

    async def agent_edits_meanwhile(_request: str) -> str:
        await files.edit_section("Preferences", "- answers in Chinese")
        return "## Preferences\n\n- pnpm\n"

    memory, _ = consolidator(tmp_path, ScriptedTextModel([agent_edits_meanwhile]))
    result = await memory.consolidate()
    assert result.method == "extractive"
    assert result.fallback_reason == "MEMORY.md changed while the model was answering"
    text = memory_text(tmp_path)
    assert "- answers in Chinese" in text and "- switched to pnpm" in text and "- npm" in text


async def test_two_consolidations_at_once_in_one_loop_fold_once(tmp_path: Path) -> None:
    write_log(tmp_path, "2024-05-01", *(f"fact {n}" for n in range(20)))
    first, _ = consolidator(tmp_path)
    second, _ = consolidator(tmp_path)
    results = await asyncio.gather(first.consolidate(), second.consolidate())
    assert sorted(r.entries for r in results) == [0, 20]
    text = memory_text(tmp_path)
    assert all(text.count(f"- fact {n}\n") == 1 for n in range(20))


def test_concurrent_consolidations_and_edits_from_threads_lose_nothing(tmp_path: Path) -> None:
    for day in ("2024-04-29", "2024-04-30", "2024-05-01"):
        write_log(tmp_path, day, *(f"{day} fact {n}" for n in range(30)))
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def consolidate() -> None:
        try:
            barrier.wait()
            for _ in range(3):
                asyncio.run(consolidator(tmp_path)[0].consolidate())
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    def edit() -> None:
        try:
            files = MemoryFiles(tmp_path, clock=lambda: NOW)
            barrier.wait()
            for n in range(10):
                asyncio.run(files.edit_section("Agent", f"- agent fact {n}"))
                write_log(tmp_path, "2024-05-01", f"late fact {n}")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=target) for target in (consolidate, consolidate, edit)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    asyncio.run(consolidator(tmp_path)[0].consolidate())  # fold what came in last
    text = memory_text(tmp_path)
    for day in ("2024-04-29", "2024-04-30", "2024-05-01"):
        assert all(text.count(f"- {day} fact {n}\n") == 1 for n in range(30)), day
    assert all(text.count(f"- agent fact {n}\n") == 1 for n in range(10))
    assert all(text.count(f"- late fact {n}\n") == 1 for n in range(10))


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["2024-04-29", "2024-04-30", "2024-05-01"]),
        st.lists(st.text(alphabet="ab 数据.:-", min_size=1, max_size=12), max_size=6),
        max_size=3,
    )
)
def test_extractive_merge_keeps_every_entry_once(entries: dict[str, list[str]]) -> None:
    from copaw_context.core.memory.markdown import bullet_key, entry_items, log_entry_text

    once, _ = extractive_merge("## Keep\n\n- kept\n", entries)
    twice, added = extractive_merge(once, entries)
    assert added == 0 and twice == once and once.startswith("## Keep\n\n- kept\n")
    keys = [bullet_key(log_entry_text(item)) for item in entry_items(once)]
    for found in entries.values():
        for entry in found:
            key = bullet_key(entry)
            if key and not entry.lstrip().startswith(("-", "#")):
                assert key in keys, entry


def test_extractive_merge_is_idempotent() -> None:
    entries = {"2024-05-01": ["a fact", "another"], "2024-04-30": ["older"]}
    once, added = extractive_merge("", entries)
    twice, added_again = extractive_merge(once, entries)
    assert added == 3 and added_again == 0 and once == twice
    assert once.index("2024-04-30") < once.index("2024-05-01")


async def test_from_config(tmp_path: Path) -> None:
    config = parse_running_config(
        {"running": {"daily_memory_dir": "notes", "memory": {"consolidate_days": 1}}}
    )
    write_log(tmp_path, "2024-01-01", "ancient")  # written into memory/, not notes/
    memory = MemoryConsolidator.from_config(config, tmp_path)
    assert memory.state_path == tmp_path / "notes" / STATE_FILE
    assert (await memory.consolidate()).entries == 0


# --- the schedule ------------------------------------------------------------------------------


def test_next_run_follows_the_cron_expression() -> None:
    async def job() -> None: ...

    scheduler = MemoryScheduler(job, "0 0 * * *")
    assert scheduler.next_run(datetime(2024, 5, 1, 12, 0)) == datetime(2024, 5, 2, 0, 0)
    assert scheduler.next_run(datetime(2024, 5, 2, 0, 0)) == datetime(2024, 5, 3, 0, 0)
    weekly = MemoryScheduler(job, "30 2 * * 1")  # Mondays 02:30
    assert weekly.next_run(datetime(2024, 5, 1, 12, 0)) == datetime(2024, 5, 6, 2, 30)
    late = MemoryScheduler(job, "0 23 * * *", clock=lambda: datetime(2024, 12, 31, 23, 30))
    assert late.next_run() == datetime(2025, 1, 1, 23, 0)
    for bad in ("", "61 * * * *", "every day"):
        with pytest.raises(ValueError, match="cron"):
            MemoryScheduler(job, bad)


async def test_a_run_is_triggered_at_the_cron_time_with_an_injected_clock(
    tmp_path: Path,
) -> None:
    fake = ManualClock(datetime(2024, 5, 1, 23, 50))
    write_log(tmp_path, "2024-05-01", "fold me")
    files = MemoryFiles(tmp_path, clock=fake)
    consolidate = MemoryConsolidator(files)
    ran: list[datetime] = []
    slept: list[float] = []
    done = asyncio.Event()

    async def job() -> None:
        ran.append(fake.now)
        slept.append(sum(fake.sleeps))
        await consolidate.consolidate()
        if len(ran) == 2:
            done.set()

    scheduler = MemoryScheduler(job, "0 0 * * *", clock=fake, sleep=fake.sleep)
    scheduler.start()
    scheduler.start()  # idempotent
    assert scheduler.running
    await done.wait()
    await scheduler.stop()
    assert not scheduler.running
    assert ran == [datetime(2024, 5, 2, 0, 0), datetime(2024, 5, 3, 0, 0)]
    assert max(fake.sleeps) <= 300 and slept == [600, 600 + 24 * 3600]
    assert scheduler.runs == 2 and scheduler.failures == 0
    assert "- fold me" in memory_text(tmp_path)


async def test_a_failing_job_does_not_stop_the_schedule() -> None:
    fake = ManualClock(datetime(2024, 5, 1, 23, 59))
    done = asyncio.Event()
    calls: list[datetime] = []

    async def job() -> None:
        calls.append(fake.now)
        if len(calls) == 3:
            done.set()
        raise RuntimeError("disk full")

    scheduler = MemoryScheduler(job, "*/30 * * * *", clock=fake, sleep=fake.sleep)
    scheduler.start()
    await done.wait()
    await scheduler.stop()
    assert scheduler.failures >= 3
    assert calls[:3] == [datetime(2024, 5, 2, h, m) for h, m in ((0, 0), (0, 30), (1, 0))]


async def test_for_consolidation_runs_the_consolidator(tmp_path: Path) -> None:
    fake = ManualClock(datetime(2024, 5, 1, 23, 59))
    write_log(tmp_path, "2024-05-01", "scheduled fact")
    events: list[MemoryEvent] = []
    done = asyncio.Event()

    def seen(event: MemoryEvent) -> None:
        events.append(event)
        done.set()

    files = MemoryFiles(tmp_path, clock=fake)
    scheduler = MemoryScheduler.for_consolidation(
        MemoryConsolidator(files, on_event=seen), "0 0 * * *", clock=fake, sleep=fake.sleep
    )
    assert scheduler.cron == "0 0 * * *"
    scheduler.start()
    await done.wait()
    await scheduler.stop()
    assert events[0].kind == "memory_consolidation" and "- scheduled fact" in memory_text(tmp_path)
