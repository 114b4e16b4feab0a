"""The ``copaw-context`` command line: ``check-config``, ``demo``, ``chat``, ``memory``,
``qwenpaw``, ``store``.

Importing it loads no AgentScope module: ``demo`` and ``chat`` import the adapter when run.
The entry point imports the commands inside its Ctrl-C guard, so an early Ctrl-C is one line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (see ``copaw_context.cli._app.main``); Ctrl-C while it loads is
    one line and status 130, as later."""
    try:
        from copaw_context.cli._app import main as run
    except KeyboardInterrupt:
        print("\ncopaw-context: interrupted", file=sys.stderr)
        return 130
    return run(argv)
