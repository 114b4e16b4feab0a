"""The offload cleanup of the local files (:meth:`.offload.OffloadStore.cleanup`).

By descriptor, never through a link (even one swapped in meanwhile), under the manifests'
lock (:mod:`.offload_refs`): an own file goes once it is expired and neither the context nor a
live manifest names it; a referenced one gets its time refreshed, so another process's cleanup
keeps it too; a temp file goes once older than an hour (left by a crash).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import filelock

from copaw_context.core.toolresults import offload_refs
from copaw_context.core.toolresults._offload_files import referenced_names, refresh
from copaw_context.core.toolresults._saved_tails import forget_tail
from copaw_context.core.toolresults.offload_names import OWN_FILE
from copaw_context.core.workspace.confine import OutsideWorkspaceError
from copaw_context.core.workspace.confine_write import confined_dir, writable_dir

__all__ = ["sweep_files"]

logger = logging.getLogger("copaw_context")

_TEMP_FILE = re.compile(r"\.[0-9a-f]{32}\.tmp")
_TEMP_MAX_AGE_SECONDS = 3600.0


def sweep_files(
    directory: Path,
    workspace: Path | None,
    referenced: list[str | Path],
    *,
    clock: Callable[[], float],
    retention_seconds: float,
    manifest_seconds: float,
) -> list[Path]:
    """Delete the expired, unreferenced own files and old temp files of ``directory``; return
    them. Never raises for the folder or a single file: failures are logged and skipped."""
    try:  # by descriptor: never remove files through a link, even one swapped in now
        folder = (
            confined_dir(directory, workspace, create=False)
            if workspace is not None
            else writable_dir(directory, None, create=False)
        )
        with folder as dir_fd:
            if not os.listdir(dir_fd):
                return []
            refs_dir = directory / offload_refs.REFS_DIR
            with (
                offload_refs.refs_folder(directory, workspace) as refs_fd,
                offload_refs.refs_lock(refs_fd, directory, workspace),
            ):
                live = offload_refs.live_names(refs_fd, refs_dir, clock(), manifest_seconds)
                if live is None:
                    return []
                return _clean(directory, dir_fd, [*referenced, *live], clock(), retention_seconds)
    except OutsideWorkspaceError as error:
        logger.warning("offload cleanup: skipped: %s", error)
    except FileNotFoundError:
        pass
    except (OSError, filelock.Timeout) as error:
        logger.warning("offload cleanup: skipped for %s: %s", directory, error)
    return []


def _clean(
    directory: Path,
    dir_fd: int,
    referenced: list[str | Path],
    now: float,
    retention_seconds: float,
) -> list[Path]:
    names = os.listdir(dir_fd)
    keep = referenced_names(referenced)
    removed: list[Path] = []
    for name in names:
        is_own = OWN_FILE.fullmatch(name) is not None
        if not is_own and _TEMP_FILE.fullmatch(name) is None:
            continue
        path = directory / name
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue  # symlinks, directories, fifos: never ours, never followed
            if is_own and name in keep:
                refresh(dir_fd, path, info, now)
                continue
            max_age = retention_seconds if is_own else _TEMP_MAX_AGE_SECONDS
            if now - info.st_mtime <= max_age:
                continue
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        except OSError as error:
            logger.warning("offload cleanup: cannot remove %s: %s", path, error)
            continue
        removed.append(path)
        forget_tail(str(path))
    if removed:
        logger.info("offload cleanup: removed %d expired file(s) from %s", len(removed), directory)
    return removed
