"""A host's own context settings as ratios of its model's context size (AgentScope 2.x's
``context_config``), kept consistent with ours: the threshold and reserve its hint and its
compression tool should use, what an explicit config of its asks for in tokens, and the
tool-result limit under which its own cut never fires on what stage 1 already bounded."""

from __future__ import annotations

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import Limits

__all__ = ["own_ratios", "ratio_limits", "result_ceiling"]


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
