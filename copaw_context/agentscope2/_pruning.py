"""Two-stage tool-result pruning on AgentScope 2.x tool results.

Stage 1 runs when a result enters the context (``on_acting``): a result whose text (all
its text blocks together) is over the recent limit is offloaded to
``tool_result/<uuid>.txt`` and replaced by an excerpt plus one ``<<<TRUNCATED>>>`` notice.
Stage 2 runs before each reasoning step: results outside the ``pruning_recent_n`` most
recent tool-result blocks, once the model has seen them, are re-cut to the old limit,
keeping the same file path. ``read_file`` results point at the real file and are never
copied. Data blocks (images, audio, PDF) are never touched.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.tool import ToolResponse

from copaw_context.agentscope2._messages import METADATA_KEY
from copaw_context.core.config import ToolResultPruningConfig
from copaw_context.core.offload import OffloadStore
from copaw_context.core.truncation import (
    notice_path,
    parse_truncation_notice,
    scrub_surrogates,
    truncate_text_output,
)

__all__ = ["PruneStats", "ToolResultPruner", "offload_and_cut"]

logger = logging.getLogger("copaw_context")

_PATH_ARGUMENTS = ("file_path", "path", "filename", "file")
_UNSEEN = "unseen"
"""Metadata flag of a result that entered the context after the model's latest call."""
_MIN_EXCERPT_BYTES = 16


@dataclass
class PruneStats:
    """Counters for one pruning pass."""

    truncated: int = 0
    offloaded: int = 0
    paths: list[str] = field(default_factory=list)


def _call_path(tool_input: str | dict[str, Any] | None) -> str | None:
    """The path-like argument of a tool call, if any."""
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


async def offload_and_cut(
    store: OffloadStore,
    text: str,
    max_bytes: int,
    workspace: Path | None,
    *,
    recut_notice: bool = True,
) -> tuple[str, Path | None]:
    """Save ``text`` whole to ``store``, then cut it with a notice naming the saved file.

    Returns the cut text and the saved path (None when saving failed: the notice then says
    the full text could not be saved). ``recut_notice`` as in :func:`truncate_text_output`:
    pass False when a notice at the end of ``text`` is content, not our earlier cut.
    """
    text = scrub_surrogates(text)
    saved: Path | None = None
    path: str | None = None
    try:
        saved = await store.save(text)
        path = notice_path(saved, workspace)  # absolute if it fits, else workspace-relative
    except (OSError, ValueError) as exc:
        logger.error(
            "copaw-context: could not save %d bytes to %s (%s); cutting without a saved copy",
            len(text.encode("utf-8")),
            store.directory,
            exc,
        )
    cut = truncate_text_output(text, max_bytes=max_bytes, file_path=path, recut_notice=recut_notice)
    return cut, saved


