"""The input tokens a provider reported, in neutral fields, and the one rule for when they are
a full prompt count (what usage calibration may learn from)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReportedUsage"]


@dataclass(frozen=True, slots=True)
class ReportedUsage:
    """What a response's usage says about its input, as an adapter reads it.

    ``cache_read_tokens`` / ``cache_write_tokens`` are ``None`` when the host dropped them;
    ``cache_apart`` says the provider counts cached tokens apart from ``input_tokens``
    (Anthropic) instead of as a part of it (OpenAI, DashScope, Gemini, most compatible servers).
    """

    input_tokens: int | None
    cache_read_tokens: int | None = 0
    cache_write_tokens: int | None = 0
    cache_apart: bool = False

    def prompt_tokens(self) -> int | None:
        """All input tokens of the call, cached ones included; ``None`` when the figures
        cannot be a full count (none reported, or a share counted apart and then dropped).

        A cached share larger than ``input_tokens`` can only be reported apart, whoever the
        provider is.
        """
        reported = self.input_tokens
        if not isinstance(reported, int) or reported <= 0:
            return None
        if self.cache_read_tokens is None or self.cache_write_tokens is None:
            return None if self.cache_apart else reported
        cached = max(0, self.cache_read_tokens) + max(0, self.cache_write_tokens)
        if self.cache_apart or cached > reported:
            return reported + cached
        return reported
