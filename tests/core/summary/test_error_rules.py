"""The guarded rule sets behind the error scan give the answer of their whole alternation."""

from __future__ import annotations

import re

import pytest

from copaw_context.core.summary.error_rules import (
    DECISIVE_RULES,
    EXIT_CODE_RULES,
    FAILURE_RULES,
    OTHER_RULES,
    WRAPPER_RULES,
    RuleSet,
)
from copaw_context.core.summary.errors import DECISIVE, OTHER, WRAPPER, rank_line, scan_errors
from tests.error_families import FAMILIES
from tests.error_families_zh import FAMILIES_ZH

RULE_SETS = {
    "decisive": DECISIVE_RULES,
    "wrapper": WRAPPER_RULES,
    "other": OTHER_RULES,
    "failure": FAILURE_RULES,
    "exit-code": EXIT_CODE_RULES,
}
# Every line of the realistic outputs and more, each also in upper and lower case.
_LINES = [line for _, text, _, _ in FAMILIES + FAMILIES_ZH for line in text.split("\n")] + [
    *("ERROR: boom", "error: boom", "Error: boom", "FATAL: x", "fatal: not a git repository"),
    *("src/x.c:3:1: Error: expected ';'", "0001 INFO build step ok", "exited with code 137"),
    *("RETURN CODE = 2", "退出码：3", "Killed", "sh: 1: foo: not found", "构建失败：找不到模块"),
    *("a ✖ 3 problems", "x Error 2", "*** [a] 错误 2", "YAML Error", "total 3 failed"),
]
LINES = [variant for line in _LINES for variant in (line, line.upper(), line.lower())]


def _whole(rules: RuleSet) -> re.Pattern[str]:
    patterns = [pattern.pattern for _, pattern in rules.guarded]
    if rules.anchored is not None:
        patterns.append(rules.anchored.pattern)
    return re.compile("|".join(f"(?:{p})" for p in patterns))


@pytest.mark.parametrize("name", RULE_SETS)
def test_guards_never_hide_a_match(name: str) -> None:
    rules = RULE_SETS[name]
    whole = _whole(rules)
    assert len(LINES) > 800
    for line in LINES:
        assert rules.search(line) == bool(whole.search(line)), (name, line)
        assert rules.search(line, line.lower()) == rules.search(line)


@pytest.mark.parametrize("name", RULE_SETS)
def test_guards_are_lower_case_and_unguarded_patterns_anchored(name: str) -> None:
    rules = RULE_SETS[name]
    for guards, _ in rules.guarded:
        assert all(word == word.lower() and word for word in guards)
    if rules.anchored is not None:
        alternatives = rules.anchored.pattern[3:-1].split(")|(?:")
        for alternative in alternatives:
            assert all(part.startswith("^") for part in _top_level(alternative)), alternative


def _top_level(pattern: str) -> list[str]:
    """The alternatives of ``pattern`` at depth 0."""
    parts, depth, start, escaped = [], 0, 0, False
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return [*parts, pattern[start:]]


def test_ranks_of_a_plain_log_and_of_decorated_lines() -> None:
    log = "\n".join(
        [
            "0000001 INFO [03] build step cache miss",
            "0000002 ERROR [51] worker queue retry",
            "#8 1.234 ERROR: failed to solve: process did not complete successfully",
            "│ Error: Invalid provider configuration",
            "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin",
        ]
    )
    assert [(e.text[:18], e.rank) for e in scan_errors(log)] == [
        ("0000002 ERROR [51]", OTHER),
        ("#8 1.234 ERROR: fa", WRAPPER),
        ("│ Error: Invalid p", DECISIVE),
        ("[ERROR] Failed to ", WRAPPER),
    ]
    assert rank_line("0000001 INFO [03] build step cache miss") is None
