"""What the engine needs from a host and what every adapter shares.

The ``HostSession`` protocol (:mod:`.protocol`), the hook and session bases
(:mod:`.hook_base`, :mod:`.hook_events`, :mod:`.session_base`, :mod:`.dict_session`), and
what is the same for every host's blocks and files: :mod:`.views`, :mod:`.dict_blocks`,
:mod:`.loaded`, :mod:`.repair`, :mod:`.thinking`, :mod:`.prompt`, :mod:`.models`,
:mod:`.ratios`, :mod:`.runtime_hint`, :mod:`.agent_entry`, :mod:`.delegating`. An adapter
only translates its host's types into these.
"""

__all__: list[str] = []
