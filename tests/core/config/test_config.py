"""Config models, the agent.json loader, its error messages and the JSON Schema."""

from __future__ import annotations

import importlib.util
import json
import logging
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from copaw_context.core.config.running import (
    RunningConfig,
    aload_running_config,
    load_running_config,
    parse_running_config,
    running_config_json_schema,
)
from copaw_context.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = ROOT / "configs"
SCHEMA_FILE = CONFIGS / "agent-json.schema.json"
EXAMPLES = sorted(p for p in CONFIGS.glob("*.json") if p != SCHEMA_FILE)
LIGHT = "running.light_context_config"
COMPACT = f"{LIGHT}.context_compact_config"
PRUNING = f"{LIGHT}.tool_result_pruning_config"


def agent_json(**sections: dict[str, Any]) -> dict[str, Any]:
    """A per-agent agent.json whose sections are given as running=, light=, compact=, pruning=."""
    light = dict(sections.get("light", {}))
    if "compact" in sections:
        light["context_compact_config"] = sections["compact"]
    if "pruning" in sections:
        light["tool_result_pruning_config"] = sections["pruning"]
    return {"running": {**sections.get("running", {}), "light_context_config": light}}


def section_of(config: RunningConfig, section: str) -> Any:
    light = config.light_context_config
    return {
        "running": config,
        "light": light,
        "compact": light.context_compact_config,
        "pruning": light.tool_result_pruning_config,
    }[section]


def config_error(data: Any) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_running_config(data, source="agent.json")
    return caught.value


