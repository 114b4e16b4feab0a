"""The ``copaw-context`` command line: ``check-config``, ``demo``, ``chat``, ``memory``.

Importing it loads no AgentScope module: ``demo`` and ``chat`` import the adapter when run.
"""

from copaw_context.cli.main import main

__all__ = ["main"]
