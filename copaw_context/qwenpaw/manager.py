"""``CopawContextManager``: copaw-context as QwenPaw 1.1's context manager.

QwenPaw's ``Workspace`` builds the class registered in ``context_registry`` under the agent's
``context_manager_backend`` (``"light"`` by default; :func:`register` puts ours there), calls
``start()`` and ``close()``, and hands it to every agent it builds (one per request). The
manager translates QwenPaw's contract to the 1.x hook:

``get_agent_context``   a :class:`CopawAgentContext` (our state saved with the memory)
``pre_reply``           attaches the hook to the new agent once its session is loaded (the
                        pipeline then runs on the agent's own hooks: pre_reasoning, post_acting,
                        the model and formatter proxies), registers ``read_file``, and runs
                        QwenPaw's memory search
``pre_reasoning``,      nothing more (the attached hook does it), unless ``pre_reply`` did not
``post_acting``         attach: then attach and run the hook's step
``post_reply``          QwenPaw's ``auto_memory``
``compact_context``     our compaction of the context holding ``messages`` (QwenPaw's
                        ``/compact``); QwenPaw's dict back
``run_session_command`` a chat command on a saved session (the plugin's ``/compact``)
"""

from __future__ import annotations

import logging
import weakref
from pathlib import Path
from typing import Any

from agentscope.message import Msg
from qwenpaw.agents import model_factory
from qwenpaw.agents.context.base_context_manager import BaseContextManager, context_registry
from qwenpaw.agents.utils import get_token_counter
from qwenpaw.config.config import load_agent_config

from copaw_context.agentscope1 import attached_hook
from copaw_context.core.commands import ChatCommand
from copaw_context.core.host.hook_base import fail_open
from copaw_context.core.steps.archive import archive_records, shielded, write_records
from copaw_context.qwenpaw.attach import attach_to_agent
from copaw_context.qwenpaw.config import load_qwenpaw_config_or_defaults
from copaw_context.qwenpaw.context import CopawAgentContext
from copaw_context.qwenpaw.hook import CommandAgent, QwenPawHook
from copaw_context.qwenpaw.memory_manager import (
    MemoryForwarder,
    memory_after_reply,
    search_before_reply,
)

__all__ = ["BACKEND_NAME", "CopawContextManager", "register"]

logger = logging.getLogger("copaw_context")
qwenpaw_log = logging.getLogger("qwenpaw.copaw_context")
"""For the line QwenPaw's own log should show (QwenPaw logs its ``qwenpaw`` loggers)."""

BACKEND_NAME = "light"
"""The ``context_manager_backend`` we answer to: QwenPaw's default, so an unchanged
agent.json selects copaw-context once the plugin is installed."""


