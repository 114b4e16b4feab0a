"""A workspace whose disk fills up or turns read-only on demand.

As root (where ``mount`` works) the workspace is a small tmpfs: :meth:`Disk.fill` writes a
ballast file until the kernel answers ``ENOSPC``, :meth:`Disk.read_only` remounts it
read-only (``EROFS``). Elsewhere the same faults come from the fault-injecting file layer
(:func:`tests.reliability.faults.watch_io`): every write, open for writing, sync, rename and
mkdir under the workspace raises the same ``OSError``. :meth:`Disk.restore` makes it
writable again. ``Disk.kind`` says which of the two a test ran on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.reliability.faults import IoEvent, watch_io

__all__ = ["Disk", "unreliable_disk"]

_TMPFS_BYTES = 8 * 1024 * 1024
_FAILING_KINDS = ("open", "write", "fsync", "replace", "mkdir", "truncate")


def _mount(*args: str) -> bool:
    try:
        done = subprocess.run(["mount", *args], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


class Disk:
    """The workspace at :attr:`root` and the faults it can be given."""

    def __init__(self, root: Path, tmpfs: bool) -> None:
        self.root = root
        self.kind = "tmpfs" if tmpfs else "fault layer"
        self.failing: int | None = None  # the errno the fault layer raises, None: healthy
        self._ballast = root / ".ballast"

    def fill(self) -> None:
        """Disk full: no byte more can be written (``ENOSPC``)."""
        if self.kind == "fault layer":
            self.failing = errno.ENOSPC
            return
        chunk = b"\0" * 65536
        with open(self._ballast, "ab", buffering=0) as handle:
            while True:
                try:
                    handle.write(chunk)
                except OSError as error:
                    assert error.errno == errno.ENOSPC, error
                    if len(chunk) == 1:
                        break
                    chunk = chunk[: len(chunk) // 2]

    def read_only(self) -> None:
        """A read-only workspace (``EROFS``)."""
        if self.kind == "fault layer":
            self.failing = errno.EROFS
            return
        assert _mount("-o", "remount,ro", str(self.root)), "remounting the tmpfs read-only failed"

    def restore(self) -> None:
        """Writable again, with room."""
        if self.kind == "fault layer":
            self.failing = None
            return
        assert _mount("-o", "remount,rw", str(self.root)), "remounting the tmpfs failed"
        self._ballast.unlink(missing_ok=True)

    def _hook(self, event: IoEvent) -> bool:
        if self.failing is not None and event.phase == "before" and event.kind in _FAILING_KINDS:
            raise OSError(self.failing, os.strerror(self.failing), event.path)
        return False


@contextlib.contextmanager
def unreliable_disk() -> Iterator[Disk]:
    """A fresh workspace on a :class:`Disk` (tmpfs as root, else the fault layer)."""
    base = Path(tempfile.mkdtemp(prefix="copaw-disk-"))
    root = base / "workspace"
    root.mkdir()
    mounted = os.geteuid() == 0 and _mount(
        "-t", "tmpfs", "-o", f"size={_TMPFS_BYTES},mode=0755", "tmpfs", str(root)
    )
    disk = Disk(root, mounted)
    try:
        if mounted:
            yield disk
        else:
            with watch_io(root, disk._hook):
                yield disk
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)
