"""Building blocks of the config models: strict JSON field types, rules and their wording.

Private to the config package. Every rule that fails raises a pydantic error of type
``copaw_rule`` whose ``rule`` context is the user-facing text of what is allowed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from copaw_context.core.errors import json_text

__all__ = [
    "Bool",
    "Extension",
    "Float",
    "Int",
    "IntMin100",
    "IntMin1000",
    "NonEmptyStr",
    "PostgresDsn",
    "compared",
    "Section",
    "WorkspaceDir",
    "describe_error",
    "dir_parts",
    "field_rule",
    "rule_error",
    "unknown_keys",
]

_CUSTOM_ERROR = "copaw_rule"
_SEPARATORS = re.compile(r"[/\\]")
_WORKSPACE_DIR_RULE = 'must be a directory relative to the workspace, such as "dialog"'
_WORKSPACE_DIR_FIELDS = frozenset(
    {"dialog_path", "tool_results_cache", "memory_dir", "daily_memory_dir"}
)
_EXTENSION_RULE = 'each item must be a file extension starting with ".", such as ".md"'
_ITEM_RULES = {"exempt_file_extensions": _EXTENSION_RULE}
# What a workspace directory must not be: (a regex a refused value matches from its start, the
# reason). The validator tries them in order; the JSON Schema pattern is built from the same
# regexes (written for both Python's re and ECMA-262), so the two cannot disagree.
_WORKSPACE_DIR_REFUSED = (
    (r"\s*$", "it is empty"),
    (r"[\s\S]*[\x00-\x1f]", "control characters are not allowed"),
    (r"[/\\]|[A-Za-z]:", "absolute paths are not allowed"),
    (r"(?:[\s\S]*[/\\])?\.\.(?:[/\\]|$)", '".." would leave the workspace'),
    (r"(?:\.(?=[/\\]|$)|[/\\])*$", "it names the workspace itself"),
)
_WORKSPACE_DIR_PATTERN = "^" + "".join(f"(?!{refused})" for refused, _ in _WORKSPACE_DIR_REFUSED)
_EXTENSION_PATTERN = r"^\.[^/\\]+$"
_DSN_PATTERN = r"^postgres(?:ql)?://"
_DSN_RULE = 'must be a PostgreSQL URL such as "postgresql://user@host:5432/db", or null'


def _whole_float_to_int(value: object) -> object:
    """Accept ``2.0`` where a whole number is expected, as JSON Schema does."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def rule_error(rule: str, **context: Any) -> PydanticCustomError:
    """A validation error whose ``rule`` is the user-facing text of what is allowed."""
    return PydanticCustomError(_CUSTOM_ERROR, "{rule}", {"rule": rule, **context})


def _check_workspace_dir(value: str) -> str:
    for refused, reason in _WORKSPACE_DIR_REFUSED:
        if re.match(refused, value):
            raise rule_error(f"{_WORKSPACE_DIR_RULE}; {reason}")
    return value


def _check_extension(value: str) -> str:
    if not re.search(_EXTENSION_PATTERN, value):  # as a JSON Schema validator reads it
        raise rule_error(_EXTENSION_RULE)
    return value.lower()


def _check_dsn(value: str) -> str:
    if not re.match(_DSN_PATTERN, value):
        raise rule_error(_DSN_RULE)
    return value


def _check_non_empty(value: str) -> str:
    if not value.strip():
        raise rule_error("each item must be a non-empty string")
    return value


Int = Annotated[int, Field(strict=True), BeforeValidator(_whole_float_to_int)]
# Bounded twins of Int for optional fields: inside ``X | None`` a bound given by the field
# would not reach the int part (nor the JSON Schema's "minimum").
IntMin100 = Annotated[int, Field(strict=True, ge=100), BeforeValidator(_whole_float_to_int)]
IntMin1000 = Annotated[int, Field(strict=True, ge=1000), BeforeValidator(_whole_float_to_int)]
Float = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Bool = Annotated[bool, Field(strict=True)]
WorkspaceDir = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": _WORKSPACE_DIR_PATTERN}),
    AfterValidator(_check_workspace_dir),
]
Extension = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": _EXTENSION_PATTERN}),
    AfterValidator(_check_extension),
]
NonEmptyStr = Annotated[str, Field(strict=True, min_length=1), AfterValidator(_check_non_empty)]
PostgresDsn = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": _DSN_PATTERN}),
    AfterValidator(_check_dsn),
]


class Section(BaseModel):
    """Base of the config models: frozen, unknown keys ignored.

    A section with rules between its fields checks them in plain ``model_validator``
    methods that raise :meth:`broken`, and words them in :meth:`cross_field_rules`, so that
    an error for either field (out of range, or out of order) says all that it must be.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    @classmethod
    def cross_field_rules(cls, name: str, values: Mapping[str, Any]) -> list[str]:
        """The rules between field ``name`` and others, in words such as ``"below
        compact_threshold_ratio (0.8)"`` (see :func:`compared`); ``values`` are the section's."""
        return []

    def broken(
        self, name: str, other: str, values: Mapping[str, Any] | None = None
    ) -> PydanticCustomError:
        """The error of field ``name`` breaking its rule with ``other``; ``values`` are the
        values compared (by default the fields' own)."""
        values = self.__dict__ if values is None else values
        rule = field_rule(type(self), name, values)
        return rule_error(rule, field=name, value=values[name], other=other)


def compared(word: str, other: str, values: Mapping[str, Any]) -> str:
    """``"<word> <other> (<its value>)"``, without the value when it is ``None`` (an optional
    field left to its automatic value)."""
    value = values.get(other)
    return f"{word} {other}" if value is None else f"{word} {other} ({_show(value)})"


