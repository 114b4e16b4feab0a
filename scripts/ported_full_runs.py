"""The full-size runs of two ported peer suites (the suite runs them small): 5 long random
sessions of 100-110 turns (tests/ported/test_long_sessions.py) and 3 workspaces of up to 6
random external SIGKILLs over 12 turns (tests/ported/test_external_kills.py), on the
installed AgentScope major. Every invariant is asserted as in the tests; prints the counted
figures (model calls, largest input / window, kills landed, archive lines, losses).

Run: PYTHONPATH=. .venv/bin/python scripts/ported_full_runs.py [long|kills]
(1.x: AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true PYTHONPATH=. .venv-as1/bin/python ...)
About 4 min (long) and 2 min (kills) a major on a 2-core machine.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from copaw_context import installed_agentscope_major
from tests.ported.test_external_kills import killed_workspace
from tests.ported.test_long_sessions import check_long_session, long_sessions
from tests.reliability.drivers import available_drivers

SESSIONS, MIN_TURNS, MAX_TURNS = 5, 100, 110
WORKSPACES, KILLS, KILL_TURNS = 3, 6, 12


def long_runs() -> None:
    driver = available_drivers()[0]
    rows: list[dict[str, Any]] = []

    @long_sessions(SESSIONS, MIN_TURNS, MAX_TURNS)
    def one(spec: dict[str, Any]) -> None:
        figures = check_long_session(driver, spec)
        rows.append({"window": spec["window"], "compactor": spec["compactor"]} | vars(figures))

    one()
    for row in rows:
        print(
            f"long session: window {row['window']}, {row['compactor']}, "
            f"{row['steps']} turns checked, {row['model_calls']} model calls, "
            f"largest input {row['max_input_ratio']:.3f} of the window; "
            f"over the window {row['over_window']}, invalid {row['invalid_inputs']}, "
            f"lost {row['lost']}, duplicated {row['duplicated']}"
        )
    print(f"long sessions: {len(rows)}, {sum(r['model_calls'] for r in rows)} model calls")


def kill_runs() -> None:
    driver = available_drivers()[0]
    with tempfile.TemporaryDirectory() as name:
        for seed in range(WORKSPACES):
            workspace = Path(name) / f"ws{seed}"
            workspace.mkdir()
            figures = killed_workspace(driver, workspace, seed, KILLS, KILL_TURNS)
            print(f"killed workspace {seed}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))


def main(which: list[str]) -> None:
    # AgentScope 1.x's formatters warn for every thinking block they skip (host noise).
    logging.getLogger("as").setLevel(logging.ERROR)
    print(f"AgentScope {installed_agentscope_major()}.x")
    for name, run in (("long", long_runs), ("kills", kill_runs)):
        if not which or name in which:
            started = time.monotonic()
            run()
            print(f"{name}: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
