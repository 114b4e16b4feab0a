"""What every adapter's ``HostSession`` holds the same way: the agent, the engine's scratch,
the window, the compactor model and the thinking policy the host's formatter follows."""

from __future__ import annotations

from typing import Any

from copaw_context.core.host.protocol import CompactorModel, Window

__all__ = ["SessionBase"]


class SessionBase:
    """The host-neutral half of a ``HostSession`` (an adapter adds the translation)."""

    def __init__(
        self,
        agent: Any,
        *,
        scratch: dict[str, Any],
        thinking: Any,
        window: Window,
        compactor: CompactorModel | None,
        separate_compactor: bool = False,
    ) -> None:
        self.agent = agent
        self._scratch = scratch
        self._thinking = thinking
        self._window = window
        self._compactor = compactor
        self._separate_compactor = separate_compactor

    def context_key(self) -> tuple[int, int] | None:
        """None: every step fingerprints the whole context (a host may do better)."""
        return None

    @property
    def model_key(self) -> str | None:
        """The model this session's calls go to, for what its overflow errors teach (None:
        one set of figures for every model the agent calls)."""
        return None

    @property
    def primary_model_key(self) -> str | None:
        """The agent's own model (whose figures versions before the keys saved)."""
        return None

    @property
    def agent_name(self) -> str:
        return str(self.agent.name)

    @property
    def scratch(self) -> dict[str, Any]:
        return self._scratch

    def window(self) -> Window:
        return self._window

    def compactor_model(self) -> CompactorModel | None:
        return self._compactor

    def use_model_input(self, model_input: object) -> None:
        """The input about to be sent (see ``HostSession``); this base counts its own."""

    def has_separate_summary_model(self) -> bool:
        return self._separate_compactor
