"""The store as one of the StepContext's collaborators: the file store of the workspace, a
configured PostgreSQL store taken for the offload's blobs (opened on first use, not here),
and an invalid setting said (never an error that stops the agent)."""

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


def test_a_postgresql_store_carries_the_offload_and_is_opened_only_when_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(STORE_ENV, "postgresql://agent@db:5432/copaw")
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        ctx = StepContext(RunningConfig(), tmp_path)
    assert isinstance(ctx.workspace_store, FileStore)  # the other steps: the files still
    blobs = ctx.blobs
    assert blobs is not None and blobs.workspace == tmp_path.absolute()
    assert blobs.failure is None  # nothing was connected to yet (there is no db host)
    assert "workspace store" not in caplog.text


def test_an_invalid_store_setting_is_reported_and_the_files_are_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(STORE_ENV, "mysql://agent@db/copaw")
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        ctx = StepContext(RunningConfig(), tmp_path)
    assert isinstance(ctx.workspace_store, FileStore)
    assert ctx.blobs is None
    assert "must be a PostgreSQL URL" in caplog.text and STORE_ENV in caplog.text
