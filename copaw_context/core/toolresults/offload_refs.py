"""Reference manifests: what each session's context names in a shared offload store.

Several sessions (QwenPaw's chats of one agent) share one ``tool_result/``. A TTL cleanup sees
only its own session's context, so without help it would delete the files the other sessions
still name once they all sat idle past ``offload_retention_days``. Each session therefore keeps
``<store>/.refs/<session id>.json`` listing the offload names its context references (written
atomically, by descriptor, when they change, its fsync group-committed in the background like
the files'; touched at least hourly while the session runs). A cleanup keeps every file named by
a live manifest: one younger than ``offload_manifest_retention_days`` (never shorter than
``offload_retention_days``).

Manifests are data, never paths: only names of the store's own form (``<32 hex>.txt``)
count, so a hostile manifest can at worst keep files longer, never reach outside the
store. Manifests above ``MAX_MANIFEST_BYTES`` or malformed are ignored with a warning.
More than ``MAX_MANIFESTS`` live manifests make the cleanup keep every file (logged).
Writes and cleanups hold a lock (``.refs/.lock``) so a cleanup sees a consistent set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import stat
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path

import filelock

from copaw_context.core.workspace.confine_write import replace_at, writable_dir
from copaw_context.core.workspace.fd_lock import lock_at

__all__ = [
    "ManifestWriter",
    "MAX_MANIFESTS",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_NAMES",
    "REFS_DIR",
    "is_session_id",
    "live_names",
    "refs_folder",
    "refs_lock",
    "touch_manifest",
    "write_manifest",
]

logger = logging.getLogger("copaw_context")

REFS_DIR = ".refs"
MAX_MANIFEST_BYTES = 1 << 20
MAX_MANIFEST_NAMES = 20_000  # 20,000 names x ~37 bytes fit MAX_MANIFEST_BYTES
MAX_MANIFESTS = 50_000
LOCK_TIMEOUT_SECONDS = 30.0
_SESSION_ID = re.compile(r"[0-9a-f]{32}")
_MANIFEST = re.compile(r"[0-9a-f]{32}\.json")
_TEMP = re.compile(r"\.[0-9a-f]{32}\.tmp")
_OWN_FILE = re.compile(r"[0-9a-f]{32}\.txt")
_TEMP_MAX_AGE_SECONDS = 3600.0
_LOCK_NAME = ".lock"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS |= getattr(os, "O_NONBLOCK", 0)  # a fifo planted as a manifest never blocks
_TOUCH_SECONDS = 3600.0  # an unchanged manifest is touched at most this often
_MAX_RECORDED = 4096  # sessions whose last manifest a writer remembers


def is_session_id(value: object) -> bool:
    """True for a manifest id (32 lowercase hex digits)."""
    return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None


@contextlib.contextmanager
def refs_folder(store_dir: Path, workspace: Path | None) -> Iterator[int]:
    """The manifests' folder by descriptor (created; never through a link, confined to the
    workspace, or to the store without one)."""
    if workspace is None:
        store_dir.mkdir(parents=True, exist_ok=True)
    with writable_dir(store_dir / REFS_DIR, workspace or store_dir) as fd:
        yield fd


@contextlib.contextmanager
def refs_lock(dir_fd: int, store_dir: Path, workspace: Path | None) -> Iterator[None]:
    """Hold the manifests' lock (``filelock.Timeout`` after LOCK_TIMEOUT_SECONDS)."""
    with lock_at(dir_fd, store_dir / REFS_DIR / _LOCK_NAME, workspace, LOCK_TIMEOUT_SECONDS):
        yield


def write_manifest(
    store_dir: Path, workspace: Path | None, session_id: str, names: Iterable[str]
) -> None:
    """Replace the session's manifest with ``names`` (own-form names only, at most
    MAX_MANIFEST_NAMES of them). Raises OSError / ``filelock.Timeout``."""
    if not is_session_id(session_id):
        raise ValueError(f"not a manifest id: {session_id!r}")
    kept = sorted({n for n in names if _OWN_FILE.fullmatch(n)})
    if len(kept) > MAX_MANIFEST_NAMES:
        logger.warning(
            "offload manifest: the context names %d offloaded files; only %d are recorded",
            len(kept),
            MAX_MANIFEST_NAMES,
        )
        kept = kept[:MAX_MANIFEST_NAMES]
    data = json.dumps({"version": 1, "names": kept}, separators=(",", ":")).encode()
    with refs_folder(store_dir, workspace) as dir_fd, refs_lock(dir_fd, store_dir, workspace):
        replace_at(
            dir_fd,
            f"{session_id}.json",
            f".{uuid.uuid4().hex}.tmp",
            lambda handle: handle.write(data),
            keep_mode=False,
            deferred=True,  # synced in the background, with the files it names
        )


