"""Usage calibration: scale an approximate token count by what the provider reports.

Tool schemas and chat wrapping are invisible to us, and an approximate counter (the byte
estimate, or a vocabulary of another model family) is off by a factor; the provider's
reported input tokens correct it, within a plausible band so a broken report cannot.
"""

from __future__ import annotations

import math

__all__ = ["UsageCalibration"]


class UsageCalibration:
    """Scales our estimate by what the provider really reported for the last call.

    ``factor`` is an exponential moving average (alpha 0.5) of ``reported / estimated``;
    each sample and the result stay within [0.5, 4.0] so one odd report cannot dominate.
    A report far from a plain byte estimate of the same input is not a full prompt count
    (see :meth:`plausible`) and is ignored.
    """

    ALPHA = 0.5
    MIN_FACTOR = 0.5
    MAX_FACTOR = 4.0
    # Real tokenizers give between ~1.6 and ~5 UTF-8 bytes per token on real input: English
    # prose ~4-5 (o200k), code ~3-4, CJK ~2-4, base64/hex ~2-3. Against the bytes/4 estimate
    # that is 0.8x to 2.5x. A report below the band is a partial figure (last streamed chunk
    # only, cached tokens reported apart, a proxy answering 0 or 1); one above it counts
    # something we do not send (or a different request). Either would skew every count.
    PLAUSIBLE_LOW = 0.8
    PLAUSIBLE_HIGH = 2.5

    def __init__(self, factor: float = 1.0, samples: int = 0) -> None:
        self._factor = self._clamp(factor) if _is_positive(factor) else 1.0
        self._samples = samples if isinstance(samples, int) and samples >= 0 else 0

    @classmethod
    def plausible(cls, reported: int, byte_estimate: int) -> bool:
        """Whether ``reported`` input tokens can be a full count of an input whose UTF-8
        bytes / 4 (plus fixed costs such as images) is ``byte_estimate``."""
        if not (_is_positive(reported) and _is_positive(byte_estimate)):
            return False
        return cls.PLAUSIBLE_LOW <= reported / byte_estimate <= cls.PLAUSIBLE_HIGH

    def observe(self, estimated: int, reported: int, *, byte_estimate: int | None = None) -> bool:
        """Record one call; return whether the sample was used.

        Non-positive or non-finite numbers are ignored, and so is a report outside the
        plausible band around ``byte_estimate`` when one is given.
        """
        if not (_is_positive(estimated) and _is_positive(reported)):
            return False
        if byte_estimate is not None and not self.plausible(reported, byte_estimate):
            return False
        ratio = self._clamp(reported / estimated)
        self._factor = self._clamp((1 - self.ALPHA) * self._factor + self.ALPHA * ratio)
        self._samples += 1
        return True

    @property
    def factor(self) -> float:
        return self._factor

    @property
    def samples(self) -> int:
        """How many observations have been accepted."""
        return self._samples

    def apply(self, tokens: int) -> int:
        """``tokens`` scaled by ``factor``, rounded up."""
        if isinstance(tokens, bool) or not isinstance(tokens, int | float) or not tokens >= 0:
            raise ValueError(f"tokens must be a number >= 0, got {tokens!r}")
        # Rounding first keeps float noise (100 * 1.1 = 110.00000000000001) from adding a token.
        return math.ceil(round(tokens * self._factor, 6))

    def as_dict(self) -> dict[str, float | int]:
        """JSON-able state, for the host's session state."""
        return {"factor": self._factor, "samples": self._samples}

    @classmethod
    def from_dict(cls, data: object) -> UsageCalibration:
        """Rebuild from :meth:`as_dict` output; anything unusable gives a neutral calibration."""
        if not isinstance(data, dict):
            return cls()
        factor, samples = data.get("factor", 1.0), data.get("samples", 0)
        if not isinstance(factor, int | float) or isinstance(factor, bool):
            return cls()
        return cls(float(factor), samples if isinstance(samples, int) else 0)

    def _clamp(self, value: float) -> float:
        return min(max(value, self.MIN_FACTOR), self.MAX_FACTOR)


def _is_positive(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value > 0
    )
