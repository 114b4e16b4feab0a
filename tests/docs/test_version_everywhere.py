"""One version everywhere (issue 22, item 3): ``copaw_context.__version__`` is what
``--version`` and pip's metadata report and the newest released section of CHANGELOG.md;
the bootstrap reinstalls when it changes, so the metadata cannot lag behind."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
from importlib.metadata import version

import copaw_context
from tests.docs.readme_blocks import ROOT

CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_changelog_has_unreleased_then_released_sections() -> None:
    sections = re.findall(r"^## \[([^\]]+)\](?: - (\S+))?$", CHANGELOG, re.M)
    assert sections[0] == ("Unreleased", "")
    released = sections[1:]
    assert released, "no released section"
    assert released[0][0] == copaw_context.__version__  # the newest release is this version
    numbers = [tuple(int(part) for part in name.split(".")) for name, _ in released]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
    for _, date in released:
        datetime.date.fromisoformat(date)  # YYYY-MM-DD
    assert len(re.findall(r"^## \[Unreleased\]$", CHANGELOG, re.M)) == 1


def test_version_pip_and_the_changelog_agree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "copaw_context.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout == f"copaw-context {copaw_context.__version__}\n"
    assert version("copaw-context") == copaw_context.__version__
    assert f"## [{version('copaw-context')}] - " in CHANGELOG


def test_the_bootstrap_reinstalls_when_the_version_changes() -> None:
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    stamp = next(line for line in bootstrap.splitlines() if line.startswith("want="))
    assert "version_line" in stamp and "pyproject.toml" in stamp
    assert "grep -E '^__version__ = ' copaw_context/__init__.py" in bootstrap
    init = (ROOT / "copaw_context" / "__init__.py").read_text(encoding="utf-8")
    assert len(re.findall(r"^__version__ = ", init, re.M)) == 1  # what the grep finds
