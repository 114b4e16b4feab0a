"""A host's own context settings as ratios of its model's context size (AgentScope 2.x's
``context_config``), kept consistent with ours: the threshold and reserve its hint and its
compression tool should use, what an explicit config of its asks for in tokens, and the
tool-result limit under which its own cut never fires on what stage 1 already bounded.

:class:`HostLimits` applies these to an agent whose ``model.context_size`` and
``context_config`` (``trigger_ratio``, ``context_buffer_ratio``, ``reserve_ratio``,
``tool_result_limit``) are AgentScope 2.x's; a setting it cannot read or write is left as
the host has it (logged).
"""

from __future__ import annotations

import logging
from typing import Any

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import Limits

__all__ = ["HostLimits", "own_ratios", "ratio_limits", "result_ceiling"]

logger = logging.getLogger("copaw_context")


def own_ratios(config: RunningConfig, size: int) -> tuple[float, float]:
    """Our compaction threshold and reserve as ratios of ``size`` (the model's context size)."""
    window = config.window_for(size)[0]
    return config.compact_threshold_tokens(window) / size, config.reserve_tokens(window) / size


def ratio_limits(trigger: float, reserve: float, size: int) -> Limits:
    """The threshold and reserve in tokens a host's ``trigger`` and ``reserve`` ratios of
    ``size`` ask for (the reserve below the threshold)."""
    threshold = max(1, int(trigger * size))
    return Limits(threshold, max(0, min(int(reserve * size), threshold - 1)))


def result_ceiling(config: RunningConfig) -> int | None:
    """The largest text stage 1 leaves in a tool result, in bytes; a token never takes less
    than one byte, so a host's own cut at that many tokens never fires. None: nothing of ours
    bounds the results (pruning is off), the host's own cut stays as it is."""
    pruning = config.light_context_config.tool_result_pruning_config
    if not pruning.enabled:
        return None
    return max(pruning.pruning_recent_msg_max_bytes, pruning.effective_exempt_recent_max_bytes)


class HostLimits:
    """Aligns one agent's ``context_config`` with our configuration."""

    def __init__(self, config: RunningConfig) -> None:
        self.config = config

    def align_builtin_hint(self, agent: Any) -> None:
        """Make the host's hint and its compression tool use our threshold and reserve."""
        try:
            trigger, reserve = own_ratios(self.config, int(agent.model.context_size))
            cfg = agent.context_config
            if 0 < trigger <= 0.9 and cfg.trigger_ratio != trigger:
                if cfg.context_buffer_ratio >= trigger:
                    cfg.context_buffer_ratio = trigger / 4  # AgentScope needs buffer < trigger
                cfg.trigger_ratio = trigger
            if 0 <= reserve < cfg.trigger_ratio and cfg.reserve_ratio != reserve:
                cfg.reserve_ratio = reserve
        except (AttributeError, TypeError, ValueError, ZeroDivisionError):
            logger.debug("copaw-context: could not align AgentScope's context hint")

    def relax_builtin_truncation(self, agent: Any) -> None:
        """Keep the host's own tool-result cut (counted in tokens) off our bounded text
        (:func:`result_ceiling`; left in place when nothing of ours bounds the results)."""
        ceiling = result_ceiling(self.config)
        if ceiling is None:
            return
        try:
            if agent.context_config.tool_result_limit < ceiling:
                agent.context_config.tool_result_limit = ceiling
        except (AttributeError, TypeError, ValueError):
            logger.debug("copaw-context: could not raise the built-in tool_result_limit")

    @staticmethod
    def from_context_config(cfg: Any, agent: Any) -> Limits | None:
        """Threshold and reserve of an explicit ``ContextConfig`` (ratios of context_size)."""
        if cfg is None:
            return None
        try:
            size = int(agent.model.context_size)
            return ratio_limits(float(cfg.trigger_ratio), float(cfg.reserve_ratio), size)
        except (AttributeError, TypeError, ValueError):
            logger.warning("copaw-context: unusable context_config %r; using our own limits", cfg)
            return None
