"""A fault-injecting file layer: every I/O call on files under a root passes through a hook.

:func:`watch_io` patches ``open`` (``builtins`` and ``io``), ``os.fsync``, ``os.fdatasync``,
``os.replace``, ``os.rename``, ``os.unlink`` and ``os.mkdir`` (the background group commit looks
``os.fdatasync`` up at each call, so its syncs are events too; also by descriptor: a file opened
by ``fd``, a name relative to ``dir_fd``), so that each call touching a path under ``root``
first calls ``hook(event)``; writes, syncs and truncations through files opened for writing are
events too. The hook may raise (an ``OSError`` such as ``ENOSPC``: a full disk), kill the
process (crash tests), or let it be. An event's ``phase`` is ``"before"`` or ``"after"`` the
call; a hook that returns True for a write's ``"before"`` gets half of the data written first,
then a ``"mid"`` event (a write torn by a crash).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["IoEvent", "watch_io"]

_WRITE_MODES = ("w", "a", "x", "+")


@dataclass(frozen=True)
class IoEvent:
    kind: str  # open | write | fsync | replace | unlink | mkdir | truncate
    path: str
    phase: str  # before | mid | after
    target: str = ""  # a replace's destination


Hook = Callable[[IoEvent], bool | None]


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class _Watched:
    """A file opened for writing under the root: writes and truncations are events."""

    def __init__(self, handle: Any, path: str, hook: Hook) -> None:
        self._handle = handle
        self._path = path
        self._hook = hook

    def write(self, data: Any) -> Any:
        torn = self._hook(IoEvent("write", self._path, "before"))
        if torn and len(data) > 1:
            half = len(data) // 2
            self._handle.write(data[:half])
            self._handle.flush()
            self._hook(IoEvent("write", self._path, "mid"))
            self._handle.write(data[half:])
        else:
            self._handle.write(data)
        self._hook(IoEvent("write", self._path, "after"))
        return len(data)

    def truncate(self, size: int | None = None) -> int:
        self._hook(IoEvent("truncate", self._path, "before"))
        result = int(self._handle.truncate(size))
        self._hook(IoEvent("truncate", self._path, "after"))
        return result

    def __enter__(self) -> _Watched:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._handle)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


@contextlib.contextmanager
def watch_io(root: Path, hook: Hook) -> Iterator[None]:
    """Route every I/O call under ``root`` through ``hook`` (see the module docstring)."""
    prefix = str(Path(root).resolve())

    def under(path: object) -> str | None:
        try:
            text = os.fspath(path)  # type: ignore[arg-type]
        except TypeError:
            return None
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogateescape")
        full = os.path.abspath(text)
        return full if full.startswith(prefix) else None

    originals: dict[tuple[Any, str], Any] = {}

    def patch(owner: Any, name: str, replacement: Any) -> None:
        originals[(owner, name)] = getattr(owner, name)
        setattr(owner, name, replacement)

    real_open = builtins.open

    def watched_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        path = under(_fd_path(file) if isinstance(file, int) else file)
        if path is None or not any(m in mode for m in _WRITE_MODES):
            return real_open(file, mode, *args, **kwargs)
        hook(IoEvent("open", path, "before"))
        handle = real_open(file, mode, *args, **kwargs)
        hook(IoEvent("open", path, "after"))
        return _Watched(handle, path, hook)

    def around(kind: str, real: Callable[..., Any], arg: int = 0) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            target = args[arg] if len(args) > arg else None
            at = kwargs.get("dir_fd", kwargs.get("src_dir_fd"))
            if isinstance(target, str) and isinstance(at, int):  # a name in an open folder
                target = os.path.join(_fd_path(at), target)
            path = _fd_path(target) if isinstance(target, int) else None
            path = under(path) if isinstance(target, int) else under(target)
            if path is None:
                return real(*args, **kwargs)
            destination = ""
            if kind == "replace":
                named = args[1] if len(args) > 1 else kwargs.get("dst")
                into = kwargs.get("dst_dir_fd")
                if isinstance(named, str) and isinstance(into, int):
                    named = os.path.join(_fd_path(into), named)
                destination = (under(named) or "") if named is not None else ""
            hook(IoEvent(kind, path, "before", destination))
            result = real(*args, **kwargs)
            hook(IoEvent(kind, path, "after", destination))
            return result

        return call

    patch(builtins, "open", watched_open)
    patch(io, "open", watched_open)
    for name, kind in (
        ("fsync", "fsync"),
        ("fdatasync", "fsync"),
        ("replace", "replace"),
        ("rename", "replace"),
        ("unlink", "unlink"),
        ("mkdir", "mkdir"),
    ):
        patch(os, name, around(kind, getattr(os, name)))
    try:
        yield
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)
