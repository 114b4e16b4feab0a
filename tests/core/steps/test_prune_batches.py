"""Stage 2 in batches (``pruning_batch_ratio``): re-cuts wait while they would free little and
the input is under the compaction threshold, run together once it is over (or they free the
batch's share of the window), and the input never goes over the window."""

from __future__ import annotations

from pathlib import Path

from copaw_context.core.context.report import Limits
from copaw_context.core.engine import ContextEngine
from tests.fake_host import FakeHost, FakeMessage, call, engine_config, result, user


def lines(count: int, seed: str) -> str:
    return "".join(f"{seed} line {i:05d} of the build log\n" for i in range(count))


def engine(tmp_path: Path, window: int, ratio: float = 0.5) -> ContextEngine:
    pruning = {"pruning_recent_n": 1, "pruning_batch_ratio": ratio}
    config = engine_config(window, compactor="extractive", tool_result_pruning_config=pruning)
    return ContextEngine(config, tmp_path)


async def add_result(engine: ContextEngine, host: FakeHost, name: str, size: int) -> None:
    parts, meta = await engine.on_tool_result(host, "tool", "{}", [lines(size, name)], {})
    host.messages.append(FakeMessage("assistant", [call(name), result(name, parts[0], **meta)]))


def cut_to(host: FakeHost) -> list[object]:
    return [m.parts[1].meta.get("pruned_to") for m in host.messages if m.role == "assistant"]


async def test_recuts_wait_below_the_threshold_and_run_in_one_batch_over_it(
    tmp_path: Path,
) -> None:
    context = engine(tmp_path, 200_000)
    host = FakeHost([user("look at the logs")], window=200_000)
    for name in "abcd":
        await add_result(context, host, name, 400)
        await context.before_reasoning(host)
        await context.input_meter.measure(host)
    assert cut_to(host) == [None] * 4, "three old results wait: they would free little"
    texts = [m.parts[1].output[0] for m in host.messages[1:]]
    pending = await context.pruner.pending_gain(host)
    assert pending is not None and 0 < pending < 0.5 * 200_000

    report = await context.report(host)
    over = Limits(report.total - 1, report.reserve)  # the input is over this threshold
    event = await context.before_reasoning(host, limits=over)
    assert cut_to(host) == [3000, 3000, 3000, None], "all three in one step, the newest kept"
    assert event is None, "the batch brought the input under the threshold: no compaction"
    now = [m.parts[1].output[0] for m in host.messages[1:]]
    assert [len(a) < len(b) for a, b in zip(now, texts, strict=True)] == [True, True, True, False]
    assert (await context.report(host)).total <= over.threshold


async def test_a_batch_that_frees_its_share_of_the_window_runs_below_the_threshold(
    tmp_path: Path,
) -> None:
    context = engine(tmp_path, 20_000, ratio=0.1)
    host = FakeHost([user("look at the logs")], window=20_000)
    await add_result(context, host, "a", 400)
    await context.before_reasoning(host)
    await context.input_meter.measure(host)
    await add_result(context, host, "b", 20)
    report = await context.report(host)
    assert report.total < report.threshold
    gain = await context.pruner.pending_gain(host)
    assert gain is not None and gain >= 0.1 * 20_000
    assert await context.before_reasoning(host) is None
    assert cut_to(host) == [3000, None]


async def test_batches_never_let_the_input_over_the_window(tmp_path: Path) -> None:
    window = 12_000
    context = engine(tmp_path, window, ratio=1.0)  # re-cuts only when forced
    host = FakeHost([user("look at the logs")], window=window)
    for step in range(40):
        await add_result(context, host, f"r{step}", 30 + (step * 37) % 300)
        await context.before_reasoning(host)
        report = await context.report(host)
        assert report.total <= report.threshold < window, step
        await context.input_meter.measure(host)
        if step % 7 == 6:
            host.messages.append(user(f"next turn {step}"))
