"""Which parts of a context to compact and which to keep.

The split planner and the one tool call/result pairing rule. Modules: :mod:`.context_check`,
:mod:`.pair_repair`, :mod:`.pairing`, :mod:`.split`.
"""

__all__: list[str] = []