class CopawContextManager(BaseContextManager):
    """copaw-context behind QwenPaw's ``BaseContextManager`` (one per workspace)."""

    def __init__(self, working_dir: str, agent_id: str) -> None:
        super().__init__(working_dir=working_dir, agent_id=agent_id)
        self._hook: QwenPawHook | None = None
        self._contexts: weakref.WeakSet[CopawAgentContext] = weakref.WeakSet()
        self.memory = MemoryForwarder()
        self._toolkit: Any = None
        self._prompt = ""

    # ------------------------------------------------------------ lifecycle
    @property
    def hook(self) -> QwenPawHook:
        """The hook (and engine) of this workspace, built from its agent.json."""
        if self._hook is None:
            config, error = load_qwenpaw_config_or_defaults(Path(self.working_dir) / "agent.json")
            if error is not None:  # QwenPaw's agent still starts and answers
                qwenpaw_log.error(
                    "copaw-context: %s; fix the file and restart the agent (until then "
                    "copaw-context runs without the settings of that file)",
                    error,
                )
            self._hook = QwenPawHook(config, self.working_dir, self.agent_id)
            self._hook.engine.add_compaction_listener(self.memory)
        return self._hook

    async def start(self) -> None:
        """Read agent.json and copaw-context.json (an invalid one is logged, naming the file
        and the key, and left out)."""
        hook = self.hook
        qwenpaw_log.info(
            "copaw-context manages the context of agent %s (workspace %s, window %s)",
            self.agent_id,
            hook.workspace,
            self._window_text(),
        )

    def _window_text(self) -> str:
        try:
            window = self.hook.window(None)
        except Exception as exc:  # QwenPaw's config may not be readable yet
            return f"not known yet: {exc}"
        return f"{window.tokens} tokens from {window.source}"

    async def close(self) -> bool:
        """Stop the engine's background work (the memory schedule, early saves)."""
        if self._hook is not None:
            await self._hook.close()
        return True

    def _agent_name(self) -> str:
        try:
            return str(load_agent_config(self.agent_id).name or "QwenPaw")
        except Exception:
            return "QwenPaw"

    # ------------------------------------------------------------ the memory
    def get_agent_context(self, **_kwargs: Any) -> CopawAgentContext:
        """A fresh agent context (QwenPaw loads the saved session into it)."""
        agent_config = load_agent_config(self.agent_id)
        context = CopawAgentContext(
            token_counter=get_token_counter(agent_config),
            dialog_path=self.hook.workspace / self.hook.config.light_context_config.dialog_path,
            archiver=self._archive,
        )
        self._contexts.add(context)
        return context

    def _command_agent(
        self, memory: CopawAgentContext, *, with_model: bool, sys_prompt: str | None = None
    ) -> CommandAgent:
        model = formatter = None
        if with_model:
            try:
                model, formatter = model_factory.create_model_and_formatter(self.agent_id)
            except Exception as exc:  # e.g. no active model: the summary is extractive
                logger.warning("copaw-context: no model for the compactor (%s)", exc)
        return CommandAgent(
            self._agent_name(),
            memory,
            model=model,
            formatter=formatter,
            sys_prompt=self._prompt if sys_prompt is None else sys_prompt,
            toolkit=self._toolkit,
        )

    async def _archive(self, memory: CopawAgentContext, messages: list[Msg]) -> None:
        """Write ``messages`` of ``memory`` to the archive in our format (or keep them in the
        session's pending buffer when it is not writable)."""
        session = await self.hook.session(self._command_agent(memory, with_model=False))
        ids = {msg.id for msg in messages}
        groups = [(i, None) for i, (mid, _) in enumerate(session.fingerprint()) if mid in ids]
        records = archive_records(session, groups)
        await shielded(write_records(self.hook.engine.context, session, records))

    # ------------------------------------------------------------ agent hooks
    def _attach(self, agent: Any) -> bool:
        """Attach the hook to ``agent``; True when this call attached it."""
        if attached_hook(agent) is self.hook:
            return False
        self.memory.saw(getattr(agent, "memory_manager", None))
        attached = attach_to_agent(self.hook, agent)
        if attached:
            self._toolkit = agent.toolkit
            self._prompt = str(agent.sys_prompt)
        return attached

    async def pre_reply(self, agent: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        with fail_open("could not attach to this QwenPaw agent; its context is left as it is"):
            self._attach(agent)
        return await search_before_reply(agent, kwargs)

    async def pre_reasoning(self, agent: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        attached = False
        with fail_open("could not attach to this QwenPaw agent; its context is left as it is"):
            attached = self._attach(agent)
        if attached:  # the hook's own pre_reasoning runs from the next step on
            await self.hook.pre_reasoning(agent, kwargs)
        return None

    async def post_acting(self, agent: Any, kwargs: dict[str, Any], output: Any) -> Msg | None:
        attached = False
        with fail_open("could not attach to this QwenPaw agent; its context is left as it is"):
            attached = self._attach(agent)
        if attached:
            await self.hook.post_acting(agent, kwargs, output)
        return None

    async def post_reply(self, agent: Any, kwargs: dict[str, Any], output: Any) -> Msg | None:
        await memory_after_reply(agent)
        return None

    # ------------------------------------------------------------ commands
    def _context_holding(self, messages: list[Msg]) -> CopawAgentContext | None:
        if not messages:
            return None
        first = messages[0]
        for context in list(self._contexts):
            if any(msg is first for msg, _ in context.content):
                return context
        return None

    async def compact_context(
        self,
        messages: list[Msg],
        previous_summary: str = "",
        extra_instruction: str = "",
    ) -> dict[str, Any]:
        """Our compaction of the context that holds ``messages`` (QwenPaw's ``/compact``
        passes the memory's messages), ``extra_instruction`` as the note. Returns QwenPaw's
        dict; on success the ``clear_content`` QwenPaw calls next keeps what we kept."""
        memory = self._context_holding(messages)
        temporary = memory is None
        if memory is None:  # messages from elsewhere: compact a context holding just them
            memory = self.get_agent_context()
            memory.content = [(msg, []) for msg in messages]
            if previous_summary:
                await memory.update_compressed_summary(previous_summary)
        agent = self._command_agent(memory, with_model=True)
        engine = self.hook.engine
        before = await engine.report(await self.hook.session(agent))
        summary_before = memory.get_compressed_summary()
        count_before = len(memory.content)
        with self.memory.queued_by_qwenpaw():
            reply = await self.hook.command_reply(agent, ChatCommand("compact", extra_instruction))
        summary = memory.get_compressed_summary()
        after = await engine.report(await self.hook.session(agent))
        changed = summary != summary_before or len(memory.content) < count_before
        success = bool(summary) and changed
        if success and not temporary:
            memory.kept_by_compaction()
        return {
            "success": success,
            "reason": "" if success else reply,
            "history_compact": summary if success else "",
            "before_tokens": before.total,
            "after_tokens": after.total if success else before.total,
        }

    async def run_session_command(
        self,
        runner: Any,
        command: ChatCommand,
        *,
        session_id: str,
        user_id: str,
        channel: str,
    ) -> str:
        """Run ``command`` on the saved session (loaded and saved here, as QwenPaw's command
        path does: only its memory) and return our reply."""
        self.memory.saw(getattr(runner, "memory_manager", None))
        state = await runner.session.get_session_state_dict(
            session_id=session_id, user_id=user_id, channel=channel
        )
        saved = state.get("agent", {}) if isinstance(state, dict) else {}
        memory = self.get_agent_context()
        memory.load_state_dict(saved.get("memory", {}), strict=False)
        prompt = saved.get("_sys_prompt")
        agent = self._command_agent(
            memory,
            with_model=command.name == "compact",
            sys_prompt=prompt if isinstance(prompt, str) else None,
        )
        reply = await self.hook.command_reply(agent, command)
        if session_id and user_id:
            await runner.session.update_session_state(
                session_id=session_id,
                key="agent.memory",
                value=memory.state_dict(),
                user_id=user_id,
                channel=channel,
            )
        return reply


def register() -> None:
    """Put :class:`CopawContextManager` in QwenPaw's ``context_registry`` as ``"light"``."""
    context_registry.register(BACKEND_NAME)(CopawContextManager)
