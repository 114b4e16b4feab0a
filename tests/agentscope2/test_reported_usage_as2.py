"""The 2.x adapter reads a real ``ChatUsage`` into the neutral fields; the rule is core's."""

from __future__ import annotations

from agentscope.model import AnthropicChatModel, ChatUsage, OpenAIChatModel

from copaw_context.agentscope2.usage import reported_usage


def _bare(model_class: type) -> object:
    return model_class.__new__(model_class)  # only its class is read


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
