"""Framework-neutral core: config, truncation, offload, tokens, split planning, summary, archive.

Nothing in this package imports AgentScope.
"""

__all__: list[str] = []
