"""A compactor model for any OpenAI-compatible chat endpoint (llama.cpp's server, vLLM,
Ollama, a hosted API), with the standard library only.

It streams by default and reports each chunk as progress, so the compactor's timeout
measures the wait between chunks: a slow local model is never cut off while it writes.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["OpenAICompatibleModel", "StreamStopped", "read_sse"]


class StreamStopped(Exception):
    """The caller gave up on the reply (a timeout or a runaway): stop reading it."""


def read_sse(
    lines: Iterable[bytes],
    progress: Callable[[int], None],
    stop: threading.Event | None = None,
) -> str:
    """The reply text of a streamed chat completion (server-sent events); ``progress`` gets
    the characters received so far after each chunk (reasoning text counts as progress).
    Raises :class:`StreamStopped` once ``stop`` is set."""
    parts: list[str] = []
    received = 0
    for raw in lines:
        if stop is not None and stop.is_set():
            raise StreamStopped("the caller stopped waiting for this reply")
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        choices = json.loads(data).get("choices") or [{}]
        delta = choices[0].get("delta") or {}
        text = delta.get("content") or ""
        thinking = delta.get("reasoning_content") or ""
        parts.append(text)
        received += len(text) + len(thinking)
        progress(received)
    return "".join(parts)


class OpenAICompatibleModel:
    """``POST {base_url}/chat/completions`` as a ``ProgressCompactorModel``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "none",
        context_size: int = 8192,
        stream: bool = True,
        temperature: float = 0.2,
        max_tokens: int | None = None,
        read_timeout: float = 900.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self._context_size = context_size
        self.stream = stream
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.read_timeout = read_timeout

    @property
    def context_size(self) -> int:
        return self._context_size

    @property
    def reports_progress(self) -> bool:
        return self.stream

    async def complete(
        self,
        system_prompt: str,
        request: str,
        *,
        on_progress: Callable[[int], None] | None = None,
    ) -> str:
        loop = asyncio.get_running_loop()

        def progress(chars: int) -> None:
            if on_progress is not None:
                loop.call_soon_threadsafe(on_progress, chars)

        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._post, system_prompt, request, progress, stop)
        except asyncio.CancelledError:
            stop.set()  # the reading thread closes the stream, so the server stops writing
            raise

    def _post(
        self,
        system_prompt: str,
        request: str,
        progress: Callable[[int], None],
        stop: threading.Event,
    ) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": request},
            ],
            "stream": self.stream,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        http = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self.api_key}",
            },
        )
        with urllib.request.urlopen(http, timeout=self.read_timeout) as response:
            if not self.stream:
                reply = json.load(response)
                return str(reply["choices"][0]["message"]["content"] or "")
            return read_sse(response, progress, stop)
