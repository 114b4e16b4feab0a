"""More "input too long" wordings, and look-alikes that are not, from issue threads.

Raised as the client a host reaches them through raises them: the ``openai`` SDK's classes
for OpenAI-compatible servers (llama.cpp forks, llama-cpp-python's server, vLLM, OpenRouter,
Mistral), ``ValueError`` for the llama-cpp-python library and vLLM's offline engine.

Sources: ikawrakow/ik_llama.cpp #1619, gpustack/llama-box #25 (KV size);
abetlen/llama-cpp-python #416 #462, run-llama/llama_index #8046, fedora-copr/logdetective-website
#193, llama_cpp/server/errors.py (llama-cpp-python); vllm-project/vllm #42474 #12165,
AIDotNet/OpenCowork #82 (vLLM); helm #94, aboutmydreams/custom_data_gpt #2, bytedance/deer-flow
#310 (OpenAI); Aider-AI/aider #3721, boldsoftware/shelley #159, OpenHands/OpenHands #9937
(OpenRouter); docs.mistral.ai known limitations (Mistral); MoonshotAI/kimi-cli #2011 (Kimi);
can1357/oh-my-pi #1618 ("The prompt is too long: N, model maximum context length: M"); Ollama's
and Together AI's texts as other clients' overflow tables quote them. Look-alikes:
ChatGPTNextWeb/NextChat #3195, algorithmicsuperintelligence/optillm #4, Gitlawb/openclaude #331.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai

from tests.reliability.provider_wordings import (
    HttpError,
    Wording,
    _anthropic,
    _dashscope,
    _openai,
    _response,
)

__all__ = ["LOOK_ALIKES", "MORE_WORDINGS"]


def _server(message: str, status: int, body: dict[str, Any]) -> Exception:
    """An OpenAI-compatible server's error body as the ``openai`` SDK raises it."""
    kind: Any = {400: openai.BadRequestError, 500: openai.InternalServerError}[status]
    url = "http://localhost:8080/v1/chat/completions"
    return kind(
        f"Error code: {status} - {{'error': {body}}}", response=_response(status, url), body=body
    )


def _llama_cpp(message: str) -> Exception:  # send_error(..., ERROR_TYPE_SERVER)
    return _server(message, 500, {"code": 500, "message": message, "type": "server_error"})


def _vllm(message: str, param: str = "input_tokens") -> Exception:
    body = {"message": message, "type": "BadRequestError", "param": param, "code": 400}
    return _server(message, 400, body)


def _openrouter(message: str) -> Exception:
    return _server(
        message, 400, {"message": message, "code": 400, "metadata": {"provider_name": "Chutes"}}
    )


def _mistral(message: str) -> Exception:
    body = {
        "object": "error",
        "message": message,
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    return _server(message, 400, body)


def _llama_cpp_python_server(
    prompt: int, window: int, completion: int | None, chat: bool
) -> Exception:
    """llama_cpp/server/errors.py's context_length_exceeded formatter."""
    total = prompt + (completion or 0)
    if chat:
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{total} tokens ({prompt} in the messages, {completion} in the completion). Please "
            "reduce the length of the messages or completion."
        )
    else:
        message = (
            f"This model's maximum context length is {window} tokens, however you requested "
            f"{total} tokens ({prompt} in your prompt; {completion} for the completion). Please "
            "reduce your prompt; or completion length."
        )
    return _openai(message, code="context_length_exceeded")