def write(tmp_path: Path, data: Any, name: str = "agent.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- defaults and the shipped examples ---------------------------------------------------------


def test_defaults_match_the_reference() -> None:
    config = RunningConfig()
    light = config.light_context_config
    compact = light.context_compact_config
    pruning = light.tool_result_pruning_config
    assert (config.max_input_length, config.context_manager_backend) == (131072, "light")
    assert not config.max_input_length_is_set
    assert (light.dialog_path, light.token_count_estimate_divisor) == ("dialog", 4)
    assert (light.token_counter, light.language, light.compactor) == ("auto", "en", "llm")
    assert (light.compactor_timeout_seconds, light.compactor_retries) == (120, 1)
    assert (light.recompact_growth_ratio, light.extra_read_roots) == (0.05, [])
    assert (compact.enabled, compact.compact_with_thinking_block) == (True, True)
    assert (compact.compact_threshold_ratio, compact.reserve_threshold_ratio) == (0.8, 0.1)
    assert (pruning.enabled, pruning.pruning_recent_n) == (True, 2)
    assert (pruning.pruning_old_msg_max_bytes, pruning.pruning_recent_msg_max_bytes) == (
        3000,
        50000,
    )
    assert (pruning.offload_retention_days, pruning.tool_results_cache) == (5, "tool_result")
    assert pruning.exempt_file_extensions == [".md"]
    assert pruning.exempt_tool_names == ["chat_with_agent"]
    assert (pruning.exempt_recent_max_bytes, pruning.exempt_old_max_bytes) == (None, None)
    assert (pruning.effective_exempt_recent_max_bytes, pruning.effective_exempt_old_max_bytes) == (
        102400,
        12000,
    )
    # The reference's numbers for a 128K window.
    assert (config.compact_threshold_tokens(), config.reserve_tokens()) == (104857, 13107)


def test_the_docs_seed_example_loads_with_its_values() -> None:
    config = load_running_config(CONFIGS / "agent.seed-example.json")
    compact = config.light_context_config.context_compact_config
    pruning = config.light_context_config.tool_result_pruning_config
    assert config.max_input_length == 128000 and config.max_input_length_is_set
    assert (compact.compact_threshold_ratio, compact.reserve_threshold_ratio) == (0.8, 0.1)
    assert (pruning.pruning_recent_n, pruning.pruning_old_msg_max_bytes) == (2, 3000)
    assert pruning.pruning_recent_msg_max_bytes == 50000
    assert (config.compact_threshold_tokens(), config.reserve_tokens()) == (102400, 12800)


def test_a_qwenpaw_agent_json_loads_and_its_own_keys_are_ignored_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        config = load_running_config(CONFIGS / "agent.qwenpaw.json")
    assert caplog.records == []
    assert config.light_context_config.tool_result_pruning_config.tool_results_cache == (
        "tool_results"
    )
    assert config.max_input_length == 131072 and config.max_input_length_is_set


def test_minimal_and_demo_examples() -> None:
    assert load_running_config(CONFIGS / "agent.minimal.json") == RunningConfig()
    demo = load_running_config(CONFIGS / "agent.demo.json")
    assert demo.light_context_config.compactor == "extractive"
    assert (demo.compact_threshold_tokens(), demo.reserve_tokens()) == (12000, 4000)


async def test_async_loader_reads_the_same_config() -> None:
    path = CONFIGS / "agent.demo.json"
    assert await aload_running_config(path) == load_running_config(path)


def test_config_is_frozen() -> None:
    config = RunningConfig()
    with pytest.raises(ValidationError):
        config.max_input_length = 5000  # type: ignore[misc]


# --- ranges, types and cross-field rules -------------------------------------------------------

RANGE_CASES = [
    # (section, field, accepted bound values, rejected values, siblings that keep other rules ok)
    ("running", "max_input_length", [1000], [999], {}),
    ("light", "token_count_estimate_divisor", [2, 5], [1.99, 5.01], {}),
    ("light", "compactor_timeout_seconds", [0.001], [0, -1], {}),
    ("light", "compactor_retries", [0, 3], [-1, 4], {}),
    ("light", "recompact_growth_ratio", [0, 0.5], [-0.01, 0.51], {}),
    (
        "compact",
        "compact_threshold_ratio",
        [0.1, 0.9],
        [0.09, 0.91],
        {"reserve_threshold_ratio": 0},
    ),
    ("compact", "reserve_threshold_ratio", [0, 0.3], [-0.01, 0.31], {}),
    ("pruning", "pruning_recent_n", [1, 10], [0, 11], {}),
    ("pruning", "pruning_old_msg_max_bytes", [100], [99], {}),
    ("pruning", "pruning_recent_msg_max_bytes", [1000], [999], {"pruning_old_msg_max_bytes": 100}),
    ("pruning", "offload_retention_days", [0.5, 365], [0, 365.5], {}),
    (
        "pruning",
        "exempt_recent_max_bytes",
        [1000],
        [999],
        {
            "pruning_old_msg_max_bytes": 100,
            "pruning_recent_msg_max_bytes": 1000,
            "exempt_old_max_bytes": 100,
        },
    ),
    ("pruning", "exempt_old_max_bytes", [3000], [99], {}),
]


@pytest.mark.parametrize(("section", "field", "accepted", "rejected", "siblings"), RANGE_CASES)
def test_each_range_bound(
    section: str, field: str, accepted: list[float], rejected: list[float], siblings: dict[str, Any]
) -> None:
    prefix = {"running": "running", "light": LIGHT, "compact": COMPACT, "pruning": PRUNING}[section]
    for value in accepted:
        config = parse_running_config(agent_json(**{section: {**siblings, field: value}}))
        assert getattr(section_of(config, section), field) == value
    for value in rejected:
        error = config_error(agent_json(**{section: {**siblings, field: value}}))
        assert error.path == f"{prefix}.{field}"
        assert error.value == value
        assert "must be" in error.allowed


@pytest.mark.parametrize("reserve", [0.3, 0.25])
def test_reserve_at_or_above_the_threshold_is_rejected(reserve: float) -> None:
    error = config_error(
        agent_json(compact={"compact_threshold_ratio": 0.25, "reserve_threshold_ratio": reserve})
    )
    assert error.path == f"{COMPACT}.reserve_threshold_ratio"
    assert error.value == reserve
    assert (
        error.allowed
        == "must be a number between 0 and 0.3 and below compact_threshold_ratio (0.25)"
    )


def test_error_text_names_path_value_and_what_is_allowed() -> None:
    data = {"agents": {"running": {"light_context_config": {"context_compact_config": {}}}}}
    data["agents"]["running"]["light_context_config"]["context_compact_config"] = {
        "reserve_threshold_ratio": 0.35
    }
    message = str(config_error(data))
    assert message == (
        "agents.running.light_context_config.context_compact_config.reserve_threshold_ratio "
        "in agent.json: got 0.35; must be a number between 0 and 0.3 and below "
        "compact_threshold_ratio (0.8)"
    )


def test_several_problems_report_the_first_and_count_the_rest() -> None:
    error = config_error(
        agent_json(running={"max_input_length": "128k"}, light={"language": "fr", "compactor": "x"})
    )
    assert error.path == "running.max_input_length"
    assert error.allowed.endswith("(and 2 more problems)")


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("running", "max_input_length", "131072"),
        ("running", "max_input_length", True),
        ("running", "max_input_length", 131072.5),
        ("compact", "enabled", "yes"),
        ("compact", "enabled", 1),
        ("compact", "compact_threshold_ratio", "0.8"),
        ("compact", "compact_threshold_ratio", False),
        ("light", "compactor_timeout_seconds", float("inf")),
        ("pruning", "exempt_tool_names", "chat_with_agent"),
        ("light", "context_compact_config", 5),
    ],
)
def test_wrong_types_are_rejected_with_the_path(section: str, field: str, value: Any) -> None:
    error = config_error(agent_json(**{section: {field: value}}))
    assert error.path.endswith(f".{field}")
    assert error.value == value


