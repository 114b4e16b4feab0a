"""What moved from the adapters into ``core/host`` (issue 18, adapters under 800 lines),
checked without a host: usage and model identity, the ratio settings, the runtime-hint room,
the status queue and the first step of a reply, the Read-cache clean, the saved entry's
tolerant loading, the fresh dict-block result, delegation, the dict-block repair host, the
compactor's arguments, the probe's quiet logger, the agent's members, which reply input is a
chat command, the call that runs no hook, and a context of marked entries."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.host.agent_entry import entry_of, tolerant_load
from copaw_context.core.host.delegating import Delegating
from copaw_context.core.host.dict_session import (
    committed_entries,
    fresh_dict_result,
    loaded_entries,
    visible_entries,
)
from copaw_context.core.host.hook_base import EngineHook, require_members
from copaw_context.core.host.hook_events import command_of
from copaw_context.core.host.models import check_formatted_compactor, model_key, reported_usage
from copaw_context.core.host.protocol import Window
from copaw_context.core.host.ratios import HostLimits
from copaw_context.core.host.repair import DictRepairHost, repaired
from copaw_context.core.host.runtime_hint import runtime_hint_allowance
from copaw_context.core.host.session_base import SessionBase, SessionSetup, take_status
from copaw_context.core.host.thinking import PROBE_MARKER, sends_thinking


class AnthropicModel:
    model = "claude"
    context_size = 1000


def test_usage_in_neutral_fields_and_the_model_key() -> None:
    usage = SimpleNamespace(input_tokens=100, cache_in=900, cache_new=200)
    fields = ("cache_in", "cache_new")
    reported = reported_usage(usage, AnthropicModel(), fields)
    assert reported is not None and reported.prompt_tokens() == 1200
    assert reported_usage(None, object(), fields) is None
    dropped = reported_usage(SimpleNamespace(input_tokens=1200), object())
    assert dropped is not None and dropped.prompt_tokens() == 1200
    assert dropped.cache_read_tokens is None and dropped.cache_write_tokens is None
    odd = reported_usage(SimpleNamespace(input_tokens="12"), object())
    assert odd is not None and odd.input_tokens is None
    assert model_key(AnthropicModel()) == "AnthropicModel:claude:1000"
    assert len(model_key(SimpleNamespace(model="m" * 300))) == 200


def test_host_limits_align_the_ratio_settings() -> None:
    config = parse_running_config({"running": {"max_input_length": 10000}})
    cfg = SimpleNamespace(
        trigger_ratio=0.95, context_buffer_ratio=0.95, reserve_ratio=0.0, tool_result_limit=10
    )
    agent = SimpleNamespace(model=SimpleNamespace(context_size=10000), context_config=cfg)
    limits = HostLimits(config)
    limits.align_builtin_hint(agent)
    assert 0 < cfg.trigger_ratio <= 0.9 and cfg.context_buffer_ratio == cfg.trigger_ratio / 4
    assert 0 < cfg.reserve_ratio < cfg.trigger_ratio
    limits.relax_builtin_truncation(agent)
    assert cfg.tool_result_limit > 10
    explicit = HostLimits.from_context_config(
        SimpleNamespace(trigger_ratio=0.5, reserve_ratio=0.1), agent
    )
    assert explicit is not None and explicit.threshold == 5000 and explicit.reserve == 1000
    assert HostLimits.from_context_config(None, agent) is None
    assert HostLimits.from_context_config(SimpleNamespace(), agent) is None
    limits.align_builtin_hint(SimpleNamespace())  # nothing to align: left as it is
    off = RunningConfig.model_validate(
        {"light_context_config": {"tool_result_pruning_config": {"enabled": False}}}
    )
    HostLimits(off).relax_builtin_truncation(agent)
    assert cfg.tool_result_limit > 10


def test_the_runtime_hint_room() -> None:
    assert runtime_hint_allowance(SimpleNamespace()) == ""
    off = SimpleNamespace(inject_runtime_state=False)
    assert runtime_hint_allowance(SimpleNamespace(injection_config=off)) == ""
    on = SimpleNamespace(
        inject_runtime_state=True,
        timezone="UTC",
        extra_fields={"task": "x"},
        template="<state>{runtime_state}</state>",
    )
    text = runtime_hint_allowance(SimpleNamespace(injection_config=on))
    assert text.startswith("\n<state>") and "<timezone>UTC</timezone>" in text
    assert "<task>x</task>" in text and "999999 tokens" in text
    broken = SimpleNamespace(inject_runtime_state=True)  # no template: sized as none
    assert runtime_hint_allowance(SimpleNamespace(injection_config=broken)) == ""


async def test_status_lines_first_steps_and_the_read_cache(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scratch: dict[str, Any] = {}
    setup = SessionSetup(scratch, True, Window(9, "test"), None)
    session = SessionBase(SimpleNamespace(name="a"), setup, {})
    await session.show_status("one")
    await session.show_status("two")
    assert take_status(scratch) == ["one", "two"] and take_status(scratch) == []
    assert session.first_step_of("r1") and not session.first_step_of("r1")
    assert session.first_step_of(None) and session.first_step_of("r2")
    kept: list[set[str]] = []

    async def clean(paths: set[str]) -> None:
        kept.append(paths)

    await session.forget_reads([("Read", '{"file_path": "/a"}'), ("Grep", "{}")], clean)
    assert kept == [{"/a"}]

    async def fails(paths: set[str]) -> None:
        raise OSError("no cache")

    with caplog.at_level(logging.ERROR, logger="copaw_context"):
        await session.forget_reads([], fails)  # logged, not raised
    assert "could not clean the Read cache" in caplog.text


def test_the_saved_entry_loads_tolerantly() -> None:
    loaded: list[dict[str, Any]] = []

    def load(state: dict[str, Any], strict: bool = True) -> None:
        loaded.append(state)

    tolerant = tolerant_load(load, "ours")
    assert tolerant_load(tolerant, "ours") is tolerant  # wrapped once
    tolerant({"memory": []})
    assert loaded[0]["memory"] == [] and loaded[0]["ours"]["engine"] == {}
    tolerant({"ours": {"session_id": "s", "engine": {}}})
    assert loaded[1]["ours"]["session_id"] == "s"
    holder = SimpleNamespace(ours="damaged")
    entry = entry_of(holder, "ours")
    assert entry["engine"] == {} and holder.ours is entry and entry_of(holder, "ours") is entry


def test_a_fresh_dict_block_result() -> None:
    call = {"id": "c1", "name": "grep", "input": {"q": "x"}}
    result = {"type": "tool_result", "id": "c1", "name": "grep", "output": "found"}
    msg = SimpleNamespace(content=[result], metadata={})
    fresh = fresh_dict_result([msg], call, lambda call_id: {"read_file": {"path": call_id}})
    assert fresh is not None
    assert (fresh.tool_name, fresh.tool_input, fresh.parts) == ("grep", '{"q": "x"}', ["found"])
    assert fresh.meta["read_file"] == {"path": "c1"}
    assert fresh_dict_result([msg], {"name": "no id"}, dict) is None
    assert fresh_dict_result([msg], "not a call", dict) is None
    assert fresh_dict_result([], call, dict) is None
    raw = fresh_dict_result([msg], {**call, "raw_input": '{"q":"x"}'}, lambda _: {})
    assert raw is not None and raw.tool_input == '{"q":"x"}'


def test_delegation_and_the_compactor_arguments() -> None:
    class Proxy(Delegating):
        OWN = frozenset({"inner", "_own"})

    inner = SimpleNamespace(stream=True)
    proxy = Proxy(inner, _own=1)
    proxy.stream = False  # the host's flag reaches the real object
    assert inner.stream is False and proxy.stream is False and proxy._own == 1
    assert not hasattr(inner, "_own")
    check_formatted_compactor(None, None)
    check_formatted_compactor(lambda *a: None, SimpleNamespace(format=lambda m: m))
    with pytest.raises(ValueError, match="without compactor_model"):
        check_formatted_compactor(None, SimpleNamespace(format=lambda m: m))
    with pytest.raises(TypeError, match="compactor_model must be"):
        check_formatted_compactor("not callable", None)
    with pytest.raises(TypeError, match="compactor_formatter must be"):
        check_formatted_compactor(lambda *a: None, object())


def test_the_dict_block_repair_host_answers_a_missing_result() -> None:
    class Host(DictRepairHost):
        def rebuilt(self, source: Any, blocks: list[Any], *, inserted: bool) -> Any:
            return SimpleNamespace(id="new", role="system", content=blocks)

    call = SimpleNamespace(
        id="a", role="assistant", content=[{"type": "tool_use", "id": "c1", "name": "grep"}]
    )
    user = SimpleNamespace(id="u", role="user", content="next")
    out = repaired([call, user], Host(), set(), inline_results=False)
    assert out is not None and out[0] is call and out[-1] is user
    (result,) = out[1].content
    assert result["type"] == "tool_result" and result["id"] == "c1" and result["name"] == "grep"


async def test_the_probe_keeps_the_hosts_logger_quiet(caplog: pytest.LogCaptureFixture) -> None:
    class Formatter:
        async def format(self, msgs: list[Any]) -> list[Any]:
            logging.getLogger("host").warning("Unsupported block type thinking")
            logging.getLogger("host").warning("other")
            return []

    with caplog.at_level(logging.WARNING):
        assert await sends_thinking(Formatter(), [PROBE_MARKER], quiet="host") is False
    assert "other" in caplog.text and "thinking" not in caplog.text
    assert logging.getLogger("host").filters == []


def test_the_agents_members_and_a_lone_command() -> None:
    require_members(SimpleNamespace(a=1, b=2), ("a", "b"), "an agent")
    with pytest.raises(TypeError, match=r"attach\(\) needs an agent; SimpleNamespace has no b, c"):
        require_members(SimpleNamespace(a=1), ("a", "b", "c"), "an agent")

    def text(msg: object) -> str | None:
        return msg if isinstance(msg, str) else None

    command = command_of(["/compact keep the plan"], text)
    assert command is not None and (command.name, command.argument) == ("compact", "keep the plan")
    assert command_of("/context", text) is not None
    assert command_of(["/context", "/context"], text) is None  # not a lone message
    assert command_of([], text) is None and command_of(42, text) is None
    assert command_of("hello", text) is None


class _Agent:
    """An agent the hook keeps a scratch for (weakly referenced)."""


class _Hook(EngineHook):
    async def session(self, agent: Any) -> Any:
        raise AssertionError("not needed")


async def test_the_pipeline_before_a_call_that_runs_no_hook(tmp_path: Path) -> None:
    hook = _Hook()
    hook.start_engine(None, tmp_path, None)
    agent = _Agent()
    steps: list[str] = []

    async def step() -> None:
        steps.append("pipeline")
        hook.mark_reasoning(agent)  # what a pre-reasoning hook does

    await hook.before_unhooked_call(agent, step)
    assert steps == ["pipeline"]
    assert not hook.takes_call(agent)  # the mark is taken: the call goes as it is
    await hook.close()


def test_marked_entries_keep_the_hidden_ones_in_place() -> None:
    hidden = frozenset({"hint"})
    entries: list[tuple[Any, list[str]]] = [("a", []), ("h", ["hint"]), ("b", ["x"]), ("c", [])]
    visible = visible_entries(entries, hidden)
    assert visible == [0, 2, 3]
    kept = committed_entries(entries, visible, [(1, [0]), (2, None)], lambda m, p: m + "'")
    assert kept == [("h", ["hint"]), ("b'", ["x"]), ("c", [])]
    assert loaded_entries(entries, hidden, ["n"]) == [("h", ["hint"]), ("n", [])]
