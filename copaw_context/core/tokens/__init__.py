"""Token counting that works offline, and usage calibration.

``counters``: exact OpenAI and Qwen vocabularies or a byte estimate (:func:`make_token_counter`);
``vocab``: the bundled vocabularies; ``calibration``: scaling an approximate count by the
provider's reported usage.
"""

from copaw_context.core.tokens.calibration import UsageCalibration
from copaw_context.core.tokens.counters import (
    TOKEN_COUNTER_CHOICES,
    EstimateTokenCounter,
    QwenTokenCounter,
    TiktokenCounter,
    TokenCounter,
    counter_in_use_is_exact,
    counter_is_exact,
    make_token_counter,
    make_token_counter_async,
    resolve_counter_name,
)

__all__ = [
    "TOKEN_COUNTER_CHOICES",
    "EstimateTokenCounter",
    "QwenTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "UsageCalibration",
    "counter_in_use_is_exact",
    "counter_is_exact",
    "make_token_counter",
    "make_token_counter_async",
    "resolve_counter_name",
]
