"""AgentScope's own log lines in the interactive commands."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ["host_warnings_quiet"]


@contextlib.contextmanager
def host_warnings_quiet() -> Iterator[None]:
    """AgentScope's own retry warnings stay out of the output (``chat``: a failed call is the
    one ``assistant> error:`` line naming the cause; ``demo``: a closed pipe is no model
    failure); its errors still show."""
    host_logger = logging.getLogger("as")  # AgentScope's logger
    level = host_logger.level
    host_logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        host_logger.setLevel(level)
