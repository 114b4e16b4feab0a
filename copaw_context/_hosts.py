"""Which AgentScope major is installed, read from package metadata (nothing is imported)."""

from __future__ import annotations

__all__ = ["installed_agentscope_major"]


def installed_agentscope_major() -> int:
    """The major version of the installed AgentScope (without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("agentscope")
    except PackageNotFoundError:
        raise ImportError(
            "copaw-context's agent hook needs AgentScope: pip install 'agentscope>=1.0.20'"
        ) from None
    return int(installed.split(".", 1)[0])
