"""A real 2.x ``ChatUsage`` read into the neutral fields (``core.host.models.reported_usage``
with the adapter's cache fields); the rule is core's."""

from __future__ import annotations

from agentscope.model import AnthropicChatModel, ChatUsage, OpenAIChatModel

from copaw_context.agentscope2.middleware import CACHE_FIELDS
from copaw_context.core.host.models import reported_usage as read_usage
from copaw_context.core.tokens.usage import ReportedUsage


def _bare(model_class: type) -> object:
    return model_class.__new__(model_class)  # only its class is read


def reported_usage(usage: ChatUsage, model: object) -> ReportedUsage:
    reported = read_usage(usage, model, CACHE_FIELDS)
    assert reported is not None
    return reported


def test_anthropic_cache_counts_apart_and_openai_cache_inside() -> None:
    usage = ChatUsage(
        input_tokens=100,
        output_tokens=5,
        time=0.1,
        cache_input_tokens=900,
        cache_creation_input_tokens=200,
    )
    assert reported_usage(usage, _bare(AnthropicChatModel)).prompt_tokens() == 1200
    inside = ChatUsage(input_tokens=1200, output_tokens=5, time=0.1, cache_input_tokens=800)
    assert reported_usage(inside, _bare(OpenAIChatModel)).prompt_tokens() == 1200


def test_a_zero_input_figure_is_no_count() -> None:
    usage = ChatUsage(input_tokens=0, output_tokens=5, time=0.1)
    assert reported_usage(usage, _bare(OpenAIChatModel)).prompt_tokens() is None
