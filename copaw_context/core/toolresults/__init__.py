"""Tool results.

The pruning policy, byte-bounded truncation, the ``<<<TRUNCATED>>>`` notice and the offload
store. Modules: :mod:`._offload_write`, :mod:`._text_bytes`, :mod:`.notice`, :mod:`.offload`,
:mod:`.offload_refs`, :mod:`.policy`, :mod:`.truncation`.
"""

__all__: list[str] = []