class ToolResultPruner:
    """Applies the two pruning stages with one :class:`OffloadStore`."""

    def __init__(
        self, config: ToolResultPruningConfig, store: OffloadStore, workspace: Path | None = None
    ) -> None:
        self.config = config
        self.store = store
        self.workspace = workspace

    # ---------------------------------------------------------------- limits
    def is_exempt(self, tool_name: str, tool_input: str | dict[str, Any] | None) -> bool:
        """Whether a result gets the larger (Markdown / exempt tool) limits."""
        if tool_name in self.config.exempt_tool_names:
            return True
        path = _call_path(tool_input)
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

    # ---------------------------------------------------------------- stage 1
    async def prune_fresh(self, tool_call: ToolCallBlock, response: ToolResponse) -> PruneStats:
        """Stage 1: bound a new tool response in place before the agent stores it.

        The text of the whole result (all its text blocks together) is bounded to the recent
        limit. A notice already at the end of the output is not ours (nothing of ours has
        cut it yet): it is saved and cut like any other text. The result is marked as not
        yet seen by the model, which keeps it recent in stage 2 until a model call saw it.
        """
        stats = PruneStats()
        if not self.config.enabled:
            return stats
        entry = response.metadata.get(METADATA_KEY)
        entry = dict(entry) if isinstance(entry, dict) else {}
        entry[_UNSEEN] = True
        if "read_file" not in entry:  # our read_file bounds itself at read time, real path
            exempt = self.is_exempt(tool_call.name, tool_call.input)
            max_bytes = self.limit(recent=True, exempt=exempt)
            response.content = await self._bound_parts(
                list(response.content), max_bytes, stats, owned=frozenset(), read_info=None
            )
            if stats.paths:
                entry["offloaded"] = [*entry.get("offloaded", []), *stats.paths]
        response.metadata[METADATA_KEY] = entry
        return stats

    def mark_seen(self, context: Sequence[Msg]) -> None:
        """Record that the model is now seeing every tool result in ``context``."""
        for msg in context:
            for block in msg.content:
                if isinstance(block, ToolResultBlock):
                    entry = block.metadata.get(METADATA_KEY)
                    if isinstance(entry, dict) and _UNSEEN in entry:
                        block.metadata[METADATA_KEY] = {
                            k: v for k, v in entry.items() if k != _UNSEEN
                        }

    # ---------------------------------------------------------------- stage 2
    async def prune_old(self, context: Sequence[Msg]) -> PruneStats:
        """Stage 2: re-cut every tool result outside the ``pruning_recent_n`` newest.

        A result the model has not seen yet (e.g. one of many parallel results of the last
        reply) stays recent whatever its position.
        """
        stats = PruneStats()
        if not self.config.enabled:
            return stats
        calls: dict[str, ToolCallBlock] = {}
        results: list[ToolResultBlock] = []
        for msg in context:
            for block in msg.content:
                if isinstance(block, ToolCallBlock):
                    calls[block.id] = block
                elif isinstance(block, ToolResultBlock):
                    results.append(block)
        old = results[: max(0, len(results) - self.config.pruning_recent_n)]
        for block in old:
            entry = block.metadata.get(METADATA_KEY)
            if isinstance(entry, dict) and entry.get(_UNSEEN):
                continue
            call = calls.get(block.id)
            exempt = self.is_exempt(block.name, call.input if call else None)
            max_bytes = self.limit(recent=False, exempt=exempt)
            if isinstance(entry, dict) and entry.get("pruned_to") == max_bytes:
                continue
            await self._bound_block(block, max_bytes, stats)
            new_entry = block.metadata.get(METADATA_KEY)
            new_entry = dict(new_entry) if isinstance(new_entry, dict) else {}
            new_entry["pruned_to"] = max_bytes
            block.metadata[METADATA_KEY] = new_entry
        return stats

    async def prune_all(self, context: Sequence[Msg], max_bytes: int) -> PruneStats:
        """Emergency pass: cut EVERY tool result (recent ones too) to ``max_bytes``."""
        stats = PruneStats()
        for msg in context:
            for block in msg.content:
                if isinstance(block, ToolResultBlock):
                    await self._bound_block(block, max_bytes, stats)
        return stats

    # ---------------------------------------------------------------- helpers
    async def _bound_block(self, block: ToolResultBlock, max_bytes: int, stats: PruneStats) -> None:
        """Bound the whole text of one stored result in place; data parts are left alone.

        A notice is re-cut in place (same file, harder cut) only when it is ours: it names
        a file this block's metadata records (saved by stage 1, or read by our read_file).
        """
        entry = block.metadata.get(METADATA_KEY)
        entry = entry if isinstance(entry, dict) else {}
        read_info = entry.get("read_file") if isinstance(entry.get("read_file"), dict) else None
        owned = self._owned_paths(entry, read_info)
        local = PruneStats()
        if isinstance(block.output, str):
            block.output = await self._bound(block.output, max_bytes, local, owned, read_info)
        else:
            block.output = await self._bound_parts(
                list(block.output), max_bytes, local, owned=owned, read_info=read_info
            )
        stats.truncated += local.truncated
        stats.offloaded += local.offloaded
        stats.paths.extend(local.paths)
        if local.paths:  # so a later, harder cut knows these notices are ours
            new_entry = dict(entry)
            new_entry["offloaded"] = [*entry.get("offloaded", []), *local.paths]
            block.metadata[METADATA_KEY] = new_entry

    async def _bound_parts(
        self,
        parts: list[Any],
        max_bytes: int,
        stats: PruneStats,
        *,
        owned: frozenset[str],
        read_info: dict[str, Any] | None,
    ) -> list[Any]:
        """Bound the text of one result (its text parts together) to ``max_bytes``.

        Text parts keep their place while their running total fits; the first that does not
        and every later text part are joined (``"\\n"``, as formatters join them), saved
        whole and replaced by one excerpt with one notice. Data parts are kept as they are.
        """
        texts = [part for part in parts if isinstance(part, TextBlock)]
        for part in texts:
            part.text = scrub_surrogates(part.text)
        sizes = [len(part.text.encode("utf-8")) for part in texts]
        if sum(sizes) <= max_bytes:
            return parts
        first, used = 0, 0
        while used + sizes[first] <= max_bytes:  # stops in range: the total does not fit
            used += sizes[first]
            first += 1
        while first > 0 and max_bytes - used < _MIN_EXCERPT_BYTES:
            first -= 1  # leave the excerpt room for a few characters
            used -= sizes[first]
        rest = texts[first:]
        single = len(rest) == 1
        text = rest[0].text if single else "\n".join(part.text for part in rest)
        rest[0].text = await self._bound(
            text,
            max_bytes - used,
            stats,
            owned if single else frozenset(),
            read_info if len(texts) == 1 else None,
        )
        dropped = {id(part) for part in rest[1:]}
        return [part for part in parts if id(part) not in dropped]

    async def _bound(
        self,
        text: str,
        max_bytes: int,
        stats: PruneStats,
        owned: frozenset[str],
        read_info: dict[str, Any] | None,
    ) -> str:
        """Return ``text`` cut to ``max_bytes``; offload the original first if needed."""
        text = scrub_surrogates(text)  # so the saved file and the excerpt agree byte for byte
        if len(text.encode("utf-8")) <= max_bytes:
            return text
        out: str | None = None
        parsed = parse_truncation_notice(text)
        if parsed is not None and self._is_owned(parsed[1].file_path, owned):
            out = truncate_text_output(text, max_bytes=max_bytes)  # ours: same file, cut harder
        elif read_info is not None:
            out = self._recut_read(text, max_bytes, read_info)
        if out is None:
            out, saved = await offload_and_cut(
                self.store, text, max_bytes, self.workspace, recut_notice=False
            )
            if saved is not None:
                stats.offloaded += 1
                stats.paths.append(str(saved))
        if out != text:
            stats.truncated += 1
        return out

    @staticmethod
    def _owned_paths(entry: dict[str, Any], read_info: dict[str, Any] | None) -> frozenset[str]:
        """The files a block's notices may name as ours (saved by us, or read by read_file)."""
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
            return any(real == Path(p).resolve() for p in owned)
        except (OSError, RuntimeError, ValueError):
            return False

    @staticmethod
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
