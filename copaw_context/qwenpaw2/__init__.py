"""QwenPaw 2.2.x host: copaw-context's AgentScope 2.x middleware in QwenPaw's agents."""

from __future__ import annotations

__all__: list[str] = []