def test_a_whole_float_counts_as_an_integer() -> None:
    config = parse_running_config(agent_json(pruning={"pruning_recent_n": 3.0}))
    assert config.light_context_config.tool_result_pruning_config.pruning_recent_n == 3


@pytest.mark.parametrize("backend", ["Light", "NATIVE", "scroll", ""])
def test_backend_is_case_sensitive_and_lists_both_choices(backend: str) -> None:
    error = config_error(agent_json(running={"context_manager_backend": backend}))
    assert error.path == "running.context_manager_backend"
    assert 'must be "light" or "native" (case-sensitive)' in error.allowed
    assert "built-in compression" in error.allowed


def test_unknown_token_counter_lists_the_choices() -> None:
    error = config_error(agent_json(light={"token_counter": "gpt2"}))
    assert error.path == f"{LIGHT}.token_counter"
    assert 'one of "auto", "estimate", "qwen", "o200k_base", "cl100k_base"' in error.allowed


@pytest.mark.parametrize(
    ("pruning", "field", "allowed_end"),
    [
        ({"pruning_old_msg_max_bytes": 60000}, "pruning_recent_msg_max_bytes", "(60000)"),
        (
            {"pruning_recent_msg_max_bytes": 200000, "exempt_recent_max_bytes": 150000},
            "exempt_recent_max_bytes",
            "(200000), or null (or absent) for the automatic value",
        ),
        (
            {"exempt_recent_max_bytes": 40000},
            "exempt_recent_max_bytes",
            ">= pruning_recent_msg_max_bytes (50000), or null (or absent) for the automatic value",
        ),
        (
            {"pruning_old_msg_max_bytes": 20000, "exempt_old_max_bytes": 15000},
            "exempt_old_max_bytes",
            "(20000) and <= exempt_recent_max_bytes (102400), or null (or absent) for the "
            "automatic value",
        ),
        (
            {"exempt_old_max_bytes": 200000},
            "exempt_old_max_bytes",
            "<= exempt_recent_max_bytes (102400), or null (or absent) for the automatic value",
        ),
        (
            {"exempt_recent_max_bytes": 60000, "exempt_old_max_bytes": 70000},
            "exempt_old_max_bytes",
            "<= exempt_recent_max_bytes (60000), or null (or absent) for the automatic value",
        ),
    ],
)
def test_byte_limits_must_be_ordered(pruning: dict[str, int], field: str, allowed_end: str) -> None:
    error = config_error(agent_json(pruning=pruning))
    assert error.path == f"{PRUNING}.{field}"
    assert error.value == pruning.get(field, 50000)
    assert error.allowed.endswith(allowed_end)


