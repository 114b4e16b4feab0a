"""The plugin's middleware factory: copaw-context's middleware in each agent QwenPaw 2.2 builds.

QwenPaw's ``AgentBuilder`` calls every plugin middleware factory as ``factory(ctx,
agent_config)`` while it assembles the agent of a request, before it loads the saved session
into it. :class:`Middlewares` returns the hook of the request's workspace: one per workspace
folder, built from its agent.json and ``copaw-context.json`` (``load_inside_qwenpaw``) and
built again when either file changes (QwenPaw rewrites agent.json when a workspace starts
and when its settings are saved). The per-session state is not the hook's: it is in the
agent's ``AgentState.middle_context``, which the session load restores after the build.

None (the agent is built without us) when QwenPaw's settings would leave the middleware
unused (``strategy`` other than ``"native"``; our ``context_manager_backend`` other than
``"light"``); each reason is logged once per workspace, in QwenPaw's log. An invalid
settings file is logged too (naming the file and the key) and left out: the middleware runs
on the other file's settings (the defaults when agent.json is the invalid one). With
compaction disabled the middleware runs, and the log says what it cannot do then.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from copaw_context.core.config.files import overlay_beside
from copaw_context.core.config.inside_qwenpaw import (
    load_inside_qwenpaw_or_defaults,
    qwenpaw2_unused_reasons,
)
from copaw_context.qwenpaw2.hook import QwenPawHook

__all__ = ["Middlewares", "qwenpaw_log", "workspace_of"]

qwenpaw_log = logging.getLogger("qwenpaw.copaw_context")
"""For the lines QwenPaw's own log should show (QwenPaw logs its ``qwenpaw`` loggers)."""

_Stamp = tuple[int, int]


def workspace_of(ctx: Any) -> Path | None:
    """The workspace folder of a QwenPaw request context (``HookContext``)."""
    folder = getattr(ctx, "workspace_dir", None)
    if folder is None:
        folder = getattr(getattr(ctx, "workspace", None), "workspace_dir", None)
    return None if folder is None else Path(folder).expanduser().resolve()


def _stamp(agent_json: Path) -> _Stamp:
    def mtime(path: Path) -> int:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return 0

    return mtime(agent_json), mtime(overlay_beside(agent_json))


class Middlewares:
    """QwenPaw's middleware factory for copaw-context (one hook per workspace folder)."""

    def __init__(self) -> None:
        self._hooks: dict[Path, tuple[_Stamp, QwenPawHook]] = {}
        self._said: set[tuple[Path, str]] = set()
        self._closing: set[asyncio.Task[None]] = set()

    def __call__(self, ctx: Any, agent_config: Any) -> QwenPawHook | None:
        """The middleware for the agent QwenPaw builds for ``ctx``, or None."""
        workspace = workspace_of(ctx)
        if workspace is None:
            return None
        return self.for_agent(workspace, agent_config)[0]

    def for_agent(self, workspace: Path, agent_config: Any) -> tuple[QwenPawHook | None, str]:
        """The hook for QwenPaw agent settings ``agent_config`` in ``workspace`` and, when
        there is none, why (empty when there is one)."""
        hook = self.hook(workspace)
        light = agent_config.running.light_context_config
        blocking, partial = qwenpaw2_unused_reasons(
            light.strategy,
            light.context_compact_config.enabled,
            hook.config.context_manager_backend,
        )
        for reason in partial:
            self._say(workspace, f"copaw-context runs in part in {workspace}: {reason}")
        if blocking:
            why = "; ".join(blocking)
            self._say(workspace, f"copaw-context is not used by the agent in {workspace}: {why}")
            return None, why
        return hook, ""

    def hook(self, workspace: Path) -> QwenPawHook:
        """The hook of ``workspace`` (built again when its settings files changed)."""
        agent_json = workspace / "agent.json"
        stamp = _stamp(agent_json)
        known = self._hooks.get(workspace)
        if known is not None and known[0] == stamp:
            return known[1]
        config, error = load_inside_qwenpaw_or_defaults(agent_json)
        if error is not None:  # the agent still runs, on the settings without that file
            self._say(
                workspace,
                f"copaw-context: {error}; fix the file (until then copaw-context runs without "
                "the settings of that file)",
            )
        hook = QwenPawHook(config, workspace)
        self._hooks[workspace] = (stamp, hook)
        if known is None:
            qwenpaw_log.info("copaw-context manages the context of the agent in %s", workspace)
        else:
            self._close_later(known[1])
        return hook

    def _say(self, workspace: Path, text: str) -> None:
        if (workspace, text) not in self._said:
            self._said.add((workspace, text))
            qwenpaw_log.warning("%s", text)

    def _close_later(self, hook: QwenPawHook) -> None:
        """Close a replaced hook once the event loop gets to it (its requests are done with
        it or reopen it; closing only stops background work)."""
        try:
            task = asyncio.get_running_loop().create_task(hook.close())
        except RuntimeError:  # no loop running: nothing of the hook's is running either
            return
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every hook (QwenPaw's shutdown)."""
        hooks = [hook for _, hook in self._hooks.values()]
        self._hooks.clear()
        for hook in hooks:
            await hook.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
