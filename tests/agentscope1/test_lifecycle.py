"""The hook's lifecycle on AgentScope 1.x (the host-neutral tests, run with the 1.x hook)."""

from tests.test_hook_lifecycle import (
    test_a_hook_collected_unclosed_with_pending_summaries_warns,
    test_a_hook_used_after_close_is_open_again_until_closed,
    test_async_with_waits_for_the_pending_memory_summaries,
)

__all__ = [
    "test_a_hook_collected_unclosed_with_pending_summaries_warns",
    "test_a_hook_used_after_close_is_open_again_until_closed",
    "test_async_with_waits_for_the_pending_memory_summaries",
]
