"""A folder swapped for a link out of the workspace right after every check of it.

:func:`swap_after_checks` wraps every ``check_inside`` the package imported: before each
check the real folder is put back (so the check passes), right after it the folder is
moved aside and a symbolic link to ``outside`` takes its place. That is the attacker's
best timing, placed deterministically: whatever the package does between its check and
its write, it meets the link. :meth:`LinkRace.restore` puts the real folder back.
:func:`swap_after_opens` swaps instead right after a file of a given name is opened: the
gap between opening a file by descriptor and whatever a library then does by its name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.workspace import confine as _confine

__all__ = ["LinkRace", "outside_files", "swap_after_checks", "swap_after_opens"]


class LinkRace:
    """Swaps ``folder`` (inside the workspace) for a link to ``outside`` and back.

    By default after every check (and back before the next one); with ``after_check=k``
    once, right after the k-th check, and left so (the later steps meet the link).
    """

    def __init__(self, folder: Path, outside: Path, after_check: int | None = None) -> None:
        self.folder = folder
        self.outside = outside
        self.aside = folder.with_name(f".{folder.name}-aside")
        self.after_check = after_check
        self.checks = 0
        self.swaps = 0
        self._lock = threading.RLock()  # checks run in worker threads at the same time

    def before(self) -> None:
        if self.after_check is None:
            self.restore()

    def after(self) -> None:
        with self._lock:
            self.checks += 1
            if self.after_check is None or self.checks == self.after_check:
                self.swap()

    def swap(self) -> None:
        with self._lock:
            if self.folder.is_symlink() or self.aside.exists():
                return
            link = self.folder.with_name(f".{self.folder.name}-link")
            os.symlink(self.outside, link, target_is_directory=True)
            if self.folder.is_dir():
                os.rename(self.folder, self.aside)
            try:  # the package may create the folder again in between: no swap then
                os.rename(link, self.folder)
            except OSError:
                link.unlink()
                return
            self.swaps += 1

    def restore(self) -> None:
        with self._lock:
            if self.folder.is_symlink():
                self.folder.unlink()
            if not self.aside.exists():
                return
            try:
                os.rename(self.aside, self.folder)
            except OSError:  # created again meanwhile (inside): keep both folders' files
                for entry in self.aside.iterdir():
                    if not (self.folder / entry.name).exists():
                        os.rename(entry, self.folder / entry.name)
                shutil.rmtree(self.aside)


def _racing(real: Callable[..., Any], races: list[LinkRace]) -> Callable[..., Any]:
    def check_inside(*args: Any, **kwargs: Any) -> Any:
        for race in races:
            race.before()
        try:
            return real(*args, **kwargs)
        finally:
            for race in races:
                race.after()

    return check_inside


@contextlib.contextmanager
def swap_after_checks(monkeypatch: pytest.MonkeyPatch, *races: LinkRace) -> Iterator[None]:
    """Every ``check_inside`` of the package swaps the folders of ``races`` right after it."""
    real = _confine.check_inside
    racing = _racing(real, list(races))
    for name, module in list(sys.modules.items()):
        if name.startswith("copaw_context") and getattr(module, "check_inside", None) is real:
            monkeypatch.setattr(module, "check_inside", racing)
    try:
        yield
    finally:
        for name, module in list(sys.modules.items()):
            if name.startswith("copaw_context") and getattr(module, "check_inside", None) is racing:
                monkeypatch.setattr(module, "check_inside", real)
        for race in races:
            race.restore()


@contextlib.contextmanager
def swap_after_opens(
    monkeypatch: pytest.MonkeyPatch, race: LinkRace, suffix: str
) -> Iterator[None]:
    """Right after every ``os.open`` of a name ending in ``suffix`` (a lock file: ``".lock"``)
    the folder of ``race`` is swapped for its link; put back at the end."""
    real = os.open

    def opening(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        fd = real(path, flags, mode, dir_fd=dir_fd)
        if os.fspath(path).endswith(suffix):
            race.swap()
        return fd

    monkeypatch.setattr(os, "open", opening)
    try:
        yield
    finally:
        monkeypatch.setattr(os, "open", real)
        race.restore()


def outside_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative name -> bytes), links not followed."""
    found: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(folder))] = path.read_bytes()
    return found
