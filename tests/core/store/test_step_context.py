"""The store as one of the StepContext's collaborators: the file store of the workspace, and
a configured PostgreSQL store said to be unused (never an error that stops the agent)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.select import STORE_ENV


def test_the_context_holds_the_workspaces_file_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        ctx = StepContext(RunningConfig(), tmp_path)
    assert isinstance(ctx.workspace_store, FileStore)
    assert ctx.workspace_store.workspace == tmp_path
    assert "workspace store" not in caplog.text


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("postgresql://agent@db:5432/copaw", "does not use yet"),
        ("mysql://agent@db/copaw", "must be a PostgreSQL URL"),
    ],
)
def test_a_store_setting_is_reported_and_the_files_are_used(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    value: str,
    said: str,
) -> None:
    monkeypatch.setenv(STORE_ENV, value)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        ctx = StepContext(RunningConfig(), tmp_path)
    assert isinstance(ctx.workspace_store, FileStore)
    assert said in caplog.text and STORE_ENV in caplog.text
