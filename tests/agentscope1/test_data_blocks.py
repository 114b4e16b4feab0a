"""1.x image/audio/video blocks reach the compactor with their URL or source (issue 17
item 11): a real ReActAgent's ``/compact``."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.message import Msg

from copaw_context.agentscope1 import MemoryCompactionHook
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step
from tests.agentscope1.helpers import settings
from tests.summaries import PREVIOUS_SUMMARY

WAV = base64.b64encode(bytes(3000)).decode()


async def test_compactor_reads_image_urls_and_inline_sources(tmp_path: Path) -> None:
    requests: list[str] = []

    def summarise(call: ModelCall) -> list[Any]:
        requests.append(str(call.formatted[-1].get("content")))
        return text_step(PREVIOUS_SUMMARY)

    compactor = ScriptedChatModel([summarise])
    model = ScriptedChatModel([])
    agent = ReActAgent(
        name="assistant", sys_prompt="Be careful.", model=model, formatter=model.formatter
    )
    agent.set_console_output_enabled(False)
    hook = MemoryCompactionHook(
        settings(compactor="llm"),
        tmp_path,
        compactor_model=compactor,
        compactor_formatter=compactor.formatter,
    )
    await hook.attach(agent)
    url = "https://img.example.com/screens/login-error.png"
    await agent.memory.add(
        [
            Msg(
                "user",
                [
                    {"type": "text", "text": "Why does the login page look like this?"},
                    {"type": "image", "source": {"type": "url", "url": url}},
                    {
                        "type": "audio",
                        "source": {"type": "base64", "media_type": "audio/wav", "data": WAV},
                    },
                ],
                "user",
            ),
            Msg("assistant", "The CSS bundle failed to load.", "assistant"),
        ]
    )
    reply = await agent(Msg("user", "/compact", "user"))
    assert (reply.get_text_content() or "").startswith("**Compact Complete!**")
    (request,) = requests
    assert f"[image] {url}" in request
    assert "[audio] data:audio/wav (3000 bytes)" in request
    assert WAV[:64] not in request, "inline data is never dumped"
    compactor.assert_complete()
