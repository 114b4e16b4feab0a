"""The tool-result pruning policy: how large a tool result may be, and how it is cut.

Stage 1 bounds a result when it enters the context: its text (all text parts together) over
the recent limit is saved whole to the offload store and replaced by an excerpt plus one
``<<<TRUNCATED>>>`` notice. Stage 2 re-cuts a result once it is old (outside the
``pruning_recent_n`` newest and seen by the model) to the old limit, keeping the same file.
``read_file`` results point at the real file and are never copied. Markdown files and exempt
tools get larger limits. Data parts (images, audio, PDF) are never touched. A cut never makes
a result longer: one within a notice of its limit, which a cut would leave longer than it is,
is kept whole (and stage 2 marks it cut all the same, so it is not tried again).

A result's output is a list of parts: ``str`` for a text part, any other object for a data
part, which is passed through untouched (the host translates both ways). The policy never
sees the host; which results are old is the engine's business.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from copaw_context.core.config.running import ToolResultPruningConfig
from copaw_context.core.toolresults._worth import cut_shortens
from copaw_context.core.toolresults.notice import find_notice
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.offload_cut import offload_parts
from copaw_context.core.toolresults.truncation import (
    is_shorter,
    notice_path,
    scrub_surrogates,
    truncate_parts_output,
    truncate_text_output,
)

__all__ = [
    "OutputPart",
    "PruneStats",
    "ToolResultPruning",
    "UNSEEN",
]

OutputPart = Any
"""A part of a tool result's output: a ``str`` is text; anything else is a data part."""

UNSEEN = "unseen"
"""Entry flag of a result that entered the context after the model's latest call."""

EARLY_SAVE = "early_save"
"""Entry key of a result whose full text is being saved ahead of its stage-2 cut."""

_PATH_ARGUMENTS = ("file_path", "path", "filename", "file")
_MIN_EXCERPT_BYTES = 16
_SAMPLE_NAME = "0" * 32 + ".txt"  # as long as every offload file's name
_UNKNOWN = object()


@dataclass
class PruneStats:
    """Counters for one pruning pass."""

    truncated: int = 0
    offloaded: int = 0
    paths: list[str] = field(default_factory=list)

    def add(self, other: PruneStats) -> None:
        self.truncated += other.truncated
        self.offloaded += other.offloaded
        self.paths.extend(other.paths)


