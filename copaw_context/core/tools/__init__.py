"""The ``read_file`` tool the package gives the agent.

The sandboxed streaming reader and its schema text. Modules: :mod:`._line_index`, :mod:`.docs`,
:mod:`.file_reader`, :mod:`.read_tool`.
"""

__all__: list[str] = []