# QwenPaw's own agent.json knows nothing of the exempt limits: raising its limits must load.
@pytest.mark.parametrize(
    ("pruning", "effective"),
    [
        ({"pruning_recent_msg_max_bytes": 200000}, (200000, 12000)),
        ({"pruning_old_msg_max_bytes": 20000}, (102400, 20000)),
        (
            {"pruning_old_msg_max_bytes": 150000, "pruning_recent_msg_max_bytes": 300000},
            (300000, 150000),
        ),
        ({"pruning_old_msg_max_bytes": 100, "pruning_recent_msg_max_bytes": 1000}, (102400, 12000)),
        ({"exempt_recent_max_bytes": 5000, "pruning_recent_msg_max_bytes": 4000}, (5000, 5000)),
        ({"exempt_old_max_bytes": 90000}, (102400, 90000)),
        ({"exempt_recent_max_bytes": None, "exempt_old_max_bytes": None}, (102400, 12000)),
    ],
)
def test_unset_exempt_limits_follow_raised_qwenpaw_limits(
    tmp_path: Path, pruning: dict[str, Any], effective: tuple[int, int]
) -> None:
    qwenpaw = json.loads((CONFIGS / "agent.qwenpaw.json").read_text(encoding="utf-8"))
    qwenpaw["running"]["light_context_config"]["tool_result_pruning_config"].update(pruning)
    config = load_running_config(write(tmp_path, qwenpaw))
    limits = config.light_context_config.tool_result_pruning_config
    assert (
        limits.effective_exempt_recent_max_bytes,
        limits.effective_exempt_old_max_bytes,
    ) == effective
    for name, value in pruning.items():
        assert getattr(limits, name) == value  # unset stays None: the file is kept as written
    assert limits.effective_exempt_old_max_bytes >= limits.pruning_old_msg_max_bytes
    assert limits.effective_exempt_recent_max_bytes >= limits.pruning_recent_msg_max_bytes
    assert limits.effective_exempt_old_max_bytes <= limits.effective_exempt_recent_max_bytes


@settings(max_examples=150, deadline=None)
@given(
    old=st.integers(100, 400000),
    extra=st.integers(900, 400000),
    exempt_recent=st.none() | st.integers(1000, 600000),
    exempt_old=st.none() | st.integers(100, 600000),
)
def test_effective_exempt_limits_are_always_ordered(
    old: int, extra: int, exempt_recent: int | None, exempt_old: int | None
) -> None:
    recent = max(1000, old + extra)
    pruning: dict[str, Any] = {
        "pruning_old_msg_max_bytes": old,
        "pruning_recent_msg_max_bytes": recent,
    }
    if exempt_recent is not None:
        pruning["exempt_recent_max_bytes"] = exempt_recent
    if exempt_old is not None:
        pruning["exempt_old_max_bytes"] = exempt_old
    try:
        config = parse_running_config(agent_json(pruning=pruning))
    except ConfigError as error:
        # Only a value the file sets can be out of order, and the error names it.
        assert error.path.rsplit(".", 1)[1] in {
            name for name in ("exempt_recent_max_bytes", "exempt_old_max_bytes") if name in pruning
        }
        return
    limits = config.light_context_config.tool_result_pruning_config
    assert exempt_recent is None or exempt_recent >= recent
    if exempt_recent is None and exempt_old is None:
        assert limits.effective_exempt_recent_max_bytes == max(102400, recent)
        assert limits.effective_exempt_old_max_bytes == max(12000, old)
    assert old <= limits.effective_exempt_old_max_bytes
    assert recent <= limits.effective_exempt_recent_max_bytes
    assert limits.effective_exempt_old_max_bytes <= limits.effective_exempt_recent_max_bytes


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "/var/dialog",
        "\\dialog",
        "C:\\dialog",
        "c:x",
        "..",
        "../dialog",
        "a/../../b",
        ".",
        "./",
        "a\nb",
    ],
)
@pytest.mark.parametrize(
    ("section", "field"), [("light", "dialog_path"), ("pruning", "tool_results_cache")]
)
def test_workspace_directories_must_stay_inside_the_workspace(
    bad: str, section: str, field: str
) -> None:
    error = config_error(agent_json(**{section: {field: bad}}))
    assert error.path.endswith(f".{field}")
    assert error.value == bad
    assert error.allowed.startswith("must be a directory relative to the workspace")


def test_relative_directories_are_kept_as_given() -> None:
    config = parse_running_config(
        agent_json(light={"dialog_path": "./archive/dialog"}, pruning={"tool_results_cache": "tr"})
    )
    assert config.light_context_config.dialog_path == "./archive/dialog"
    assert config.light_context_config.tool_result_pruning_config.tool_results_cache == "tr"


@pytest.mark.parametrize(
    ("dialog", "cache"),
    [("dialog", "dialog"), ("dialog", "./Dialog/"), ("dialog", "dialog/tool"), ("data/x", "data")],
)
def test_tool_result_cache_may_not_overlap_the_dialog_archive(dialog: str, cache: str) -> None:
    error = config_error(
        agent_json(light={"dialog_path": dialog}, pruning={"tool_results_cache": cache})
    )
    assert error.path == f"{PRUNING}.tool_results_cache"
    assert "would delete the dialog archive" in error.allowed


