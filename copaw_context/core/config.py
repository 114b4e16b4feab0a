"""The copaw-context configuration: the ``running`` section of a QwenPaw ``agent.json``.

Two file shapes are accepted: QwenPaw's per-agent ``agent.json`` (a top-level ``"running"`` among
many keys of QwenPaw's own, which are ignored) and the docs example ``{"agents": {"running": ...}}``.
Every bad value raises one :class:`ConfigError` naming its JSON path, the value and what is allowed.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Annotated, Any, ClassVar, Literal, Self, get_args, get_origin

import annotated_types
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from copaw_context.core.errors import ConfigError

__all__ = [
    "Backend",
    "CompactorKind",
    "ContextCompactConfig",
    "Language",
    "LightContextConfig",
    "RunningConfig",
    "TokenCounterName",
    "ToolResultPruningConfig",
    "aload_running_config",
    "load_running_config",
    "parse_running_config",
    "running_config_json_schema",
]

logger = logging.getLogger("copaw_context")

Backend = Literal["light", "native"]
TokenCounterName = Literal["auto", "estimate", "qwen", "o200k_base", "cl100k_base"]
Language = Literal["en", "zh"]
CompactorKind = Literal["llm", "extractive"]

_SHAPES = (
    'an agent.json needs either a top-level "running" object (QwenPaw\'s per-agent agent.json) '
    'or "agents": {"running": {...}} (the QwenPaw docs example)'
)
_CUSTOM_ERROR = "copaw_rule"
_SEPARATORS = re.compile(r"[/\\]")
_WORKSPACE_DIR_RULE = 'must be a directory relative to the workspace, such as "dialog"'
# JSON Schema twin of _check_workspace_dir: not absolute, no "..", not the workspace itself.
_WORKSPACE_DIR_PATTERN = (
    r"^(?![/\\])(?![A-Za-z]:)(?!(?:.*[/\\])?\.\.(?:[/\\]|$))(?!(?:\.?[/\\]*)*$).*\S.*$"
)


def _whole_float_to_int(value: object) -> object:
    """Accept ``2.0`` where a whole number is expected, as JSON Schema does."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _rule_error(rule: str, **context: Any) -> PydanticCustomError:
    return PydanticCustomError(_CUSTOM_ERROR, "{rule}", {"rule": rule, **context})


def _check_workspace_dir(value: str) -> str:
    parts = _SEPARATORS.split(value)
    if not value.strip():
        raise _rule_error(f"{_WORKSPACE_DIR_RULE}; it is empty")
    if value[0] in "/\\" or PureWindowsPath(value).drive:
        raise _rule_error(f"{_WORKSPACE_DIR_RULE}; absolute paths are not allowed")
    if ".." in parts:
        raise _rule_error(f'{_WORKSPACE_DIR_RULE}; ".." would leave the workspace')
    if all(part in ("", ".") for part in parts):
        raise _rule_error(f"{_WORKSPACE_DIR_RULE}; it names the workspace itself")
    return value


def _check_extension(value: str) -> str:
    if len(value) < 2 or not value.startswith(".") or _SEPARATORS.search(value):
        raise _rule_error('each item must be a file extension starting with ".", such as ".md"')
    return value.lower()


def _check_non_empty(value: str) -> str:
    if not value.strip():
        raise _rule_error("each item must be a non-empty string")
    return value


_Int = Annotated[int, Field(strict=True), BeforeValidator(_whole_float_to_int)]
_Float = Annotated[float, Field(strict=True, allow_inf_nan=False)]
_Bool = Annotated[bool, Field(strict=True)]
_WorkspaceDir = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": _WORKSPACE_DIR_PATTERN}),
    AfterValidator(_check_workspace_dir),
]
_Extension = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": r"^\.[^/\\]+$"}),
    AfterValidator(_check_extension),
]
_NonEmptyStr = Annotated[str, Field(strict=True, min_length=1), AfterValidator(_check_non_empty)]


@dataclass(frozen=True, slots=True)
class _Relation:
    """A rule between two fields of one section: ``field <op> other``."""

    field: str
    op: Literal["<", ">=", "<="]
    other: str

    def holds(self, value: float, other: float) -> bool:
        if self.op == "<":
            return value < other
        return value >= other if self.op == ">=" else value <= other

    def describe(self, other_value: object) -> str:
        word = {"<": "below", ">=": ">=", "<=": "<="}[self.op]
        return f"{word} {self.other} ({_show(other_value)})"


