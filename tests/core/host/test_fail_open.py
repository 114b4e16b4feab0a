"""``fail_open``: every adapter's guard that keeps a failure inside the package from killing the
agent's reply (logged with what is kept), while a cancellation still cancels."""

from __future__ import annotations

import asyncio
import logging

import pytest

from copaw_context.core.host.hook_base import fail_open


def test_a_failure_is_logged_and_the_host_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    reached = []
    with caplog.at_level(logging.ERROR, logger="copaw_context"), fail_open("stage 1 failed; kept"):
        reached.append("before")
        raise RuntimeError("disk on fire")
    assert reached == ["before"]
    (entry,) = caplog.records
    assert entry.getMessage() == "copaw-context: stage 1 failed; kept"
    assert entry.exc_info is not None and "disk on fire" in str(entry.exc_info[1])


def test_a_cancellation_is_not_swallowed() -> None:
    async def step() -> None:
        with fail_open("never logged"):
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(step())
