"""Tests on real QwenPaw 2.2 (run in .venv-qwenpaw2 only; tests/conftest.py leaves this folder
out where QwenPaw 2.x is not installed).

QwenPaw reads its working folder (``QWENPAW_WORKING_DIR``) once, when it is first imported:
this conftest points it at a fresh folder for the whole run before any test imports QwenPaw.
Each test then gets its own agent (profile, workspace) in it (``kit.QwenPawSite``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_HOME = Path(tempfile.mkdtemp(prefix="copaw-context-qwenpaw2-"))
os.environ["QWENPAW_WORKING_DIR"] = str(_HOME)
atexit.register(shutil.rmtree, _HOME, True)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in a fresh folder: ReMe, QwenPaw's memory manager, logs to ``./logs``."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def qwenpaw_home() -> Iterator[Path]:
    """QwenPaw's working folder for this run (one per process; see the module docstring)."""
    yield _HOME
