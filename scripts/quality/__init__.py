"""The summary quality recipe: seeded sessions with planted facts, a scorer, an
OpenAI-compatible compactor model, and ``python -m scripts.quality.run``."""

__all__: list[str] = []
