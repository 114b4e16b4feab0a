"""Tool results.

The pruning policy, byte-bounded truncation, the ``<<<TRUNCATED>>>`` notice and the offload
store. Modules: :mod:`._offload_write`, :mod:`._text_bytes`, :mod:`.notice`, :mod:`.offload`,
:mod:`.offload_cut` (save whole, then cut), :mod:`.offload_names` (the names a cleanup keeps),
:mod:`._offload_sweep` (the cleanup of the local files), :mod:`.offload_refs`, :mod:`.policy`,
:mod:`.truncation`, :mod:`._worth` (whether a cut makes a result shorter at all).
"""

__all__: list[str] = []
