"""Framework-neutral core: config, truncation, offload, tokens, split planning, prompts, archive.

Nothing in this package imports AgentScope.
"""

__all__: list[str] = []