def test_exempt_extensions_are_checked_and_lower_cased() -> None:
    config = parse_running_config(agent_json(pruning={"exempt_file_extensions": [".MD", ".Txt"]}))
    assert config.light_context_config.tool_result_pruning_config.exempt_file_extensions == [
        ".md",
        ".txt",
    ]
    error = config_error(agent_json(pruning={"exempt_file_extensions": [".md", "txt"]}))
    assert (error.path, error.value) == (f"{PRUNING}.exempt_file_extensions[1]", "txt")
    assert 'starting with "."' in error.allowed


# --- whole files -------------------------------------------------------------------------------


def test_file_problems_are_config_errors(tmp_path: Path) -> None:
    cases: list[tuple[Path, str]] = [
        (tmp_path / "missing.json", "no such file"),
        (tmp_path, "is a directory"),
    ]
    for content, expected in [
        (b"", "is empty"),
        (b"\xff\xfe{", "is not UTF-8"),
        (b'{"running": {}, "running": {}}', "appears twice"),
    ]:
        path = tmp_path / f"case{len(cases)}.json"
        path.write_bytes(content)
        cases.append((path, expected))
    for path, expected in cases:
        with pytest.raises(ConfigError, match=expected):
            load_running_config(path)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text('{\n  "running": {\n    "max_input_length": 1000\n    "x": 1\n  }\n}\n')
    with pytest.raises(ConfigError) as caught:
        load_running_config(path)
    assert caught.value.path == "line 4 column 5"
    assert caught.value.source == str(path)
    assert "not valid JSON" in str(caught.value)


@pytest.mark.parametrize(
    ("data", "path", "expected"),
    [
        ([1, 2], "(top level)", "must be a JSON object"),
        ({"id": "a", "agents": {}}, "(top level) keys", "neither is present"),
        ({"running": {}, "agents": {"running": {}}}, "(top level)", "not both"),
        ({"running": None}, "running", "must be a JSON object"),
        ({"agents": {"running": []}}, "agents.running", "must be a JSON object"),
    ],
)
def test_the_two_accepted_shapes_are_explained(data: Any, path: str, expected: str) -> None:
    error = config_error(data)
    assert error.path == path
    assert expected in error.allowed
    assert '"running"' in error.allowed or "JSON object" in error.allowed


def test_unknown_keys_inside_light_config_are_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = agent_json(
        running={"max_iters": 50, "llm_retry_enabled": True},
        light={"strategy": "scroll", "scroll_mode": 1, "compact_threshold_ratio": 0.7},
        compact={"enabeld": False},
    )
    path = write(tmp_path, data)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        config = load_running_config(path)
    assert config.light_context_config.context_compact_config.enabled is True
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert message.startswith(str(path))
    assert f"{LIGHT}.scroll_mode" in message
    assert f"{LIGHT}.strategy" not in message  # QwenPaw 2.x's own key (issue 19)
    assert f"{LIGHT}.compact_threshold_ratio (it belongs in {COMPACT})" in message
    assert f"{COMPACT}.enabeld (did you mean enabled?)" in message
    assert "max_iters" not in message


# --- token arithmetic --------------------------------------------------------------------------


def test_window_comes_from_the_caller_when_given() -> None:
    config = RunningConfig()
    assert (config.compact_threshold_tokens(200_000), config.reserve_tokens(200_000)) == (
        160000,
        20000,
    )
    for bad in (0, -5, True, 10.5):
        with pytest.raises(ValueError, match="window"):
            config.compact_threshold_tokens(bad)  # type: ignore[arg-type]


def test_max_input_length_counts_as_set_even_at_its_default_value() -> None:
    assert parse_running_config({"running": {"max_input_length": 131072}}).max_input_length_is_set


@settings(max_examples=150, deadline=None)
@given(
    compact=st.floats(0.1, 0.9),
    reserve_share=st.floats(0, 1, exclude_max=True),
    window=st.integers(1000, 10_000_000),
)
def test_any_valid_ratio_pair_loads_and_threshold_beats_reserve(
    compact: float, reserve_share: float, window: int
) -> None:
    reserve = min(0.3, compact) * reserve_share
    config = parse_running_config(
        agent_json(
            running={"max_input_length": window},
            compact={"compact_threshold_ratio": compact, "reserve_threshold_ratio": reserve},
        )
    )
    assert config.compact_threshold_tokens() > config.reserve_tokens() >= 0
    assert config.reserve_tokens() <= int(window * reserve)


