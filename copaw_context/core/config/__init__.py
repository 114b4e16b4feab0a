"""The configuration.

The ``running`` section of ``agent.json``, validated, and the flat ``Settings`` the steps read.
Modules: :mod:`._rules`, :mod:`.memory`, :mod:`.running`, :mod:`.sections`, :mod:`.settings`.
"""

__all__: list[str] = []
