"""The workspace store: one protocol for every piece of state a workspace keeps.

:mod:`.protocol` (``WorkspaceStore``, its records and errors, and which step uses each
operation), :mod:`.lines` (what both stores do alike), :mod:`.files` + :mod:`.file_streams`
(``FileStore``: today's files, the default), :mod:`.postgres` + :mod:`.postgres_schema`
(``PostgresStore``, the ``postgres`` extra), :mod:`.select` (``open_store``: which one).
"""

__all__: list[str] = []