@settings(max_examples=100, deadline=None)
@given(compact=st.floats(0.1, 0.3), excess=st.floats(0, 0.2))
def test_any_reserve_at_or_above_threshold_is_rejected(compact: float, excess: float) -> None:
    reserve = min(0.3, compact + excess)
    error = config_error(
        agent_json(compact={"compact_threshold_ratio": compact, "reserve_threshold_ratio": reserve})
    )
    assert error.path == f"{COMPACT}.reserve_threshold_ratio"


# --- JSON Schema -------------------------------------------------------------------------------


def load_gen_schema() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "scripts" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schema_is_up_to_date() -> None:
    gen_schema = load_gen_schema()
    assert SCHEMA_FILE.read_text(encoding="utf-8") == gen_schema.render_schema(), (
        f"{SCHEMA_FILE} is stale; regenerate it with: {gen_schema.REGENERATE_COMMAND}"
    )


def test_gen_schema_check_detects_a_stale_file(tmp_path: Path) -> None:
    gen_schema = load_gen_schema()
    output = tmp_path / "schema.json"
    assert gen_schema.main(["--check", "--output", str(output)]) == 1
    assert gen_schema.main(["--output", str(output)]) == 0
    assert gen_schema.main(["--check", "--output", str(output)]) == 0
    output.write_text(output.read_text(encoding="utf-8").replace("131072", "131073"))
    assert gen_schema.main(["--check", "--output", str(output)]) == 1


def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_the_schema_and_the_loader(example: Path) -> None:
    data = json.loads(example.read_text(encoding="utf-8"))
    assert list(schema_validator().iter_errors(data)) == []
    assert isinstance(load_running_config(example), RunningConfig)


@pytest.mark.parametrize(
    "data",
    [
        agent_json(compact={"reserve_threshold_ratio": 0.31}),
        agent_json(pruning={"pruning_recent_n": 0}),
        agent_json(light={"token_counter": "gpt2"}),
        agent_json(light={"dialog_path": "../outside"}),
        agent_json(pruning={"exempt_file_extensions": ["md"]}),
        agent_json(compact={"enabled": "yes"}),
        {"running": {}, "agents": {"running": {}}},
        {"agents": {"name": "x"}},
    ],
)
def test_bad_values_are_rejected_by_schema_and_loader(data: dict[str, Any]) -> None:
    assert list(schema_validator().iter_errors(data)) != []
    with pytest.raises(ConfigError):
        parse_running_config(data)


def test_schema_covers_both_shapes() -> None:
    schema = running_config_json_schema()
    titles = [shape["title"] for shape in schema["oneOf"]]
    assert titles == ["QwenPaw per-agent agent.json", "QwenPaw docs example"]
    assert "RunningConfig" in schema["$defs"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab./\\: C\t\n", max_size=8))
def test_schema_pattern_and_loader_agree_on_workspace_directories(value: str) -> None:
    pattern = running_config_json_schema()["$defs"]["LightContextConfig"]["properties"][
        "dialog_path"
    ]["pattern"]
    try:
        parse_running_config(
            agent_json(light={"dialog_path": value}, pruning={"tool_results_cache": "zz"})
        )
        loader_ok = True
    except ConfigError:
        loader_ok = False
    assert loader_ok == bool(re.search(pattern, value)), value


def test_qwenpaw_agent_language_is_inherited_unless_set() -> None:
    from copaw_context.core.config.running import parse_running_config

    zh = parse_running_config({"language": "zh", "running": {}})
    assert zh.light_context_config.language == "zh"
    explicit = parse_running_config(
        {"language": "zh", "running": {"light_context_config": {"language": "en"}}}
    )
    assert explicit.light_context_config.language == "en"
    other = parse_running_config({"language": "fr", "running": {}})
    assert other.light_context_config.language == "en"


def test_one_window_rule_for_every_host() -> None:
    from copaw_context.core.config.running import (
        DEFAULT_WINDOW_TOKENS,
        RunningConfig,
        parse_running_config,
    )

    assert RunningConfig().window_for(8000) == (8000, "model.context_size")
    for unstated in (None, 0, -5, True, "8000", 8000.0):
        assert RunningConfig().window_for(unstated)[0] == DEFAULT_WINDOW_TOKENS, unstated
    pinned = parse_running_config({"running": {"max_input_length": 4000}})
    assert (
        pinned.window_for(None) == pinned.window_for(200_000) == (4000, "running.max_input_length")
    )
