"""Short previews of long texts for the demo's output."""

from __future__ import annotations

__all__ = ["preview"]


def preview(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "\u2026"
