"""AgentScope 2.x's own context settings, kept consistent with ours.

AgentScope hints the agent that "context will be compressed at N tokens", truncates tool
results by its own token limit, caps images (``max_image_num``) and may pass an explicit
``ContextConfig`` to ``compress_context`` (its compression tool lowers the trigger). These
helpers translate between that configuration and the engine's limits.
"""

from __future__ import annotations

import logging
from typing import Any

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import Limits
from copaw_context.core.host.hook_events import fail_open
from copaw_context.core.host.ratios import own_ratios, ratio_limits, result_ceiling

__all__ = ["HostLimits"]

logger = logging.getLogger("copaw_context")


class HostLimits:
    """Aligns one agent's ``context_config`` with our configuration."""

    def __init__(self, config: RunningConfig) -> None:
        self.config = config

    def align_builtin_hint(self, agent: Any) -> None:
        """Make AgentScope's hint and its compression tool use our threshold and reserve."""
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
        """Keep AgentScope's own tool-result cut (counted in tokens) off our bounded text
        (``core.host.ratios.result_ceiling``; left in place when nothing of ours bounds
        the results)."""
        ceiling = result_ceiling(self.config)
        if ceiling is None:
            return
        try:
            if agent.context_config.tool_result_limit < ceiling:
                agent.context_config.tool_result_limit = ceiling
        except (AttributeError, TypeError, ValueError):
            logger.debug("copaw-context: could not raise the built-in tool_result_limit")

    @staticmethod
    async def limit_images(agent: Any, context_config: Any) -> None:
        """AgentScope's own ``max_image_num`` rule (oldest images out first)."""
        with fail_open("could not apply AgentScope's image limit"):
            # Private, but it is AgentScope's own rule, applied as the built-in does. Pinned
            # by tests/agentscope2/test_agentscope_pins.py.
            await agent._limit_context_images(context_config)

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
