"""The committed JSON Schema refuses the out-of-range values check-config refuses (newuser D7).

Pydantic leaves ``ge``/``le`` (not JSON Schema keywords) inside the member of an ``X | None``
field, so editors and jsonschema accepted e.g. ``memory.model_max_input_length: 0``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from copaw_context.core.config.running import ConfigError, parse_running_config

SCHEMA = Path(__file__).resolve().parents[3] / "configs" / "agent-json.schema.json"

CASES = [
    {"memory": {"model_max_input_length": 0}},
    {"memory": {"model_max_input_length": -5}},
    {"memory": {"model_max_input_length": 999}},
    {"reme_light_memory_config": {"auto_memory_search_config": {"max_results": 0}}},
    {"reme_light_memory_config": {"auto_memory_search_config": {"max_results": 99}}},
    {"reme_light_memory_config": {"auto_memory_interval": 0}},
    {"reme_light_memory_config": {"auto_memory_interval": -5}},
]


def _numeric_nodes(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in _numeric_nodes(item)]
    if not isinstance(node, dict):
        return []
    here = [node] if node.get("type") in ("integer", "number") else []
    return here + [found for value in node.values() for found in _numeric_nodes(value)]


@pytest.mark.parametrize("running", CASES, ids=json.dumps)
def test_schema_refuses_what_check_config_refuses(running: dict[str, Any]) -> None:
    document = {"running": running}
    with pytest.raises(ConfigError):
        parse_running_config(document)
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert list(validator.iter_errors(document)), document


def test_the_schema_has_no_pydantic_only_bound_keywords() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    left = [n for n in _numeric_nodes(schema) if {"ge", "le", "gt", "lt"} & n.keys()]
    assert not left, left


def test_the_schema_still_accepts_the_bounds() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    document = {
        "running": {
            "memory": {"model_max_input_length": 1000},
            "reme_light_memory_config": {
                "auto_memory_interval": 1,
                "auto_memory_search_config": {"max_results": 50},
            },
        }
    }
    assert not list(validator.iter_errors(document))