class _Section(BaseModel):
    """Base of the config models: frozen, unknown keys ignored, cross-field rules checked."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    _relations: ClassVar[tuple[_Relation, ...]] = ()

    @model_validator(mode="after")
    def _check_relations(self) -> Self:
        values = {name: getattr(self, name) for name in type(self).model_fields}
        for relation in self._relations:
            if not relation.holds(values[relation.field], values[relation.other]):
                rule = _field_rule(type(self), relation.field, values)
                raise _rule_error(rule, field=relation.field, value=values[relation.field])
        return self


class ContextCompactConfig(_Section):
    """When to compact old messages into a summary, and how much to keep verbatim."""

    _relations = (_Relation("reserve_threshold_ratio", "<", "compact_threshold_ratio"),)

    enabled: _Bool = Field(
        True, description="Compact old messages into a summary when the context reaches the threshold."
    )
    compact_threshold_ratio: _Float = Field(
        0.8,
        ge=0.1,
        le=0.9,
        description="Compaction starts when the context reaches this share of the window "
        "(0.8 x 131072 = 104857 tokens).",
    )
    reserve_threshold_ratio: _Float = Field(
        0.1,
        ge=0,
        le=0.3,
        description="Share of the window kept verbatim as the newest messages when compacting; "
        "must be below compact_threshold_ratio.",
    )
    compact_with_thinking_block: _Bool = Field(
        True, description="Include the model's thinking blocks in the compactor's input."
    )


class ToolResultPruningConfig(_Section):
    """How large tool results are cut in the context and offloaded in full to files."""

    _relations = (
        _Relation("pruning_recent_msg_max_bytes", ">=", "pruning_old_msg_max_bytes"),
        _Relation("exempt_recent_max_bytes", ">=", "pruning_recent_msg_max_bytes"),
        _Relation("exempt_old_max_bytes", ">=", "pruning_old_msg_max_bytes"),
        _Relation("exempt_old_max_bytes", "<=", "exempt_recent_max_bytes"),
    )

    enabled: _Bool = Field(
        True, description="Cut large tool results and offload the full text to tool_results_cache."
    )
    pruning_recent_n: _Int = Field(
        2,
        ge=1,
        le=10,
        description="How many of the most recent tool-result blocks (not messages) count as recent "
        "and are cut at pruning_recent_msg_max_bytes; older ones are cut at pruning_old_msg_max_bytes.",
    )
    pruning_old_msg_max_bytes: _Int = Field(
        3000, ge=100, description="Bytes of an older tool result's text kept in the context."
    )
    pruning_recent_msg_max_bytes: _Int = Field(
        50000,
        ge=1000,
        description="Bytes of a recent tool result's text kept in the context; also read_file's "
        "limit per call. Must be >= pruning_old_msg_max_bytes.",
    )
    offload_retention_days: _Float = Field(
        5, gt=0, le=365, description="Days offloaded full tool results are kept before cleanup."
    )
    tool_results_cache: _WorkspaceDir = Field(
        "tool_result",
        description="Directory, relative to the workspace, holding offloaded full tool results. "
        "Files older than offload_retention_days are deleted, so it must not overlap dialog_path.",
    )
    exempt_file_extensions: list[_Extension] = Field(
        default_factory=lambda: [".md"],
        description='read_file results of files with these extensions (each starting with ".", '
        "case-insensitive) get the larger exempt limits.",
    )
    exempt_tool_names: list[_NonEmptyStr] = Field(
        default_factory=lambda: ["chat_with_agent"],
        description="Results of these tools get the larger exempt limits.",
    )
    exempt_recent_max_bytes: _Int = Field(
        102400,
        ge=1000,
        description="Bytes of a recent exempt result kept in the context; "
        "must be >= pruning_recent_msg_max_bytes.",
    )
    exempt_old_max_bytes: _Int = Field(
        12000,
        ge=100,
        description="Bytes of an older exempt result kept in the context; must be >= "
        "pruning_old_msg_max_bytes and <= exempt_recent_max_bytes.",
    )


class LightContextConfig(_Section):
    """Settings of the light context manager."""

    dialog_path: _WorkspaceDir = Field(
        "dialog",
        description="Directory, relative to the workspace, where compacted messages are archived "
        "verbatim as YYYY-MM-DD.jsonl files.",
    )
    token_count_estimate_divisor: _Float = Field(
        4,
        ge=2,
        le=5,
        description="UTF-8 bytes per token assumed when tokens are estimated rather than counted.",
    )
    token_counter: TokenCounterName = Field(
        "auto",
        description='"auto" picks a tokenizer from the model name; "estimate" divides UTF-8 bytes '
        'by token_count_estimate_divisor; "qwen", "o200k_base" and "cl100k_base" count exactly '
        "with that tokenizer.",
    )
    language: Language = Field(
        "en", description="Language of the compaction prompt and of the notices put in the context."
    )
    compactor: CompactorKind = Field(
        "llm",
        description='"llm" asks the model for a structured summary; "extractive" builds one '
        "offline from the messages, with no model call.",
    )
    compactor_timeout_seconds: _Float = Field(
        120, gt=0, description="Seconds to wait for one compactor call before it counts as failed."
    )
    compactor_retries: _Int = Field(
        1, ge=0, le=3, description="Extra attempts after a failed compactor call."
    )
    recompact_growth_ratio: _Float = Field(
        0.05,
        ge=0,
        le=0.5,
        description="After a compaction that did not free enough room, the compactor is not called "
        "again until the context has grown by this share of the window.",
    )
    extra_read_roots: list[_NonEmptyStr] = Field(
        default_factory=list,
        description="Directories besides the workspace that read_file may read "
        "(absolute, or relative to the workspace).",
    )
    context_compact_config: ContextCompactConfig = Field(default_factory=ContextCompactConfig)
    tool_result_pruning_config: ToolResultPruningConfig = Field(
        default_factory=ToolResultPruningConfig
    )

    @model_validator(mode="after")
    def _check_cache_outside_dialog(self) -> Self:
        cache = self.tool_result_pruning_config.tool_results_cache
        cache_parts, dialog_parts = _dir_parts(cache), _dir_parts(self.dialog_path)
        shorter = min(len(cache_parts), len(dialog_parts))
        if cache_parts[:shorter] == dialog_parts[:shorter]:
            rule = (
                f"must not be dialog_path ({self.dialog_path!r}), inside it or around it: old files "
                "in the tool-result cache are deleted, which would delete the dialog archive"
            )
            raise _rule_error(rule, field="tool_result_pruning_config.tool_results_cache", value=cache)
        return self


class RunningConfig(_Section):
    """The ``running`` section of ``agent.json`` as far as context management is concerned."""

    max_input_length: _Int = Field(
        131072,
        ge=1000,
        description="The context window in tokens. When set it wins; when absent the model's own "
        "context size is used, and this default only if the model gives none.",
    )
    context_manager_backend: Backend = Field(
        "light",
        description='"light" replaces AgentScope\'s built-in compression with copaw-context; '
        '"native" leaves AgentScope\'s built-in compression in charge.',
    )
    light_context_config: LightContextConfig = Field(default_factory=LightContextConfig)

    @property
    def max_input_length_is_set(self) -> bool:
        """Whether the file set ``max_input_length`` (else the model's context size is the window)."""
        return "max_input_length" in self.model_fields_set

    def compact_threshold_tokens(self, window: int | None = None) -> int:
        """Tokens at which compaction starts: ``int(window * compact_threshold_ratio)``."""
        ratio = self.light_context_config.context_compact_config.compact_threshold_ratio
        return int(self._window(window) * ratio)

    def reserve_tokens(self, window: int | None = None) -> int:
        """Newest tokens kept verbatim: ``int(window * reserve_threshold_ratio)``.

        Capped one token below the threshold, so it stays below it even for tiny windows.
        """
        size = self._window(window)
        ratio = self.light_context_config.context_compact_config.reserve_threshold_ratio
        return max(0, min(int(size * ratio), self.compact_threshold_tokens(size) - 1))

    def _window(self, window: int | None) -> int:
        if window is None:
            return self.max_input_length
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValueError(f"window must be a positive whole number of tokens, got {window!r}")
        return window


def _dir_parts(path: str) -> list[str]:
    return [part.casefold() for part in _SEPARATORS.split(path) if part not in ("", ".")]


def _show(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value) if isinstance(value, str) else str(value)


def _bounds(metadata: list[Any]) -> list[str]:
    found: dict[str, Any] = {}
    for item in metadata:
        for kind in ("ge", "gt", "le", "lt"):
            if isinstance(item, getattr(annotated_types, kind.capitalize())):
                found[kind] = getattr(item, kind)
    if "ge" in found and "le" in found:
        return [f"between {_show(found['ge'])} and {_show(found['le'])}"]
    symbols = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    return [f"{symbols[kind]} {_show(bound)}" for kind, bound in found.items()]


def _field_rule(model: type[_Section], name: str, section: Mapping[str, Any]) -> str:
    """What a field allows, in words, e.g. "must be a number between 0 and 0.3 and below ..."."""
    info = model.model_fields[name]
    annotation = info.annotation
    if get_origin(annotation) is Literal:
        choices = " or ".join(json.dumps(choice) for choice in get_args(annotation))
        return f"must be {choices} (case-sensitive). {info.description}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "must be a JSON object, {...}"
    if get_origin(annotation) is list:
        return "must be a list of strings, [...]"
    if info.json_schema_extra and "pattern" in info.json_schema_extra:
        return _WORKSPACE_DIR_RULE
    kind = {bool: "true or false", int: "a whole number", float: "a number"}.get(
        annotation, "a string"  # type: ignore[arg-type]
    )
    clauses = _bounds(info.metadata)
    for relation in model._relations:
        if relation.field == name:
            other = section.get(relation.other, model.model_fields[relation.other].get_default())
            clauses.append(relation.describe(other))
    return " and ".join([f"must be {kind}", *clauses]).replace(" and ", " ", 1)


def _to_config_error(
    error: ValidationError, prefix: str, running: Mapping[str, Any], source: str | None
) -> ConfigError:
    """Turn pydantic's first error into a ConfigError with the JSON path as written in the file."""
    problems = error.errors(include_url=False)
    first = problems[0]
    path, model, section = prefix, RunningConfig, running
    owner: tuple[type[_Section], str, Mapping[str, Any]] | None = None
    in_list = False
    for step in first["loc"]:
        if isinstance(step, int):
            path, in_list = f"{path}[{step}]", True
            continue
        path = f"{path}.{step}"
        owner = (model, str(step), section)
        annotation = model.model_fields[str(step)].annotation
        if isinstance(annotation, type) and issubclass(annotation, _Section):
            model = annotation
            child = section.get(str(step)) if isinstance(section, Mapping) else None
            section = child if isinstance(child, Mapping) else {}
    context = first.get("ctx") or {}
    value = first["input"]
    if first["type"] == _CUSTOM_ERROR:
        allowed = str(context["rule"])
        if "field" in context:
            path, value = f"{path}.{context['field']}", context["value"]
    elif in_list:
        allowed = "each item must be a non-empty string"
    elif owner is not None:
        allowed = _field_rule(*owner)
    else:
        allowed = first["msg"]
    if len(problems) > 1:
        more = len(problems) - 1
        allowed += f" (and {more} more problem{'s' if more > 1 else ''} in this section)"
    return ConfigError(path, value, allowed, source)


def _warn_unknown_keys(running: Mapping[str, Any], prefix: str, source: str | None) -> None:
    """Log one warning naming keys inside light_context_config that this package does not know."""
    light = running.get("light_context_config")
    if not isinstance(light, Mapping):
        return
    sections: list[tuple[str, type[_Section], Mapping[str, Any]]] = [
        (f"{prefix}.light_context_config", LightContextConfig, light)
    ]
    for name in ("context_compact_config", "tool_result_pruning_config"):
        if isinstance(light.get(name), Mapping):
            model = LightContextConfig.model_fields[name].annotation
            assert isinstance(model, type) and issubclass(model, _Section)
            sections.append((f"{prefix}.light_context_config.{name}", model, light[name]))
    unknown = []
    for path, model, section in sections:
        for key in section:
            if key not in model.model_fields:
                close = difflib.get_close_matches(str(key), list(model.model_fields), n=1)
                unknown.append(f"{path}.{key}" + (f" (did you mean {close[0]}?)" if close else ""))
    if unknown:
        logger.warning(
            "%s: ignoring keys copaw-context does not know (newer QwenPaw versions add some, "
            "but check for typos): %s",
            source or "agent.json",
            "; ".join(unknown),
        )


def _brief(value: object) -> object:
    text = repr(value)
    return value if len(text) <= 80 else f"{text[:77]}..."


def parse_running_config(data: Any, source: str | None = None) -> RunningConfig:
    """Validate an already-parsed agent.json object; ``source`` names the file in errors."""
    if not isinstance(data, Mapping):
        raise ConfigError("(top level)", _brief(data), f"must be a JSON object: {_SHAPES}", source)
    agents = data.get("agents")
    has_top = "running" in data
    has_nested = isinstance(agents, Mapping) and "running" in agents
    if has_top == has_nested:
        found = ["running", "agents.running"] if has_top else sorted(map(str, data))[:12]
        problem = "both are present; keep one" if has_top else 'found neither "running" in them'
        raise ConfigError("(top level)", found, f"{_SHAPES}: {problem}", source)
    prefix = "running" if has_top else "agents.running"
    running = data["running"] if has_top else agents["running"]  # type: ignore[index]
    if not isinstance(running, Mapping):
        allowed = "must be a JSON object holding the settings (an empty {} means all defaults)"
        raise ConfigError(prefix, _brief(running), allowed, source)
    _warn_unknown_keys(running, prefix, source)
    try:
        return RunningConfig.model_validate(running)
    except ValidationError as error:
        raise _to_config_error(error, prefix, running, source) from None


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def load_running_config(path: str | os.PathLike[str]) -> RunningConfig:
    """Read and validate a whole agent.json file (either accepted shape)."""
    source, where = str(path), "agent.json file"
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(where, source, "no such file; pass the path of an agent.json") from None
    except IsADirectoryError:
        raise ConfigError(where, source, "is a directory; pass the agent.json inside it") from None
    except UnicodeDecodeError as error:
        raise ConfigError(where, source, f"is not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise ConfigError(where, source, f"cannot be read ({error.strerror})") from None
    try:
        data = json.loads(text, object_pairs_hook=_object_without_duplicates)
    except json.JSONDecodeError as error:
        line = text.splitlines()[error.lineno - 1].strip() if text.strip() else ""
        position = f"line {error.lineno} column {error.colno}"
        allowed = f"is not valid JSON ({error.msg}); fix the syntax there"
        raise ConfigError(position, _brief(line), allowed, source) from None
    except _DuplicateKeyError as error:
        allowed = "appears twice in one JSON object; keep only one"
        raise ConfigError("JSON key", error.key, allowed, source) from None
    return parse_running_config(data, source)


async def aload_running_config(path: str | os.PathLike[str]) -> RunningConfig:
    """:func:`load_running_config` off the event loop."""
    return await asyncio.to_thread(load_running_config, path)


def running_config_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a whole agent.json file, in both accepted shapes.

    Cross-field rules (e.g. reserve below threshold) cannot be expressed; the loader checks them.
    """
    running = RunningConfig.model_json_schema(ref_template="#/$defs/{model}")
    definitions = running.pop("$defs")
    definitions["RunningConfig"] = running
    ref = {"$ref": "#/$defs/RunningConfig"}
    nested = {"type": "object", "required": ["running"], "properties": {"running": ref}}
    nested_present = {"required": ["agents"], "properties": {"agents": nested}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agent.json (copaw-context view)",
        "description": f"Context-management settings; {_SHAPES}. Other keys are QwenPaw's and "
        "are ignored. Cross-field rules (reserve below threshold, byte limits ordered, cache "
        "outside the dialog directory) are checked by `copaw-context check-config`.",
        "type": "object",
        "oneOf": [
            {
                "title": "QwenPaw per-agent agent.json",
                "required": ["running"],
                "properties": {"running": ref},
                "not": nested_present,
            },
            {
                "title": "QwenPaw docs example",
                "required": ["agents"],
                "properties": {"agents": nested},
                "not": {"required": ["running"]},
            },
        ],
        "$defs": definitions,
    }