def dir_parts(path: str) -> list[str]:
    """A relative directory's segments, case-folded, without "." and empty ones."""
    return [part.casefold() for part in _SEPARATORS.split(path) if part not in ("", ".")]


def _show(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json_text(value)


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


def _without_none(annotation: object) -> tuple[object, list[Any], bool]:
    """``(type, constraint metadata, nullable)`` of ``X | None`` or of a plain annotation."""
    if get_origin(annotation) not in (Union, UnionType):
        return annotation, [], False
    inner = [arg for arg in get_args(annotation) if arg is not type(None)]
    if len(inner) != 1:
        return annotation, [], True
    (only,) = inner
    if get_origin(only) is not Annotated:
        return only, [], True
    metadata: list[Any] = []
    for item in only.__metadata__:
        metadata += item.metadata if isinstance(item, FieldInfo) else [item]
    return get_args(only)[0], metadata, True


def field_rule(model: type[Section], name: str, section: Mapping[str, Any]) -> str:
    """What a field allows, in words, e.g. "must be a number between 0 and 0.3 and below ..."."""
    info = model.model_fields[name]
    annotation, inner_metadata, nullable = _without_none(info.annotation)
    if get_origin(annotation) is Literal:
        choices = [json.dumps(choice) for choice in get_args(annotation)]
        listed = " or ".join(choices) if len(choices) == 2 else f"one of {', '.join(choices)}"
        return f"must be {listed} (case-sensitive). {info.description}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "must be a JSON object, {...}"
    if get_origin(annotation) is list:
        return "must be a list of strings, [...]"
    if name in _WORKSPACE_DIR_FIELDS:
        return _WORKSPACE_DIR_RULE
    kinds: dict[object, str] = {bool: "true or false", int: "a whole number", float: "a number"}
    clauses = _bounds([*info.metadata, *inner_metadata])
    defaults = {key: field.get_default() for key, field in model.model_fields.items()}
    clauses += model.cross_field_rules(name, {**defaults, **section})
    rule = f"must be {kinds.get(annotation, 'a string')}"
    rule = f"{rule} {' and '.join(clauses)}" if clauses else rule
    return f"{rule}, or null (or absent) for the automatic value" if nullable else rule


def _section_type(annotation: object) -> type[Section] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, Section) else None


def _lookup(section: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """(whether the file sets it, its value) of a dotted key inside a section as written."""
    node: Any = section
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def describe_error(
    error: ValidationError, root: type[Section], prefix: str, raw: Mapping[str, Any]
) -> tuple[str, Any, str, tuple[str, Any] | None]:
    """The first problem as (JSON path as written in the file, bad value, what is allowed,
    the conflict): when a rule between two keys fails and the file sets only the other key,
    the conflict is (that key's JSON path, its value), else None."""
    problems = error.errors(include_url=False)
    first = problems[0]
    path, model, section = prefix, root, raw
    owner: tuple[type[Section], str, Mapping[str, Any]] | None = None
    in_list = False
    for step in first["loc"]:
        if isinstance(step, int):
            path, in_list = f"{path}[{step}]", True
            continue
        path = f"{path}.{step}"
        info = model.model_fields.get(step)
        owner = (model, step, section) if info is not None else None
        child_model = _section_type(info.annotation if info is not None else None)
        if child_model is not None:
            child = section.get(step)
            model, section = child_model, child if isinstance(child, Mapping) else {}
    context = first.get("ctx") or {}
    value = first["input"]
    conflict: tuple[str, Any] | None = None
    if first["type"] == _CUSTOM_ERROR:
        allowed = str(context["rule"])
        if "other" in context and not _lookup(section, context["field"])[0]:
            found, other_value = _lookup(section, context["other"])
            conflict = (f"{path}.{context['other']}", other_value) if found else None
        if "field" in context:
            path, value = f"{path}.{context['field']}", context["value"]
    elif in_list:
        allowed = _ITEM_RULES.get(owner[1] if owner else "", "each item must be a non-empty string")
    elif owner is not None:
        allowed = field_rule(*owner)
    else:
        allowed = first["msg"]
    if len(problems) > 1:
        more = len(problems) - 1
        allowed += f" (and {more} more problem{'s' if more > 1 else ''})"
    return path, value, allowed, conflict


def _field_homes(model: type[Section], path: str, homes: dict[str, list[str]]) -> None:
    for name, info in model.model_fields.items():
        homes.setdefault(name, []).append(path)
        child_model = _section_type(info.annotation)
        if child_model is not None:
            _field_homes(child_model, f"{path}.{name}", homes)


def unknown_keys(
    model: type[Section], raw: object, path: str, homes: dict[str, list[str]] | None = None
) -> list[str]:
    """Keys of ``raw`` (and its nested sections) that ``model`` does not know, with a hint each."""
    if homes is None:
        homes = {}
        _field_homes(model, path, homes)
    if not isinstance(raw, Mapping):
        return []
    found = []
    for key, value in raw.items():
        info = model.model_fields.get(key)
        child_model = _section_type(info.annotation if info is not None else None)
        if child_model is not None:
            found += unknown_keys(child_model, value, f"{path}.{key}", homes)
        elif info is None:
            close = difflib.get_close_matches(str(key), list(model.model_fields), n=1)
            if key in homes:
                hint = f" (it belongs in {' or '.join(homes[key])})"
            else:
                hint = f" (did you mean {close[0]}?)" if close else ""
            found.append(f"{path}.{key}{hint}")
    return found