def call_path(tool_input: str | dict[str, Any] | None) -> str | None:
    """The path-like argument of a tool call (raw JSON or parsed), if any."""
    if isinstance(tool_input, str):
        try:
            tool_input = json.loads(tool_input)
        except (ValueError, TypeError):
            return None
    if not isinstance(tool_input, dict):
        return None
    for key in _PATH_ARGUMENTS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class ToolResultPruning:
    """Limits and cuts for tool results, with one :class:`OffloadStore` for full texts."""

    def __init__(
        self, config: ToolResultPruningConfig, store: OffloadStore, workspace: Path | None = None
    ) -> None:
        self.config = config
        self.store = store
        self.workspace = workspace
        self._sample: object = _UNKNOWN

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def is_exempt(self, tool_name: str | None, tool_input: str | dict[str, Any] | None) -> bool:
        """Whether a result gets the larger (Markdown / exempt tool) limits."""
        if tool_name in self.config.exempt_tool_names:
            return True
        path = call_path(tool_input)
        if path is None:
            return False
        suffix = PurePath(path).suffix.lower()
        return bool(suffix) and suffix in self.config.exempt_file_extensions

    def limit(self, *, recent: bool, exempt: bool) -> int:
        """The byte limit for a result of the given age and kind."""
        cfg = self.config
        if exempt:
            if recent:
                return cfg.effective_exempt_recent_max_bytes
            return cfg.effective_exempt_old_max_bytes
        return cfg.pruning_recent_msg_max_bytes if recent else cfg.pruning_old_msg_max_bytes

    async def bound_fresh(
        self,
        tool_name: str | None,
        tool_input: str | dict[str, Any] | None,
        parts: list[OutputPart],
        meta: dict[str, Any],
    ) -> tuple[list[OutputPart], dict[str, Any], PruneStats]:
        """Stage 1: a new result's parts and entry, bounded to the recent limit.

        A notice already at the end of the output is not ours (nothing of ours has cut it
        yet): it is saved and cut like any other text. The result is marked as not yet seen
        by the model, which keeps it recent in stage 2 until a model call saw it.
        """
        stats = PruneStats()
        entry = dict(meta)
        entry[UNSEEN] = True
        if "read_file" not in entry:  # our read_file bounds itself at read time, real path
            max_bytes = self.limit(recent=True, exempt=self.is_exempt(tool_name, tool_input))
            parts = await self._bound_parts(
                list(parts), max_bytes, stats, owned=frozenset(), read_info=None
            )
            if stats.paths:
                entry["offloaded"] = [*entry.get("offloaded", []), *stats.paths]
            else:
                self._save_ahead(parts, entry, exempt=self.is_exempt(tool_name, tool_input))
        return parts, entry, stats

    def _save_ahead(self, parts: list[OutputPart], entry: dict[str, Any], *, exempt: bool) -> None:
        """Start saving a one-text result that stage 2 will cut, so the cut need not wait."""
        texts = [part for part in parts if isinstance(part, str)]
        old_limit = self.limit(recent=False, exempt=exempt)
        if len(texts) == 1 and cut_shortens(texts, old_limit, self._sample_path()):
            entry[EARLY_SAVE] = self.store.save_early(texts)

    def _sample_path(self) -> str | None:
        """How a notice names a file of the store (every name is as long), None if it cannot."""
        if self._sample is _UNKNOWN:
            try:
                self._sample = notice_path(self.store.directory / _SAMPLE_NAME, self.workspace)
            except ValueError:
                self._sample = None
        return self._sample if isinstance(self._sample, str) else None

    async def bound(
        self, parts: Sequence[OutputPart], meta: dict[str, Any], max_bytes: int
    ) -> tuple[list[OutputPart], dict[str, Any], PruneStats]:
        """A stored result's parts bounded to ``max_bytes`` (stage 2 and emergency cuts).

        A notice is re-cut in place (same file, harder cut) only when it is ours: it names
        a file the entry records (saved by stage 1, or read by our read_file).
        """
        entry = dict(meta)
        read_info = entry.get("read_file") if isinstance(entry.get("read_file"), dict) else None
        owned = self._owned_paths(entry, read_info)
        stats = PruneStats()
        bounded = await self._bound_parts(
            list(parts),
            max_bytes,
            stats,
            owned=owned,
            read_info=read_info,
            early=entry.pop(EARLY_SAVE, None),
        )
        if stats.paths:  # so a later, harder cut knows these notices are ours
            entry["offloaded"] = [*entry.get("offloaded", []), *stats.paths]
        return bounded, entry, stats

    async def _bound_parts(
        self,
        parts: list[OutputPart],
        max_bytes: int,
        stats: PruneStats,
        *,
        owned: frozenset[str],
        read_info: dict[str, Any] | None,
        early: object = None,
    ) -> list[OutputPart]:
        """Bound the text of one result (its text parts together) to ``max_bytes``.

        Text parts keep their place while their running total fits; the first that does not
        and every later text part are joined (``"\\n"``, as formatters join them), saved
        whole and replaced by one excerpt with one notice. Data parts are kept as they are.
        Only what is kept is measured and scrubbed (a part over the budget is not measured
        at all: it has more characters than the budget has bytes).
        """
        positions = [i for i, part in enumerate(parts) if isinstance(part, str)]
        sizes: list[int] = []
        used = 0
        for i in positions:
            size = _size_within(parts[i], max_bytes - used)
            if size is None:
                break
            sizes.append(size)
            used += size
        else:  # everything fits: kept, scrubbed (bounded by max_bytes)
            for i in positions:
                parts[i] = scrub_surrogates(parts[i])
            return parts
        first = len(sizes)
        while first > 0 and max_bytes - used < _MIN_EXCERPT_BYTES:
            first -= 1  # leave the excerpt room for a few characters
            used -= sizes[first]
        for i in positions[:first]:
            parts[i] = scrub_surrogates(parts[i])
        rest = positions[first:]
        cut = await self._bound(
            [parts[i] for i in rest],
            max_bytes - used,
            stats,
            owned if len(rest) == 1 else frozenset(),
            read_info if len(positions) == 1 else None,
            early if len(positions) == 1 else None,
        )
        if cut is None:  # no cut would make it shorter: kept whole
            for i in rest:
                parts[i] = scrub_surrogates(parts[i])
            return parts
        parts[rest[0]] = cut
        dropped = set(rest[1:])
        return [part for i, part in enumerate(parts) if i not in dropped]

    async def _bound(
        self,
        texts: list[str],
        max_bytes: int,
        stats: PruneStats,
        owned: frozenset[str],
        read_info: dict[str, Any] | None,
        early: object = None,
    ) -> str | None:
        """Return ``"\\n".join(texts)`` cut to ``max_bytes``; offload the original first if
        needed. None: no cut would make it shorter (the notice outweighs what it removes;
        nothing is saved then). The texts are never joined whole: only the excerpt is built."""
        single = texts[0] if len(texts) == 1 else None
        out: str | None = None
        saved: Path | None = None
        if single is not None:
            if owned and self._is_owned(_notice_file(single), owned):
                out = truncate_text_output(single, max_bytes=max_bytes)  # ours: same file, harder
            elif read_info is not None:
                out = _recut_read(single, max_bytes, read_info)
            elif early is not None:
                out, saved = await self._cut_saved_early(single, max_bytes, early)
        if out is None:
            if not cut_shortens(texts, max_bytes, self._sample_path()):
                return None
            out, saved = await offload_parts(self.store, texts, max_bytes, self.workspace)
        if not is_shorter(out, texts):
            return None  # e.g. a notice of ours already cut as hard
        if saved is not None:
            stats.offloaded += 1
            stats.paths.append(str(saved))
        stats.truncated += 1
        return out

    async def _cut_saved_early(
        self, text: str, max_bytes: int, token: object
    ) -> tuple[str | None, Path | None]:
        """Cut ``text`` naming the file its early save wrote (None: save it now instead)."""
        saved = await self.store.claim_early(token)
        if saved is None or saved.nbytes != len(text.encode("utf-8", "surrogatepass")):
            return None, None  # failed, or the text changed since: a fresh save is exact
        try:
            shown = saved.key or notice_path(saved.path, self.workspace)
        except ValueError:
            return None, None  # the fresh save reports why the path cannot be named
        out = truncate_parts_output((text,), max_bytes, file_path=shown, total_lines=saved.lines)
        return out, saved.path

    @staticmethod
    def _owned_paths(entry: dict[str, Any], read_info: dict[str, Any] | None) -> frozenset[str]:
        """The files a result's notices may name as ours (saved by us, or read by read_file)."""
        paths = [p for p in entry.get("offloaded", []) if isinstance(p, str)]
        if read_info is not None and isinstance(read_info.get("path"), str):
            paths.append(read_info["path"])
        return frozenset(paths)

    def _is_owned(self, file_path: str | None, owned: frozenset[str]) -> bool:
        """Whether a notice's ``file_path`` (absolute or workspace-relative) is in ``owned``."""
        if file_path is None or not owned:
            return False
        path = Path(file_path)
        if not path.is_absolute() and self.workspace is not None:
            path = self.workspace / path
        if str(path) in owned:
            return True
        try:
            real = path.resolve()
            return any(real == self._absolute(p).resolve() for p in owned)
        except (OSError, RuntimeError, ValueError):
            return False

    def _absolute(self, path: str) -> Path:
        """``path``, a store key (workspace-relative) made absolute in the workspace."""
        named = Path(path)
        if named.is_absolute() or self.workspace is None:
            return named
        return self.workspace / named


def _recut_read(text: str, max_bytes: int, read_info: dict[str, Any]) -> str | None:
    """Cut a read_file excerpt pointing at the real file (never copied); None if impossible."""
    try:
        return truncate_text_output(
            text,
            start_line=int(read_info["start_line"]),
            total_lines=int(read_info["total_lines"]),
            max_bytes=max_bytes,
            file_path=str(read_info["path"]),
            start_offset=int(read_info.get("line_offset", 0)),
            recut_notice=False,  # the file's own text, whatever it ends with
        )
    except (KeyError, TypeError, ValueError):
        return None  # e.g. a path too long for the notice: offload a copy instead


def _size_within(text: str, budget: int) -> int | None:
    """The UTF-8 size of ``text`` (lone surrogates as U+FFFD) if it is at most ``budget``."""
    if len(text) > budget:  # a character is at least one byte
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size <= budget else None


def _notice_file(text: str) -> str | None:
    """The file named by the notice ``text`` ends with (lone surrogates as U+FFFD), if any."""
    found = find_notice(text, scrub=True)
    return None if found is None else found[1].file_path
