"""The decisive error line of Chinese-locale output (zh_CN toolchains and Chinese messages)."""

from __future__ import annotations

import pytest

from copaw_context.core.summary.errors import DECISIVE, WRAPPER, scan_errors
from tests.error_families import facts_of
from tests.error_families_zh import FAMILIES_ZH


@pytest.mark.parametrize(
    ("family", "output", "decisive", "named"), FAMILIES_ZH, ids=[f[0] for f in FAMILIES_ZH]
)
def test_the_decisive_error_line_of_chinese_output_is_carried(
    family: str, output: str, decisive: list[str], named: str
) -> None:
    lines, outcome = facts_of(output)
    for line in decisive:
        assert any(kept.startswith(line.strip()) for kept in lines), (family, line, lines)
    assert outcome.startswith("shell(build): error — ") and named in outcome, (family, outcome)


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("1 个错误", WRAPPER),
        ("3 个错误", WRAPPER),
        ("命令执行失败，退出码 126", WRAPPER),
        ("make: *** [Makefile:23：parser.o] 错误 1", WRAPPER),
        ("原因: java.lang.ClassNotFoundException: com.example.App", DECISIVE),
        ("致命错误：不是 git 仓库", DECISIVE),
    ],
)
def test_chinese_tallies_are_wrappers_and_causes_decisive(line: str, rank: int) -> None:
    assert [found.rank for found in scan_errors(line)] == [rank]
