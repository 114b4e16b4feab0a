"""How much the reliability suite tries, and the figures it reports.

Normal mode fits the README test command on a 2-core machine; ``COPAW_SOAK=1`` multiplies
the sessions, faults and steps for a benchmark machine (every test still runs and asserts
in both modes). ``COPAW_FIGURES=path.jsonl`` appends what each test tried and lost, one JSON
object per line (with the AgentScope major it ran under), to ``path``: docs/reliability.md
quotes those figures.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from copaw_context import installed_agentscope_major

__all__ = ["SOAK", "record", "scaled"]

SOAK = os.environ.get("COPAW_SOAK", "").strip() not in ("", "0", "false", "no")
"""Soak mode: the longer runs (``COPAW_SOAK=1``)."""

_lock = threading.Lock()


def scaled(normal: int, soak: int) -> int:
    """``normal`` in the README test run, ``soak`` under ``COPAW_SOAK=1``."""
    return soak if SOAK else normal


def record(test: str, **figures: Any) -> None:
    """Report what ``test`` tried and what it lost (see the module docstring)."""
    path = os.environ.get("COPAW_FIGURES")
    if not path:
        return
    entry = {"test": test, "soak": SOAK, "agentscope": installed_agentscope_major(), **figures}
    line = json.dumps(entry, sort_keys=True, default=str)
    with _lock, open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
