"""``read_file`` counts lines as ``wc -l`` does, through a real agent on each major: a file
of 20 newline-terminated lines has 20 lines, ``start_line=21`` is an error naming the
count, and a range read in full is not called truncated."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.tool_rounds import tool_round

_TEXT = "".join(f"line {i}\n" for i in range(1, 21))


def test_read_file_counts_lines_as_wc_and_marks_complete_ranges(driver: HostDriver) -> None:
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        (workspace / "f.txt").write_text(_TEXT, encoding="utf-8")
        calls = [
            ("read_file", {"file_path": "f.txt"}),
            ("read_file", {"file_path": "f.txt", "start_line": 2, "end_line": 3}),
            ("read_file", {"file_path": "f.txt", "start_line": 21}),
            ("read_file", {"file_path": "f.txt", "start_line": 4, "end_line": 20}),
        ]
        (whole, pair, past, rest), _ = asyncio.run(tool_round(driver, workspace, calls, []))
        real = (workspace / "f.txt").resolve()
    lines = _TEXT.count("\n")
    assert whole == _TEXT
    assert pair.startswith("line 2\nline 3\n\n[Lines 2-3 of 20 shown in full.")
    assert f'file_path="{real}" start_line=4.]' in pair
    assert "truncated" not in pair.lower()
    assert past.startswith("Error: start_line=21 is past the end of")
    assert "the file has 20 lines. Use start_line between 1 and 20." in past
    assert rest == "".join(f"line {i}\n" for i in range(4, 21))
    assert "line 1\n" + pair.rpartition("\n[")[0] + rest == _TEXT  # continuation is exact
    record("read_file_lines", file_lines=lines, reads=len(calls))
