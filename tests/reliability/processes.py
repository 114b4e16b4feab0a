"""Child processes for the crash and load tests: forked from a fork server that has the
package, AgentScope and the suite imported once (a child starts in milliseconds, from a
single-threaded parent), each joined with a timeout so that a hang fails instead of blocking."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.context import ForkServerContext
from typing import Any

__all__ = ["fork_context", "run_child", "run_children"]

_PRELOAD = ["tests.reliability.crash_child", "tests.reliability.load_child"]


def fork_context() -> ForkServerContext:
    """The fork-server context the children start from (see the module docstring)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)  # takes effect when the server starts
    return context


def run_child(target: Callable[..., None], args: tuple[Any, ...], timeout: float = 120.0) -> int:
    """Run ``target(*args)`` in a child process; its exit code (-9: killed by SIGKILL)."""
    process = fork_context().Process(target=target, args=args)
    process.start()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
        raise AssertionError(f"{target.__name__}{args!r:.200} hung for {timeout:g} s")
    assert process.exitcode is not None
    return process.exitcode


def run_children(
    target: Callable[..., None], argument_lists: list[tuple[Any, ...]], timeout: float = 120.0
) -> list[int]:
    """:func:`run_child` for each argument tuple, two at a time (one per core)."""
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda args: run_child(target, args, timeout), argument_lists))
