"""Each provider's real "input too long" and rate-limit errors, raised as its client raises them.

The texts are the providers' own (OpenAI, Azure OpenAI, Anthropic, Gemini, DashScope, vLLM,
SGLang, llama.cpp, Ollama, LM Studio, TGI); the exceptions are the installed SDKs' classes
(``openai``, ``anthropic``, ``dashscope`` responses wrapped as AgentScope 1.x wraps them) or,
for servers reached through another client, an exception with the status code it sends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import openai
from dashscope.api_entities.dashscope_response import GenerationResponse

__all__ = ["RATE_LIMITS", "WORDINGS", "HttpError", "Wording"]


class HttpError(Exception):
    """An OpenAI-compatible server's error as a generic HTTP client raises it."""

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True)
class Wording:
    provider: str
    make: Callable[[], Exception]
    sent: int | None  # the INPUT tokens the text states
    limit: int | None


def _response(status: int, url: str) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("POST", url))


def _openai(message: str, status: int = 400, code: str | None = None) -> Exception:
    body = {"message": message, "type": "invalid_request_error", "param": "messages", "code": code}
    kind: Any = {400: openai.BadRequestError, 429: openai.RateLimitError}[status]
    url = "https://api.openai.com/v1/chat/completions"
    text = f"Error code: {status} - {{'error': {body}}}"
    return kind(text, response=_response(status, url), body=body)


def _azure(message: str, code: str | None = None) -> Exception:
    body = {"message": message, "type": "invalid_request_error", "param": "messages", "code": code}
    url = "https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
    return openai.BadRequestError(
        f"Error code: 400 - {{'error': {body}}}", response=_response(400, url), body=body
    )


def _anthropic(message: str, status: int = 400, kind: str = "invalid_request_error") -> Exception:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    cls: Any = {400: anthropic.BadRequestError, 429: anthropic.RateLimitError}[status]
    url = "https://api.anthropic.com/v1/messages"
    return cls(f"Error code: {status} - {body}", response=_response(status, url), body=body)


def _dashscope(status: int, code: str, message: str) -> Exception:
    response = GenerationResponse(
        status_code=status, request_id="7f2c", code=code, message=message, output=None, usage=None
    )
    return RuntimeError(response)  # as AgentScope's DashScopeChatModel raises it


def _gemini(status: int, state: str, message: str) -> Exception:
    return HttpError(
        f"{status} {state}. {{'error': {{'code': {status}, 'message': '{message}', "
        f"'status': '{state}'}}}}",
        status_code=status,
    )


