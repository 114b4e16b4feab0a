"""The dialog archive.

Raw messages removed by compaction, one JSON line each in ``dialog/YYYY-MM-DD.jsonl``. Modules:
:mod:`.lines`, :mod:`.reader`, :mod:`.store`.
"""

__all__: list[str] = []
