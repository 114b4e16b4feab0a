"""The ``read_file`` tool, host-neutral: the workspace, the configured limits and the schema
text. Each adapter wraps :meth:`ReadFileTool.read` in its host's tool type.

A saved result (``<tool_results_dir>/<32 hex>.txt`` or ``<dialog_dir>/requests/...``, named
inside the workspace) is read through the workspace store: with a PostgreSQL DSN from the
shared store (:attr:`ReadFileTool.blobs`), else opened by the workspace's file store
(:attr:`ReadFileTool.files`, ``FileStore.open_blob``) and read as before, the same bytes,
notices and errors. Any other path is read as a file."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from copaw_context.core.archive.mirror import ArchiveMirror
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.errors import ConfigError
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.lines import BLOB_NAME, check_key
from copaw_context.core.store.protocol import StoreError
from copaw_context.core.toolresults.store_blobs import StoreBlobs, blobs_for
from copaw_context.core.tools.docs import read_file_doc
from copaw_context.core.tools.file_reader import Opener, ReadResult, read_text_file

__all__ = ["ReadFileTool", "extra_read_roots", "whole_number"]

_WHOLE = re.compile(r"[+-]?\d+(?:\.0*)?")


def whole_number(value: Any) -> Any:
    """``value`` as an int when it is a whole number given as text or a float (``"2"``,
    ``" 2 "``, ``2.0``, ``"2.0"``): hosts pass the model's arguments through as they come
    (1.x does not convert strings), as the reference reader accepts. Anything else is
    returned unchanged, for the reader's own error ("must be a whole number")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return int(float(value.strip())) if "." in value else int(value.strip())
    return value


def extra_read_roots(config: RunningConfig, workspace: Path) -> tuple[Path, ...]:
    """The folders besides the workspace that may be read (``extra_read_roots``)."""
    # An absolute root stays absolute: Path("/ws") / "/abs" == Path("/abs").
    roots = config.light_context_config.extra_read_roots
    return tuple(workspace / Path(r).expanduser() for r in roots)