MORE_WORDINGS = [
    Wording(
        "llama.cpp kv size",
        lambda: _llama_cpp(
            "Input prompt is too big compared to KV size. Please try increasing KV size."
        ),
        None,
        None,
    ),
    Wording(
        "llama-box kv size",
        lambda: _llama_cpp("input prompt is too big compared to KV size, please increase KV size"),
        None,
        None,
    ),
    Wording(
        "llama-cpp-python",
        lambda: ValueError("Requested tokens (2285) exceed context window of 2048"),
        2285,
        2048,
    ),
    Wording(
        "llama-cpp-python old",
        lambda: ValueError("Requested tokens exceed context window of 512"),
        None,
        512,
    ),
    Wording(
        "llama-cpp-python server chat",
        lambda: _llama_cpp_python_server(2285, 2048, None, chat=True),
        2285,
        2048,
    ),
    Wording(
        "llama-cpp-python server completions",
        lambda: _llama_cpp_python_server(2285, 2048, 256, chat=False),
        2285,
        2048,
    ),
    Wording(
        "vllm 0.20 at least",
        lambda: _vllm(
            "This model's maximum context length is 128000 tokens. However, you requested 65535 "
            "output tokens and your prompt contains at least 62466 input tokens, for a total of "
            "at least 128001 tokens. Please reduce the length of the input prompt or the number "
            "of requested output tokens. (parameter=input_tokens, value=62466)"
        ),
        62466,
        128000,
    ),
    Wording(
        "vllm 0.25 exact",
        lambda: _vllm(
            "This model's maximum context length is 8192 tokens. However, you requested 64 output "
            "tokens and your prompt contains 10000 input tokens, for a total of 10064 tokens. "
            "Please reduce the length of the input prompt or the number of requested output tokens."
        ),
        10000,
        8192,
    ),
    Wording(
        "vllm characters",
        lambda: _vllm(
            "This model's maximum context length is 8192 tokens. However, you requested 64 output "
            "tokens and your prompt contains 100000 characters (more than 81280 characters, which "
            "is the upper bound for 8128 input tokens). Please reduce the length of the input "
            "prompt or the number of requested output tokens. (parameter=input_text, value=100000)",
            param="input_text",
        ),
        None,
        8192,
    ),
    Wording(
        "vllm offline engine",
        lambda: ValueError(
            "The prompt (total length 25938) is too long to fit into the model (context length "
            "4096). Make sure that `max_model_len` is no smaller than the number of text tokens "
            "plus multimodal tokens."
        ),
        25938,
        4096,
    ),
    Wording(
        "openai legacy completions",
        lambda: _openai(
            "This model's maximum context length is 4097 tokens, however you requested 4231 "
            "tokens (3975 in your prompt; 256 for the completion). Please reduce your prompt; or "
            "completion length.",
            code="context_length_exceeded",
        ),
        3975,
        4097,
    ),
    Wording(
        "openai legacy comma",
        lambda: _openai(
            "This model's maximum context length is 2049 tokens, however you requested 2054 "
            "tokens (2049 in your prompt, 5 for the completion). Please reduce your prompt or "
            "completion length."
        ),
        2049,
        2049,
    ),
    Wording(
        "openai functions",
        lambda: _openai(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 202868 tokens (202767 in the messages, 101 in the functions). Please "
            "reduce the length of the messages or functions.",
            code="context_length_exceeded",
        ),
        202868,
        128000,
    ),
    Wording(
        "openrouter",
        lambda: _openrouter(
            "This endpoint's maximum context length is 200000 tokens. However, you requested "
            "about 250000 tokens (242000 of text input, 8000 in the output). Please reduce the "
            'length of either one, or use the "middle-out" transform to compress your prompt '
            "automatically."
        ),
        242000,
        200000,
    ),
    Wording(
        "openrouter tool input",
        lambda: _openrouter(
            "This endpoint's maximum context length is 204800 tokens. However, you requested "
            "about 205432 tokens (81684 of text input, 3748 of tool input, 120000 in the output). "
            'Please reduce the length of either one, or use the "middle-out" transform to '
            "compress your prompt automatically."
        ),
        85432,
        204800,
    ),
    Wording(
        "mistral",
        lambda: _mistral(
            "Prompt contains 300000 tokens, too large for model with 131072 maximum context length"
        ),
        300000,
        131072,
    ),
    Wording(
        "mistral draft tokens",
        lambda: _mistral(
            "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 "
            "maximum context length"
        ),
        40000,
        32768,
    ),
]

