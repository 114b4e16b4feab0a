"""One test double per role, in ``copaw_context.testing``: the text model of the compactor and
memory (``ScriptedTextModel``) and the clock (``ManualClock``). A guard fails when a test module
defines its own; the rest tests the doubles' features."""

from __future__ import annotations

import ast
import asyncio
import os
from datetime import datetime
from pathlib import Path

import pytest

from copaw_context.core.memory.window import request_budget
from copaw_context.core.summary import CompactorModel
from copaw_context.core.summary.llm import ProgressCompactorModel
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.testing import (
    ContextWindowExceededError,
    ManualClock,
    ScriptedTextModel,
    TextCall,
)

TESTS = Path(__file__).parents[1]
_CLOCK_METHODS = {"__call__", "now", "clock", "time", "monotonic"}


def _arg_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args)]


def _ad_hoc_doubles(source: str) -> list[str]:
    """The classes of ``source`` that play a role ``copaw_context.testing`` has a double for:
    an async ``complete(self, system_prompt, request)`` (the text model) or a clock (a name
    with "Clock", or a method of ``self`` alone named ``__call__``/``now``/``clock``/``time``/
    ``monotonic`` that returns an attribute of ``self``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if (
                isinstance(item, ast.AsyncFunctionDef)
                and item.name == "complete"
                and _arg_names(item)[:3] == ["self", "system_prompt", "request"]
            ):
                found.append(f"{node.name}: async complete(system_prompt, request)")
            if (
                isinstance(item, ast.FunctionDef)
                and item.name in _CLOCK_METHODS
                and _arg_names(item) == ["self"]
                and any(
                    isinstance(r, ast.Return)
                    and isinstance(r.value, ast.Attribute)
                    and isinstance(r.value.value, ast.Name)
                    and r.value.value.id == "self"
                    for r in ast.walk(item)
                )
            ):
                found.append(
                    f"{node.name}: a clock ({item.name} returns self.{_returned_attr(item)})"
                )
        if "clock" in node.name.lower():
            found.append(f"{node.name}: a clock by name")
    return sorted(set(found))


def _returned_attr(function: ast.FunctionDef) -> str:
    for r in ast.walk(function):
        if isinstance(r, ast.Return) and isinstance(r.value, ast.Attribute):
            return r.value.attr
    return "?"


def test_no_test_module_defines_its_own_text_model_or_clock() -> None:
    offenders = {
        str(path.relative_to(TESTS)): doubles
        for path in sorted(TESTS.rglob("*.py"))
        if (doubles := _ad_hoc_doubles(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "use copaw_context.testing.ScriptedTextModel / ManualClock"


def test_the_guard_finds_the_doubles_it_is_for() -> None:
    source = (
        "class Model:\n"
        "    async def complete(self, system_prompt, request, *, on_progress=None):\n"
        "        return ''\n"
        "class Tick:\n"
        "    def __call__(self):\n"
        "        return self.now\n"
        "class FakeClock:\n"
        "    pass\n"
        "class Reply:\n"
        "    def __call__(self, request):\n"
        "        return self.text\n"
    )
    assert _ad_hoc_doubles(source) == [
        "FakeClock: a clock by name",
        "Model: async complete(system_prompt, request)",
        "Tick: a clock (__call__ returns self.now)",
    ]


# --------------------------------------------------------------------------- ScriptedTextModel


def test_it_is_a_compactor_model_and_a_progress_model() -> None:
    model: CompactorModel = ScriptedTextModel()
    assert model.context_size == 32768
    streaming: ProgressCompactorModel = ScriptedTextModel(reports_progress=True)
    assert streaming.reports_progress and not ScriptedTextModel().reports_progress


async def test_answers_are_texts_exceptions_and_callables_sync_or_async() -> None:
    async def later(request: str) -> str:
        await asyncio.sleep(0)
        return f"async {request}"

    model = ScriptedTextModel(
        ["plain", RuntimeError("500"), lambda request: f"sync {request}", later],
        default=lambda request: f"default {request}",
    )
    assert await model.complete("s", "a") == "plain"
    with pytest.raises(RuntimeError, match="500"):
        await model.complete("s", "b")
    assert await model.complete("s", "c") == "sync c"
    assert await model.complete("s", "d") == "async d"
    assert await model.complete("s", "e") == "default e"
    assert await model.complete("s", "f") == "default f"  # the default is not consumed
    assert model.requests == ["a", "b", "c", "d", "e", "f"]
    assert model.answers == []


async def test_an_exhausted_script_without_a_default_fails_the_test() -> None:
    model = ScriptedTextModel(["only"])
    await model.complete("s", "r")
    with pytest.raises(AssertionError, match="no answer left"):
        await model.complete("s", "r")
    with pytest.raises(TypeError, match="returned int"):
        await ScriptedTextModel([lambda request: 3]).complete("s", "r")


async def test_calls_are_recorded_with_their_tokens_and_an_oversized_one_is_rejected() -> None:
    counter = make_token_counter("o200k_base")
    model = ScriptedTextModel(["fits"], context_size=50)
    assert await model.complete("system", "short request") == "fits"
    big = "word " * 100
    with pytest.raises(ContextWindowExceededError, match="maximum context length is 50"):
        await model.complete("system", big)
    assert model.calls == [
        TextCall("system", "short request", counter.count("system") + 2, False),
        TextCall("system", big, counter.count("system") + counter.count(big), True),
    ]
    assert model.requests == ["short request", big] and model.answers == []
    unbounded = ScriptedTextModel(["ok"], context_size=None)
    assert await unbounded.complete("system", big) == "ok"
    assert unbounded.context_size is None and request_budget(unbounded, None) is None


async def test_a_gate_holds_every_call_and_the_counters_see_them_in_flight() -> None:
    gate = asyncio.Event()
    model = ScriptedTextModel(["one", "two", "three"], gate=gate)
    assert not model.called.is_set()
    calls = [asyncio.create_task(model.complete("s", str(n))) for n in range(3)]
    await model.called.wait()
    for _ in range(3):
        await asyncio.sleep(0)
    assert model.active == 3 and model.most_active == 3
    assert not any(call.done() for call in calls)
    gate.set()
    assert await asyncio.gather(*calls) == ["one", "two", "three"]
    assert model.active == 0 and model.most_active == 3
    assert model.requests == ["0", "1", "2"]


async def test_a_cancelled_call_leaves_the_counters_right() -> None:
    model = ScriptedTextModel(["never"], gate=asyncio.Event())
    call = asyncio.create_task(model.complete("s", "r"))
    await model.called.wait()
    await asyncio.sleep(0)
    assert model.active == 1
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert model.active == 0 and model.answers == ["never"]


async def test_a_callable_that_takes_on_progress_gets_the_callers() -> None:
    seen: list[int] = []

    async def stream(request: str, *, on_progress: object = None) -> str:
        assert callable(on_progress)
        for chars in (3, 7):
            on_progress(chars)
        return request.upper()

    model = ScriptedTextModel([stream, lambda request: "no progress"], reports_progress=True)
    assert await model.complete("s", "abc", on_progress=seen.append) == "ABC"
    assert await model.complete("s", "abc", on_progress=seen.append) == "no progress"
    assert seen == [3, 7]


# --------------------------------------------------------------------------- ManualClock


def test_the_clock_moves_only_when_told() -> None:
    clock = ManualClock()
    assert clock() == 0.0
    assert clock.advance(1.5) == 1.5 and clock() == 1.5
    clock.advance(-0.5)
    assert clock() == 1.0
    clock.now = 100.0
    assert clock() == 100.0
    dated = ManualClock(datetime(2024, 5, 1, 23, 59))
    dated.advance(90)
    assert dated() == datetime(2024, 5, 2, 0, 0, 30)
    assert repr(ManualClock(2.0)) == "ManualClock(2.0)"


async def test_its_sleep_advances_instead_of_waiting() -> None:
    clock = ManualClock(datetime(2024, 5, 1, 12, 0))
    await clock.sleep(3600)
    await clock.sleep(0.5)
    assert clock.sleeps == [3600, 0.5]
    assert clock() == datetime(2024, 5, 1, 13, 0, 0, 500000)


async def test_the_engine_takes_it_as_its_clock(tmp_path: Path) -> None:
    clock = ManualClock(1_900_000_000.0)
    store = OffloadStore(tmp_path / "tool_result", 1, cleanup_interval_seconds=60, clock=clock)
    saved = await store.save("output")
    os.utime(saved, (clock(), clock()))  # saved now, by this clock
    assert await store.maybe_cleanup(list) == []  # within the retention
    clock.advance(2 * 86400)
    assert await store.maybe_cleanup(list) == [saved]  # two days on: expired
