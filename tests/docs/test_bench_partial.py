"""A partial benchmark run (``bench.sh --quick``, ``--only``) leaves the committed results,
the figures behind docs/performance.md, alone (issue 22, item 7)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.docs.readme_blocks import ROOT

RESULTS = ROOT / "benchmarks" / "results"


def test_a_quick_partial_run_does_not_replace_the_committed_results() -> None:
    committed = {p.name: p.read_bytes() for p in RESULTS.iterdir() if p.is_file()}
    partial = ROOT / ".venv" / "bench-partial" / "latest.md"
    partial.unlink(missing_ok=True)
    done = subprocess.run(
        ["bash", "scripts/bench.sh", "--quick", "--only", "cut"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert {p.name: p.read_bytes() for p in RESULTS.iterdir() if p.is_file()} == committed
    assert "Run: --quick" in partial.read_text(encoding="utf-8")
    assert "written to .venv/bench-partial" in done.stderr + done.stdout


def test_an_explicit_out_is_kept(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "scripts/bench.sh", "--only", "cut", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Run: --quick" in (tmp_path / "latest.md").read_text(encoding="utf-8")
