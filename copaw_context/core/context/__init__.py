"""What the pipeline's steps share: the :class:`~.step_context.StepContext` and its parts.

:mod:`.step_context` (the context object), :mod:`.step` (the ``Step`` protocol and ``Turn``),
:mod:`.ledger` (per-message state between steps; its split items in :mod:`.ledger_split`, what
changed in a message in :mod:`.fingerprint`, the offload names counted in :mod:`.file_counts`),
:mod:`.state` (typed per-agent state),
:mod:`.report` (token figures), :mod:`.status` (chat status lines). It imports no step and no
engine, so every step imports it without a circle; this ``__init__`` imports nothing, so a
leaf such as :mod:`.state` is importable from anywhere.
"""

__all__: list[str] = []
