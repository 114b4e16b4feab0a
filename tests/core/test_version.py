"""One version string: the package's ``__version__`` is what pip and ``--version`` report."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import copaw_context

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_takes_its_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "copaw_context.__version__"


def test_the_installed_distribution_reports_the_package_version() -> None:
    assert version("copaw-context") == copaw_context.__version__
