"""Image/audio/video blocks reach the compactor with their URL or source (issue 17 item 11).

QwenPaw renders ``[image] <url>``; inline data is named by its media type and size, never
dumped. Host-neutral label tests and a real AgentScope 2.x agent's ``/compact``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from agentscope.message import AssistantMsg, Base64Source, DataBlock, TextBlock, URLSource, UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.core.summary.data_label import data_label
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step
from tests.agent_history import config
from tests.helpers import make_agent
from tests.summaries import PREVIOUS_SUMMARY

PNG = base64.b64encode(b"\x89PNG" + bytes(2044)).decode()


def test_labels_name_the_url_or_the_inline_source() -> None:
    assert (
        data_label(kind="image", url="https://x.test/cat.png") == "[image] https://x.test/cat.png"
    )
    inline = data_label(data=PNG, media_type="image/png")
    assert inline == "[image] data:image/png (2048 bytes)" and PNG not in inline
    data_url = data_label(kind="audio", url="data:audio/wav;base64," + PNG)
    assert data_url == "[audio] data:audio/wav (2048 bytes)"
    assert data_label(url="https://x.test/a.mp4", media_type="video/mp4", name="demo") == (
        "[video] https://x.test/a.mp4 (demo)"
    )
    assert data_label(media_type="application/pdf", name="spec.pdf") == (
        "[file] application/pdf (spec.pdf)"
    )
    assert data_label(kind="image") == "[image]"


async def test_compactor_reads_image_urls_and_inline_sources(tmp_path: Path) -> None:
    requests: list[str] = []

    def summarise(call: ModelCall) -> list[Any]:
        requests.append(call.messages[-1].get_text_content() or "")
        return text_step(PREVIOUS_SUMMARY)

    compactor = ScriptedChatModel([summarise])
    hook = MemoryCompactionHook(
        config(200_000, compactor="llm"), tmp_path, compactor_model=compactor
    )
    agent = await make_agent(hook, ScriptedChatModel([]))
    url = "https://img.example.com/screens/login-error.png"
    agent.state.context = [
        UserMsg(
            "user",
            [
                TextBlock(text="Why does the login page look like this?"),
                DataBlock(source=URLSource(url=url, media_type="image/png")),
                DataBlock(source=Base64Source(data=PNG, media_type="image/png"), name="crop"),
            ],
        ),
        AssistantMsg("assistant", [TextBlock(text="The CSS bundle failed to load.")]),
    ]
    reply = await agent.reply(UserMsg("user", "/compact"))
    assert (reply.get_text_content() or "").startswith("**Compact Complete!**")
    (request,) = requests
    assert f"[image] {url}" in request
    assert "[image] data:image/png (2048 bytes) (crop)" in request
    assert PNG[:64] not in request, "inline data is never dumped"
    compactor.assert_complete()