def touch_manifest(store_dir: Path, workspace: Path | None, session_id: str, now: float) -> bool:
    """Set the manifest's time to ``now``; False when it is missing (write it instead)."""
    with refs_folder(store_dir, workspace) as dir_fd:
        name = f"{session_id}.json"
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                return False
            os.utime(name, (info.st_atime, now), dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True


def live_names(refs_fd: int, refs_dir: Path, now: float, max_age: float) -> set[str] | None:
    """The union of the names in the live manifests of the folder ``refs_fd``; removes
    expired manifests and stale temp files on the way. None: too many manifests to trust
    a partial union (the caller keeps every file)."""
    keep: set[str] = set()
    live = 0
    for name in os.listdir(refs_fd):
        is_manifest = _MANIFEST.fullmatch(name) is not None
        if not is_manifest and _TEMP.fullmatch(name) is None:
            continue
        try:
            info = os.stat(name, dir_fd=refs_fd, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue
            if now - info.st_mtime > (max_age if is_manifest else _TEMP_MAX_AGE_SECONDS):
                os.unlink(name, dir_fd=refs_fd)
                if is_manifest:
                    logger.info("offload cleanup: expired manifest %s removed", refs_dir / name)
                continue
        except FileNotFoundError:
            continue
        except OSError as error:
            logger.warning("offload cleanup: cannot check %s: %s", refs_dir / name, error)
            continue
        if not is_manifest:
            continue
        live += 1
        if live > MAX_MANIFESTS:
            logger.warning(
                "offload cleanup: more than %d live manifests in %s; keeping every file",
                MAX_MANIFESTS,
                refs_dir,
            )
            return None
        names = _read_manifest(refs_fd, refs_dir / name)
        if names is not None:
            keep.update(names)
    return keep


def _read_manifest(refs_fd: int, path: Path) -> list[str] | None:
    """The names of one manifest, or None (logged) when it is unreadable or malformed."""
    try:
        fd = os.open(path.name, _READ_FLAGS, dir_fd=refs_fd)
    except OSError as error:
        logger.warning("offload cleanup: ignoring manifest %s: %s", path, error)
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        data = handle.read(MAX_MANIFEST_BYTES + 1)
    too_big = len(data) > MAX_MANIFEST_BYTES
    problem = f"larger than {MAX_MANIFEST_BYTES} bytes" if too_big else ""
    names: object = None
    if not problem:
        try:
            parsed = json.loads(data)
            names = parsed.get("names") if isinstance(parsed, dict) else None
        except (ValueError, UnicodeDecodeError):
            pass
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            problem = 'not {"version": 1, "names": [...]}'
    if problem:
        logger.warning("offload cleanup: ignoring malformed manifest %s (%s)", path, problem)
        return None
    assert isinstance(names, list)
    return [n for n in names if _OWN_FILE.fullmatch(n)]


class ManifestWriter:
    """One store's manifests, written in the background: :meth:`record` queues a session's
    names (newer names replace its queued ones) and returns; one task writes the queue in a
    worker thread, rewriting a manifest whose names changed and touching an unchanged one at
    most hourly. Failures are logged (the next change tries again); :meth:`settle` waits.
    Each queued entry carries the order it was recorded in: a write still running in a
    thread of a loop that is gone never replaces a newer manifest written since."""

    def __init__(self, store_dir: Path, workspace: Path | None, clock: Callable[[], float]) -> None:
        self._store_dir, self._workspace, self._clock = store_dir, workspace, clock
        self._recorded: dict[str, tuple[frozenset[str], float]] = {}
        self._queued: dict[str, tuple[frozenset[str], float, int]] = {}
        self._on_disk: dict[str, frozenset[str]] = {}
        self._writer: asyncio.Future[None] | None = None
        self._order = 0
        self._written: dict[str, int] = {}  # session -> order of its newest manifest written
        self._write_lock = threading.Lock()
        self.shared: Callable[[str, frozenset[str], float], Awaitable[None]] | None = None
        """Also puts each manifest written in a shared workspace store (``None``: none)."""

    def record(self, session_id: str, names: Iterable[str]) -> None:
        wanted = frozenset(names)
        now = self._clock()
        last = self._recorded.get(session_id)
        if last is not None and last[0] == wanted and 0 <= now - last[1] < _TOUCH_SECONDS:
            return
        if len(self._recorded) >= _MAX_RECORDED:
            self._recorded.clear()
        self._recorded[session_id] = (wanted, now)
        self._order += 1
        self._queued[session_id] = (wanted, now, self._order)
        if not self._writing():  # none, finished, or left on a loop that is gone
            self._writer = asyncio.ensure_future(self._write_queued())

    async def settle(self) -> None:
        while self._writing():
            assert self._writer is not None
            await asyncio.shield(self._writer)

    def _writing(self) -> bool:
        """Whether this loop's writer is still running."""
        writer = self._writer
        return (
            writer is not None
            and not writer.done()
            and writer.get_loop() is asyncio.get_running_loop()
        )

    async def _write_queued(self) -> None:
        while self._queued:
            session_id = next(iter(self._queued))
            wanted, now, order = self._queued.pop(session_id)
            on_disk = self._on_disk.pop(session_id, None)
            try:
                await asyncio.to_thread(self._write, session_id, wanted, on_disk, now, order)
            except (OSError, ValueError, filelock.Timeout) as error:
                logger.warning("copaw-context: cannot record the offload references: %s", error)
                if session_id not in self._queued:  # newer names try again anyway
                    self._recorded.pop(session_id, None)
                continue
            if len(self._on_disk) >= _MAX_RECORDED:
                self._on_disk.clear()
            self._on_disk[session_id] = wanted
            if self.shared is not None:
                try:
                    await self.shared(session_id, wanted, now)
                except Exception as error:  # the local manifest holds; the next write retries
                    logger.warning(
                        "copaw-context: cannot record the offload references in the workspace "
                        "store: %s",
                        error,
                    )
                    self._recorded.pop(session_id, None)

    def _write(
        self,
        session_id: str,
        wanted: frozenset[str],
        on_disk: frozenset[str] | None,
        now: float,
        order: int,
    ) -> None:
        store_dir, workspace = self._store_dir, self._workspace
        with self._write_lock:
            if self._written.get(session_id, 0) > order:
                return  # a newer manifest is written already
            if len(self._written) >= _MAX_RECORDED:
                self._written.clear()
            self._written[session_id] = order
            if on_disk == wanted and touch_manifest(store_dir, workspace, session_id, now):
                return
            write_manifest(store_dir, workspace, session_id, wanted)
