"""MEMORY.md in a host's system prompt."""

from __future__ import annotations

__all__ = ["with_memory"]


def with_memory(system_prompt: str, block: str) -> str:
    """``system_prompt`` followed by the MEMORY.md block, unless it already holds MEMORY.md
    (an agent whose prompt is built from the workspace files, as QwenPaw's is)."""
    body = block.partition("\n\n")[2].strip()
    if not block or (body and body[:2000] in system_prompt):
        return system_prompt
    return f"{system_prompt}\n\n{block}" if system_prompt else block
