"""The benchmark's compaction profile: whose time a standard-library function's is, and the
handler split's report (issue 23: the profile that shows why a target is not met)."""

from __future__ import annotations

import pytest

from benchmarks.handler_split import handler_table, handler_worst_ratio
from benchmarks.profile import _owners, _where

PKG = "/x/copaw_context/core/archive/store.py"
RULES = "/x/copaw_context/core/summary/rules.py"
JSON = "/usr/lib/python3.11/json/encoder.py"
BUILTIN = "~"


def _entry(own: float, callers: dict[tuple[str, int, str], float]) -> tuple[object, ...]:
    return (1, 1, own, own, {c: (1, 1, t, t) for c, t in callers.items()})


def test_a_package_function_owns_its_time_and_a_library_keeps_its_name() -> None:
    assert _where(PKG) == "core/archive/store"
    assert _where("/v/lib/python3.11/site-packages/tiktoken/core.py") == "tiktoken"
    assert _where(JSON) == "stdlib and builtins"


def test_stdlib_time_goes_to_the_package_callers_by_their_split() -> None:
    archive, rules = (PKG, 10, "append"), (RULES, 5, "enforce")
    encode, lower = (JSON, 1, "encode"), (BUILTIN, 0, "<method 'lower'>")
    entries = {
        archive: _entry(0.1, {}),
        rules: _entry(0.2, {}),
        encode: _entry(0.3, {archive: 0.3}),
        # called from the encoder (itself called by the archive) and from the rules
        lower: _entry(0.4, {encode: 0.1, rules: 0.3}),
    }
    memo: dict[object, dict[str, float]] = {}
    assert _owners(entries, encode, memo, set()) == {"core/archive/store": 1.0}
    owners = _owners(entries, lower, memo, set())
    assert owners == pytest.approx({"core/archive/store": 0.25, "core/summary/rules": 0.75})


def test_a_cycle_of_stdlib_callers_ends_at_the_package() -> None:
    rules, a, b = (RULES, 5, "enforce"), (JSON, 1, "a"), (JSON, 2, "b")
    entries = {
        rules: _entry(0.1, {}),
        a: _entry(0.2, {b: 0.1, rules: 0.1}),
        b: _entry(0.2, {a: 0.2}),
    }
    assert _owners(entries, b, {}, set()) == {"core/summary/rules": 1.0}


def test_the_handler_table_and_its_worst_reserve() -> None:
    split = {
        "n": 3000,
        "cold_ms": 400.0,
        "rows": {
            1000: {"handler_ms": 3.0, "agentscope_ms": 4.0},
            50_000: {"handler_ms": 6.0, "agentscope_ms": 5.0},
        },
    }
    assert handler_worst_ratio(split) == 1.2
    table = "\n".join(handler_table(split))
    assert "| 50,000 | 6.00 | 5.00 |" in table
    assert "400 ms" in table