@dataclass(frozen=True)
class ReadFileTool:
    """``read_file`` reading inside ``workspace`` (and ``extra_roots``).

    ``tool_results_dir`` and ``dialog_dir`` name the folders in the description the model sees.
    Saved outputs (``tool_results_dir`` and ``dialog_dir/requests``) are always read as
    text, NUL bytes included, so every notice pointing at them can be followed.
    """

    workspace: Path
    extra_roots: Sequence[Path] = ()
    max_bytes: int = 50000
    exempt_extensions: Sequence[str] = (".md",)
    exempt_max_bytes: int | None = None
    tool_results_dir: str = "tool_result"
    dialog_dir: str = "dialog"
    blobs: StoreBlobs | None = None
    """The workspace store's saved results (``None``: the files): a key it holds is read
    from the store, so a notice written on another replica can be followed."""
    mirror: ArchiveMirror | None = None
    """The local copy of the store's dialog archive: a day file is brought up to date
    before it is read (``None``: the archive is the files)."""
    files: FileStore | None = None
    """The workspace's file store, which opens a saved result without a DSN (the engine's;
    ``None`` or one of another folder: one over :attr:`workspace`)."""

    @classmethod
    def of(cls, workspace: Path | ReadFileTool, **options: Any) -> ReadFileTool:
        """``workspace`` when it is a tool already, else the tool reading inside it with
        ``options`` (``extra_roots``, ``max_bytes``, ``exempt_extensions``, ...)."""
        return workspace if isinstance(workspace, ReadFileTool) else cls(workspace, **options)

    @classmethod
    def from_config(
        cls, config: RunningConfig, workspace: Path, *, files: FileStore | None = None
    ) -> ReadFileTool:
        """The tool with the limits and folders of ``config`` (``files``: the engine's store)."""
        light = config.light_context_config
        pruning = light.tool_result_pruning_config
        blobs = _blobs(config, workspace)
        return cls(
            workspace,
            extra_roots=extra_read_roots(config, workspace),
            max_bytes=pruning.pruning_recent_msg_max_bytes,
            exempt_extensions=tuple(pruning.exempt_file_extensions),
            exempt_max_bytes=pruning.effective_exempt_recent_max_bytes,
            tool_results_dir=pruning.tool_results_cache,
            dialog_dir=light.dialog_path,
            blobs=blobs,
            mirror=ArchiveMirror.of(blobs, workspace / light.dialog_path, workspace),
            files=files,
        )

    @property
    def doc(self) -> str:
        """The docstring the host turns into the tool's schema."""
        return read_file_doc(self.tool_results_dir, self.dialog_dir)

    async def read(
        self,
        file_path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        line_offset: int | None = None,
    ) -> tuple[ReadResult, dict[str, Any] | None]:
        """The result, and the entry stage 1 keeps with it (which file, from which line;
        None when nothing was read)."""
        key = self._store_key(file_path)
        stream = self._archive_stream(file_path)
        if stream is not None and self.mirror is not None:
            await self.mirror.refresh([stream])  # another replica's lines too
        if key is not None and self.blobs is not None:
            local = self.workspace / key
            why = None if local.is_file() else await self.blobs.fetch(key, local)
            if why is not None:
                return _refused(f"Error: cannot read {file_path}: {why}.", start_line), None
            file_path = key
        result = await read_text_file(
            file_path,
            whole_number(start_line),
            whole_number(end_line),
            whole_number(line_offset),
            workspace=self.workspace,
            extra_roots=tuple(self.extra_roots),
            max_bytes=self.max_bytes,
            exempt_extensions=self.exempt_extensions,
            exempt_max_bytes=self.exempt_max_bytes,
            text_dirs=(
                self.workspace / self.tool_results_dir,
                self.workspace / self.dialog_dir / "requests",
            ),
            relative_notices=key is not None,
            opener=self._opener(file_path) if self.blobs is None else None,
        )
        if not (result.ok and result.path is not None):
            return result, None
        entry = {
            "read_file": {
                "path": key or str(result.path),
                "start_line": result.start_line,
                "line_offset": result.line_offset,
                "total_lines": result.total_lines,
            }
        }
        return result, entry

    def _opener(self, file_path: str) -> Opener | None:
        """What opens the saved result ``file_path`` names exactly (inside the workspace,
        as written: the same file the path is) through the file store, else ``None``."""
        key = self._saved(self._key_of(file_path, moved=False))
        if key is None:
            return None
        files = self.files
        if files is None or files.workspace != Path(self.workspace).expanduser().absolute():
            files = FileStore(self.workspace)
        return partial(files.open_blob, key)

    def _named_key(self, file_path: str) -> str | None:
        """``file_path`` as a key of the shared store (relative to the workspace), else
        ``None`` (also without one)."""
        if self.blobs is None or not isinstance(file_path, str):
            return None
        return self._key_of(file_path.strip(), moved=True)

    def _key_of(self, file_path: object, *, moved: bool) -> str | None:
        """``file_path`` as a workspace-relative key; an absolute path out of the workspace
        only as a moved notice's (``moved``), else ``None``."""
        if not isinstance(file_path, str):
            return None
        named = Path(file_path).expanduser()
        try:
            if named.is_absolute():
                if named.is_relative_to(self.workspace):
                    named = named.relative_to(self.workspace)
                elif moved:
                    named = self._moved(named)
                else:
                    return None
            return check_key(named.as_posix())
        except (ValueError, StoreError):
            return None

    def _moved(self, named: Path) -> Path:
        """A notice written before the workspace moved into the store names an absolute path
        of its old folder: ``.../tool_result/<32 hex>.txt`` is that blob of this workspace."""
        for folder in (self.tool_results_dir, self.requests):
            parts = Path(folder).parts
            if BLOB_NAME.fullmatch(named.name) and named.parent.parts[-len(parts) :] == parts:
                return Path(folder) / named.name
        raise ValueError(f"{named} is outside the workspace")

    def _archive_stream(self, file_path: str) -> str | None:
        """The store's archive stream ``file_path`` names (a day file), else ``None``."""
        key = self._named_key(file_path)
        if key is None or self.mirror is None:
            return None
        return self.mirror.stream(self.workspace / key)

    def _store_key(self, file_path: str) -> str | None:
        """The store key ``file_path`` names (a saved result in ``tool_results_dir``, named
        relative to the workspace or inside it), else ``None``: read as a file."""
        return self._saved(self._named_key(file_path))

    def _saved(self, key: str | None) -> str | None:
        """``key`` when it names a saved result (in ``tool_results_dir`` or the requests)."""
        if key is None:
            return None
        folder, _, name = key.rpartition("/")
        folders = {Path(d).as_posix().strip("/") for d in (self.tool_results_dir, self.requests)}
        return key if folder in folders and BLOB_NAME.fullmatch(name) else None

    @property
    def requests(self) -> str:
        """The folder of the saved requests (and data blocks), workspace-relative."""
        return f"{Path(self.dialog_dir).as_posix().rstrip('/')}/requests"

    def function(
        self, respond: Callable[[ReadResult, dict[str, Any] | None], Any]
    ) -> Callable[..., Awaitable[Any]]:
        """``read_file`` as a host's tool function: the model's arguments, :attr:`doc` as its
        docstring (the schema the model reads), and ``respond(result, entry)`` making the
        host's tool response (``entry``: see :meth:`read`)."""

        async def read_file(
            file_path: str,
            start_line: int | None = None,
            end_line: int | None = None,
            line_offset: int | None = None,
        ) -> Any:
            # The docstring (the schema the model reads) is set below.
            result, entry = await self.read(file_path, start_line, end_line, line_offset)
            return respond(result, entry)

        read_file.__doc__ = self.doc
        return read_file


def _blobs(config: RunningConfig, workspace: Path) -> StoreBlobs | None:
    """The workspace store's saved results, ``None`` for the files (or a store setting that
    is invalid: the engine says so)."""
    try:
        return blobs_for(config, workspace)
    except ConfigError:
        return None


def _refused(text: str, start_line: int | None) -> ReadResult:
    """A read that found nothing to read: ``text`` is the model's error."""
    start = start_line if isinstance(start_line, int) and start_line > 0 else 1
    return ReadResult(text, False, None, start, 0, 0, False, None, None)