WORDINGS = [
    Wording(
        "openai",
        lambda: _openai(
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        ),
        9000,
        8192,
    ),
    Wording(
        "openai max_tokens",
        lambda: _openai(
            "This model's maximum context length is 8192 tokens. However, you requested 9000 "
            "tokens (1000 in the messages, 8000 in the completion). Please reduce the length "
            "of the messages or completion.",
            code="context_length_exceeded",
        ),
        1000,
        8192,
    ),
    Wording(
        "openai responses",
        lambda: _openai(
            "Your input exceeds the context window of this model. Please adjust your input "
            "and try again.",
            code="context_length_exceeded",
        ),
        None,
        None,
    ),
    Wording(
        "azure",
        lambda: _azure(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130512 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        ),
        130512,
        128000,
    ),
    Wording(
        "anthropic",
        lambda: _anthropic("prompt is too long: 210000 tokens > 200000 maximum"),
        210000,
        200000,
    ),
    Wording(
        "anthropic max_tokens",
        lambda: _anthropic(
            "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, "
            "decrease input length or `max_tokens` and try again"
        ),
        190000,
        200000,
    ),
    Wording(
        "gemini",
        lambda: _gemini(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
        ),
        1200000,
        1048576,
    ),
    Wording(
        "dashscope",
        lambda: _dashscope(400, "InvalidParameter", "Range of input length should be [1, 30720]"),
        None,
        30720,
    ),
    Wording(
        "vllm",
        lambda: HttpError(
            "This model's maximum context length is 4096 tokens. However, your request has "
            "5000 input tokens. Please reduce the length of the input messages.",
            status_code=400,
        ),
        5000,
        4096,
    ),
    Wording(
        "vllm max_tokens",
        lambda: HttpError(
            "This model's maximum context length is 4096 tokens. However, you requested 5000 "
            "tokens (4000 in the messages, 1000 in the completion). Please reduce the length "
            "of the messages or completion.",
            status_code=400,
        ),
        4000,
        4096,
    ),
    Wording(
        "vllm v1",
        lambda: HttpError(
            "The decoder prompt (length 5000) is longer than the maximum model length of "
            "4096. Make sure that `max_model_len` is no smaller than the number of text "
            "tokens.",
            status_code=400,
        ),
        5000,
        4096,
    ),
    Wording(
        "sglang",
        lambda: HttpError(
            "Input length (5000 tokens) exceeds the maximum allowed length (4096 tokens). "
            "Use a shorter input or enable --allow-auto-truncate.",
            status_code=400,
        ),
        5000,
        4096,
    ),
    Wording(
        "llama.cpp",
        lambda: HttpError(
            "{'code': 400, 'message': 'request (5000 tokens) exceeds the available context "
            "size (4096 tokens), try increasing it', 'type': 'exceed_context_size_error', "
            "'n_prompt_tokens': 5000, 'n_ctx': 4096}",
            status_code=400,
        ),
        5000,
        4096,
    ),
    Wording(
        "ollama",
        lambda: HttpError("the input length exceeds the context length", status_code=400),
        None,
        None,
    ),
    Wording(
        "lm studio",
        lambda: HttpError(
            "Trying to keep the first 5000 tokens when context the overflows. However, the "
            "model is loaded with context length of only 4096 tokens, which is not enough. "
            "Try to load the model with a larger context length, or provide a shorter input",
            status_code=400,
        ),
        5000,
        4096,
    ),
    Wording(
        "lm studio a",
        lambda: HttpError(
            "Trying to keep the first 6547 tokens when context overflows. However, the model "
            "is loaded with a context length of only 4096 tokens, which is not enough. Try to "
            "load the model with a larger context length, or provide a shorter input.",
            status_code=400,
        ),
        6547,
        4096,
    ),
    Wording(
        "lm studio n_keep",
        lambda: HttpError(
            '{"error":"The number of tokens to keep from the initial prompt is greater than '
            "the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a "
            'larger context length, or provide a shorter input."}',
            status_code=400,
        ),
        13055,
        4096,
    ),
    Wording(
        "lm studio old",
        lambda: HttpError("Error: Input length 6491 exceeds context length 1500", status_code=400),
        6491,
        1500,
    ),
    Wording(
        "tgi",
        lambda: HttpError(
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
            "Given: 5000 `inputs` tokens and 100 `max_new_tokens`",
            status_code=422,
        ),
        5000,
        4096,
    ),
    # Misread or absurd figures: none may be learned from (an nginx page's "<title>413" is
    # no 413-token limit; no window is 1 token or 10**12; 5,000 digits exceed int()'s bound).
    Wording(
        "nginx 413 html page",
        lambda: HttpError(
            "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
            "<center><h1>413 Request Entity Too Large</h1></center>\r\n"
            "<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n",
            status_code=413,
        ),
        None,
        None,
    ),
    Wording(
        "absurd limit of 1 token",
        lambda: _openai(
            "This model's maximum context length is 1 tokens. However, your messages "
            "resulted in 5000 tokens.",
            code="context_length_exceeded",
        ),
        5000,
        None,
    ),
    Wording(
        "absurd 10**12 input tokens",
        lambda: _openai(
            "This model's maximum context length is 16000 tokens. However, your messages "
            "resulted in 1000000000000 tokens.",
            code="context_length_exceeded",
        ),
        None,
        16000,
    ),
    Wording(
        "a 5,000-digit figure",
        lambda: _openai(
            "This model's maximum context length is 16000 tokens. However, your messages "
            "resulted in " + "9" * 5000 + " tokens.",
            code="context_length_exceeded",
        ),
        None,
        16000,
    ),
]

RATE_LIMITS: list[tuple[str, Callable[[], Exception]]] = [
    (
        "openai tpm",
        lambda: _openai(
            "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): "
            "Limit 30000, Used 28000, Requested 9000. Please try again in 18s.",
            status=429,
            code="rate_limit_exceeded",
        ),
    ),
    (
        "openai request too large",
        lambda: _openai(
            "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): "
            "Limit 30000, Requested 45000. The input or output tokens must be reduced in "
            "order to run successfully.",
            status=429,
            code="rate_limit_exceeded",
        ),
    ),
    (
        "openai quota",
        lambda: _openai(
            "You exceeded your current quota, please check your plan and billing details.",
            status=429,
            code="insufficient_quota",
        ),
    ),
    (
        "anthropic",
        lambda: _anthropic(
            "This request would exceed the rate limit for your organization of 40,000 input "
            "tokens per minute.",
            status=429,
            kind="rate_limit_error",
        ),
    ),
    (
        "dashscope",
        lambda: _dashscope(
            429, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later."
        ),
    ),
    (
        "dashscope quota",
        lambda: _dashscope(429, "Throttling.AllocationQuota", "Allocated quota exceeded."),
    ),
    (
        "gemini",
        lambda: _gemini(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
        ),
    ),
]
