"""Ctrl-C while the command line is still loading its commands is one line and 130 too."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest

from copaw_context import cli


class _CtrlCWhileLoading(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname == "copaw_context.cli._app":
            raise KeyboardInterrupt
        return None


def test_ctrl_c_during_the_imports(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "copaw_context.cli._app", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_CtrlCWhileLoading(), *sys.meta_path])
    assert cli.main(["--version"]) == 130
    assert capsys.readouterr().err.strip() == "copaw-context: interrupted"
