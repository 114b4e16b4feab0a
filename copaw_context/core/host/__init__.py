"""What the engine needs from a host and what every adapter shares.

The ``HostSession`` protocol, the hook and session bases. Modules: :mod:`.hook_base`,
:mod:`.protocol`, :mod:`.session_base`.
"""

__all__: list[str] = []