MORE_WORDINGS += [
    Wording(
        "ollama native api",
        lambda: HttpError(
            '{"StatusCode":400,"Status":"400 Bad Request","error":"prompt too long; exceeded '
            'max context length by 1200 tokens"}',
            status_code=400,
        ),
        None,  # 1,200 is how far over, not the input
        None,
    ),
    Wording(
        "kimi",
        lambda: _openai(
            "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)"
        ),
        None,  # "requested" is the input and the completion's share together
        262144,
    ),
    Wording(
        "together",
        lambda: HttpError(
            "The input (516368 tokens) is longer than the model's context length (262144 tokens).",
            status_code=400,
        ),
        516368,
        262144,
    ),
    Wording(
        "openai-compatible prompt is too long",
        lambda: _openai("The prompt is too long: 267657, model maximum context length: 262143"),
        267657,
        262143,
    ),
]

# Errors that mention tokens, lengths or limits but that no compaction fixes: the host's
# max_tokens alone fills the window or exceeds the output cap, a string or array over its
# bound, a moderation refusal, a malformed history. Never taken for overflows.
LOOK_ALIKES: list[tuple[str, Callable[[], Exception]]] = [
    (
        "openai completion fills the window",
        lambda: _openai(
            "This model's maximum context length is 8192 tokens. However, you requested 8256 "
            "tokens (64 in the messages, 8192 in the completion). Please reduce the length of "
            "the messages or completion.",
            code="context_length_exceeded",
        ),
    ),
    (
        "openrouter output fills the window",
        lambda: _openrouter(
            "This endpoint's maximum context length is 131072 tokens. However, you requested "
            "about 141607 tokens (10535 of text input, 131072 in the output). Please reduce the "
            'length of either one, or use the "middle-out" transform to compress your prompt '
            "automatically."
        ),
    ),
    (
        "vllm output fills the window",
        lambda: _vllm(
            "This model's maximum context length is 32768 tokens. However, you requested 32768 "
            "output tokens and your prompt contains 31800 characters (more than 0 characters, "
            "which is the upper bound for 0 input tokens). Please reduce the length of the input "
            "prompt or the number of requested output tokens. (parameter=input_text, value=31800)",
            param="input_text",
        ),
    ),
    (
        "vllm max_tokens above the window",
        lambda: _vllm(
            "'max_tokens' or 'max_completion_tokens' is too large: 140000. This model's maximum "
            "context length is 131072 tokens and your request has 1000 input tokens "
            "(140000 > 131072 - 1000).",
            param="max_tokens",
        ),
    ),
    (
        "openai max_tokens above the output cap",
        lambda: _openai(
            "max_tokens is too large: 8192. This model supports at most 4096 completion tokens, "
            "whereas you provided 8192."
        ),
    ),
    (
        "anthropic max_tokens above the output cap",
        lambda: _anthropic(
            "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens "
            "for claude-sonnet-4-5"
        ),
    ),
    (
        "volcengine max_completion_tokens above its maximum",
        lambda: HttpError(
            "The parameter `max_completion_tokens` specified in the request are not valid: "
            "integer above maximum value, expected a value <= 12288, but got 32000 instead.",
            status_code=400,
        ),
    ),
    (
        "openai string too long",
        lambda: _openai(
            "Invalid 'messages[3].content': string too long. Expected a string with maximum "
            "length 1048576, but got a string with length 2097152 instead.",
            code="string_above_max_length",
        ),
    ),
    (
        "openai array too long",
        lambda: _openai(
            "Invalid 'tools': array too long. Expected an array with maximum length 128, but got "
            "an array with length 150 instead.",
            code="array_above_max_length",
        ),
    ),
    (
        "anthropic image too large",
        lambda: _anthropic(
            "messages.1.content.0.image.source.base64: image exceeds 5 MB maximum: 6291456 "
            "bytes > 5242880 bytes"
        ),
    ),
    (
        "dashscope moderation",
        lambda: _dashscope(
            400, "DataInspectionFailed", "Input data may contain inappropriate content."
        ),
    ),
    (
        "azure content filter",
        lambda: _openai(
            "The response was filtered due to the prompt triggering Azure OpenAI's content "
            "management policy. Please modify your prompt and retry.",
            code="content_filter",
        ),
    ),
    (
        "gemini function parts mismatch",
        lambda: HttpError(
            "400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': 'Please ensure that the "
            "number of function response parts is equal to the number of function call parts "
            "of the function call turn.', 'status': 'INVALID_ARGUMENT'}}",
            status_code=400,
        ),
    ),
]
