"""Ctrl-C in a long command: the current step is cancelled, then the command ends."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

__all__ = ["stop_on_ctrl_c"]


@contextlib.contextmanager
def stop_on_ctrl_c() -> Iterator[asyncio.Event]:
    """Ctrl-C cancels the turn (AgentScope answers the interruption) and ends the demo after
    it, instead of going on with the next scripted turn; off the main thread, nothing."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stopped = asyncio.Event()

    def on_ctrl_c() -> None:
        stopped.set()
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_ctrl_c)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
        yield stopped
        return
    try:
        yield stopped
    finally:
        loop.remove_signal_handler(signal.SIGINT)
