"""The README's two commands show progress on their long steps (issue 22, item 1): pip's
install and mypy say every few seconds that they are still running (and pip in which phase),
and the AgentScope 1.x test run streams its lines, prefixed, while it runs.

The helpers of scripts/_progress.sh run here on real commands that wait until the test has
seen the line it expects, so nothing depends on timing; a waiting command gives up after
120 s (a hang guard: the test then fails on a missing line)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docs.readme_blocks import ROOT

HELPERS = ROOT / "scripts" / "_progress.sh"


def waiting_command(flag: Path, before: str = "", after: str = "", status: int = 0) -> str:
    """A Python command that prints ``before``, waits for ``flag``, prints ``after`` to
    stderr and exits with ``status``."""
    code = (
        "import os, sys, time\n"
        f"print({before!r}, flush=True) if {before!r} else None\n"
        "deadline = time.monotonic() + 120\n"
        f"while not os.path.exists({str(flag)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        f"print({after!r}, file=sys.stderr, flush=True) if {after!r} else None\n"
        f"sys.exit({status})\n"
    )
    return f"{sys.executable} -c {_quote(code)}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def start(script: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", "-c", f"set -euo pipefail; source {HELPERS}; {script}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )


def test_heartbeat_says_a_quiet_command_still_runs(tmp_path: Path) -> None:
    flag = tmp_path / "done"
    job = start(f'HEARTBEAT_SECONDS=1 heartbeat "mypy" "" {waiting_command(flag, status=3)}')
    assert job.stdout is not None
    seen = [job.stdout.readline(), job.stdout.readline()]
    flag.touch()
    rest = job.stdout.read()
    assert job.wait(timeout=120) == 3  # the command's status
    for line in seen:
        assert line.startswith("mypy: still running after ") and line.endswith(" s\n"), seen
    assert "Traceback" not in rest


def test_heartbeat_names_pips_phase_and_keeps_its_output_in_the_log(tmp_path: Path) -> None:
    flag, log = tmp_path / "done", tmp_path / "install.log"
    command = waiting_command(flag, before="Collecting croniter>=2.0", after="pip: done")
    job = start(f'HEARTBEAT_SECONDS=1 heartbeat "bootstrap: .venv" "{log}" {command}')
    assert job.stdout is not None
    line = job.stdout.readline()
    while "(pip:" not in line and line:  # the first beat may come before pip's first line
        line = job.stdout.readline()
    flag.touch()
    rest = job.stdout.read()
    assert job.wait(timeout=120) == 0
    assert line.startswith("bootstrap: .venv: still running after ")
    assert line.endswith("(pip: Collecting croniter>=2.0)\n")
    assert "pip: done" not in rest and "Collecting" not in rest  # pip's output: the log only
    assert log.read_text() == "Collecting croniter>=2.0\npip: done\n"


def test_prefixed_streams_each_line_while_the_command_runs(tmp_path: Path) -> None:
    flag, log = tmp_path / "done", tmp_path / "pytest.log"
    command = waiting_command(flag, before="... [ 10%]", after="1 failed", status=4)
    job = start(f'prefixed "[1.x] " "{log}" {command}')
    assert job.stdout is not None
    first = job.stdout.readline()  # read while the command still waits: it streamed
    flag.touch()
    rest = job.stdout.read()
    assert job.wait(timeout=120) == 4
    assert first == "[1.x] ... [ 10%]\n"
    assert rest == "[1.x] 1 failed\n"
    assert log.read_text() == "... [ 10%]\n1 failed\n"


def test_the_two_commands_use_them() -> None:
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    tests = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert "source scripts/_progress.sh" in bootstrap and "source scripts/_progress.sh" in tests
    assert 'heartbeat "bootstrap: $venv" "$log"' in bootstrap and "pip install" in bootstrap
    assert tests.count('heartbeat "   mypy') == 3
    assert 'prefixed "[1.x] " "$as1_log"' in tests
    assert 'prefixed "[qwenpaw] " "$qwenpaw_log"' in tests  # the QwenPaw run streams too
    assert "bash scripts/bootstrap_qwenpaw.sh &" in tests
    assert 'prefixed "[qwenpaw2] " "$qwenpaw2_log"' in tests  # and the QwenPaw 2.2 run
    assert "bash scripts/bootstrap_qwenpaw.sh 2 &" in tests
    assert 'cat "$as1_log"' not in tests  # no longer printed only at the end


def test_every_pip_run_of_the_bootstrap_has_a_heartbeat() -> None:
    lines = (ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8").splitlines()
    pip_runs = [n for n, line in enumerate(lines) if "-m pip install" in line or "-m venv" in line]
    assert len(pip_runs) >= 3  # creating a venv, upgrading its pip, installing the package
    for n in pip_runs:
        statement = " ".join(lines[max(0, n - 2) : n + 1])
        assert "heartbeat " in statement, f"bootstrap.sh line {n + 1} runs pip silently"
