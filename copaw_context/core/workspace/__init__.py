"""Where an agent's workspace is, and keeping every file the package touches inside it.

Modules: :mod:`.location` (the workspace folder), :mod:`.confine` and :mod:`.confine_write`
(no link leaves the workspace; race-free writes), :mod:`.durable` (the fsyncs of renamed files,
group-committed in the background, and the barrier before what depends on them),
:mod:`.safe_open` (where ``read_file`` reads), :mod:`.locked_io` (inter-process locks, atomic
replaces and locked appends: the memory files and the file store), :mod:`.fd_lock` (locks on
the lock file's own descriptor, never opened by name).
"""

__all__: list[str] = []
