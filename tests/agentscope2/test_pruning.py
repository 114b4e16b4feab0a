"""The pruning policy through the engine, with a fake host: which notices are ours (#13b)."""

from __future__ import annotations

from pathlib import Path

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.engine import ContextEngine
from copaw_context.core.steps.prune import prune_all
from copaw_context.core.toolresults.truncation import parse_truncation_notice, truncate_text_output
from tests.fake_host import FakeHost, FakeMessage, call, result
from tests.helpers import lines_text


def _config() -> RunningConfig:
    # pruning_recent_n=1: 50000 bytes recent, 3000 old
    return parse_running_config(
        {
            "running": {
                "light_context_config": {"tool_result_pruning_config": {"pruning_recent_n": 1}}
            }
        }
    )


async def _add_result(engine: ContextEngine, host: FakeHost, call_id: str, output: str) -> None:
    """A call and its result as stage 1 leaves them, appended to the host's context."""
    parts, meta = await engine.on_tool_result(host, "dump", "{}", [output], {})
    texts = [p for p in parts if isinstance(p, str)]
    host.messages.append(
        FakeMessage(
            "assistant", [call(call_id, "dump"), result(call_id, "\n".join(texts), "dump", **meta)]
        )
    )
    host.messages[-1].parts[1].output = tuple(parts)


def _text(host: FakeHost, index: int) -> str:
    results = [p for m in host.messages for p in m.parts if p.kind == "tool_result"]
    return "\n".join(p for p in results[index].output if isinstance(p, str))


async def test_our_workspace_relative_notice_is_recut_in_place(tmp_path: Path) -> None:
    workspace = tmp_path.joinpath(*(f"{'w' * 60}{level}" for level in range(8)))
    workspace.mkdir(parents=True)
    engine = ContextEngine(_config(), workspace)
    host = FakeHost()
    await _add_result(engine, host, "c1", lines_text(2000))
    await _add_result(engine, host, "c2", "x")
    first = parse_truncation_notice(_text(host, 0))
    assert first is not None and first[1].file_path is not None
    assert not Path(first[1].file_path).is_absolute()  # the absolute path is too long
    await engine.input_meter.measure(host)  # the model saw both
    await engine.pruner.prune_old(host)
    again = parse_truncation_notice(_text(host, 0))
    assert again is not None and again[1].file_path == first[1].file_path
    assert again[1].excerpt_bytes <= 3000
    assert len(list((workspace / "tool_result").glob("*.txt"))) == 1


async def test_a_foreign_notice_saved_by_stage_two_is_ours_afterwards(tmp_path: Path) -> None:
    engine = ContextEngine(_config(), tmp_path)
    host = FakeHost()
    relayed = truncate_text_output(lines_text(300), max_bytes=20_000, file_path="/else/x.txt")
    await _add_result(engine, host, "c1", relayed)
    await _add_result(engine, host, "c2", "y")
    assert _text(host, 0) == relayed  # fits the recent limit: stage 1 keeps it
    await engine.pruner.prune_old(host)
    assert _text(host, 0) == relayed, "unseen by the model: still recent"
    await engine.input_meter.measure(host)
    await engine.pruner.prune_old(host)
    cut = parse_truncation_notice(_text(host, 0))
    assert cut is not None and cut[1].file_path is not None
    saved = Path(cut[1].file_path)
    assert saved.parent == tmp_path / "tool_result"
    assert saved.read_text(encoding="utf-8") == relayed
    await prune_all(engine.context, host, 200)  # emergency: harder, same file, no new copy
    harder = parse_truncation_notice(_text(host, 0))
    assert harder is not None and harder[1].file_path == str(saved)
    assert harder[1].excerpt_bytes <= 200
    assert list((tmp_path / "tool_result").glob("*.txt")) == [saved]


async def test_an_old_result_already_cut_is_not_looked_at_again(tmp_path: Path) -> None:
    engine = ContextEngine(_config(), tmp_path)
    host = FakeHost()
    for n in range(4):
        await _add_result(engine, host, f"c{n}", lines_text(200, seed=f"r{n}"))
    await engine.input_meter.measure(host)
    first = await engine.pruner.prune_old(host)
    assert first.truncated == 3
    again = await engine.pruner.prune_old(host)
    assert again.truncated == 0 and again.offloaded == 0


async def _mid_sized_result_cut_by_stage_two(engine: ContextEngine, host: FakeHost) -> str:
    """A 20 KB result (under the recent limit, over the old one) made old and seen."""
    full = lines_text(400)
    assert 3000 < len(full.encode()) < 50000
    await _add_result(engine, host, "c1", full)
    await _add_result(engine, host, "c2", "x")
    await engine.input_meter.measure(host)
    await engine.pruner.prune_old(host)
    return full


async def test_stage_two_names_the_file_saved_ahead_at_stage_one(tmp_path: Path) -> None:
    engine = ContextEngine(_config(), tmp_path)
    host = FakeHost()
    full = lines_text(400)
    await _add_result(engine, host, "c1", full)
    assert _text(host, 0) == full  # stage 1 did not cut it...
    await engine.context.store.drain()
    (early,) = (tmp_path / "tool_result").glob("*.txt")  # ...but saved it already
    await _add_result(engine, host, "c2", "x")
    await engine.input_meter.measure(host)
    await engine.pruner.prune_old(host)
    cut = parse_truncation_notice(_text(host, 0))
    assert cut is not None and cut[1].file_path == str(early)
    assert early.read_text() == full and cut[1].total_lines == full.count("\n") + 1
    assert list((tmp_path / "tool_result").glob("*.txt")) == [early]  # no second copy


async def test_a_failed_or_unknown_early_save_is_saved_again_at_stage_two(
    tmp_path: Path,
) -> None:
    engine = ContextEngine(_config(), tmp_path)
    save_parts = engine.context.store.save_parts
    calls: list[int] = []

    async def failing_once(parts: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return await save_parts(parts, **kwargs)  # type: ignore[arg-type]

    engine.context.store.save_parts = failing_once  # type: ignore[method-assign,assignment]
    host = FakeHost()
    full = await _mid_sized_result_cut_by_stage_two(engine, host)
    cut = parse_truncation_notice(_text(host, 0))
    assert len(calls) == 2 and cut is not None and cut[1].file_path is not None
    assert Path(cut[1].file_path).read_text() == full

    restarted = ContextEngine(_config(), tmp_path / "other")  # the token means nothing here
    host = FakeHost()
    await _add_result(engine, host, "c1", full)
    await _add_result(engine, host, "c2", "x")
    await restarted.input_meter.measure(host)
    await restarted.pruner.prune_old(host)
    cut = parse_truncation_notice(_text(host, 0))
    assert cut is not None and cut[1].file_path is not None
    assert Path(cut[1].file_path).parent == tmp_path / "other" / "tool_result"
    assert Path(cut[1].file_path).read_text() == full


async def test_a_result_changed_since_its_early_save_is_saved_again(tmp_path: Path) -> None:
    engine = ContextEngine(_config(), tmp_path)
    host = FakeHost()
    await _add_result(engine, host, "c1", lines_text(400))
    await engine.context.store.drain()
    edited = lines_text(300)
    part = host.messages[0].parts[1]
    part.output = (edited,)
    part.text = f"dump {edited}"
    await _add_result(engine, host, "c2", "x")
    await engine.input_meter.measure(host)
    await engine.pruner.prune_old(host)
    cut = parse_truncation_notice(_text(host, 0))
    assert cut is not None and cut[1].file_path is not None
    assert Path(cut[1].file_path).read_text() == edited
    assert len(list((tmp_path / "tool_result").glob("*.txt"))) == 2
