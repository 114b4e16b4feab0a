"""Ports image-history cases from QwenPaw ([image] <url> in its light context), AgentScope
(its 2,000-token estimate for a data block) and LangChain (count_tokens_approximately's image
handling) to a real agent of either major, with inline base64 images (URL images make
AgentScope 2.x's formatter download them): twelve turns of one image each compact and stay
valid; a request with 6 images in an 8K window reaches the model within the window by the
package's own count (peers D2, fixed: the oldest images become a notice)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from copaw_context import installed_agentscope_major
from tests.reliability.drivers import HostDriver

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/"
    "PchI7wAAAABJRU5ErkJggg=="
)


def image_request(text: str, count: int, inline: bool = True) -> Any:
    urls = [f"https://example.com/shot-{i}.png" for i in range(count)]
    if installed_agentscope_major() >= 2:
        from agentscope.message import Base64Source, DataBlock, TextBlock, URLSource, UserMsg

        blocks: list[Any] = [TextBlock(text=text)]
        for url in urls:
            source = (
                Base64Source(data=PNG_B64, media_type="image/png")
                if inline
                else URLSource(url=url, media_type="image/png")
            )
            blocks.append(DataBlock(source=source))
        return UserMsg("user", blocks)
    from agentscope.message import Msg

    blocks = [{"type": "text", "text": text}]
    for url in urls:
        source = (
            {"type": "base64", "media_type": "image/png", "data": PNG_B64}
            if inline
            else {"type": "url", "url": url}
        )
        blocks.append({"type": "image", "source": source})
    return Msg("user", blocks, "user")


def _images_in(formatted: list[dict[str, Any]]) -> int:
    count = 0
    for msg in formatted:
        content = msg.get("content")
        if isinstance(content, list):
            count += sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    return count


async def _run_images(
    driver: HostDriver, ws: Path, window: int, requests: list[Any]
) -> tuple[list[str], list[int]]:
    from tests.reliability.agent_session import agent_config
    from tests.reliability.invariants import StepFigures, check_model_input

    problems: list[str] = []
    images: list[int] = []
    figures = StepFigures()

    def step(i: int) -> Any:
        async def answer(call: Any) -> list[Any]:
            formatted = await driver.provider_inputs(call)
            images.append(_images_in(formatted["openai"]))
            try:
                check_model_input(formatted, driver.tool_schemas(call), window, figures)
            except AssertionError as error:
                problems.append(f"call {i}: {error}")
            return driver.text_step(f"seen {i} " + "words " * 60)

        return answer

    hook = driver.hook(agent_config(window, "extractive"), ws)
    model = driver.model([step(i) for i in range(len(requests))], context_size=window)
    agent = await driver.agent(hook, model, [])
    for request in requests:
        if installed_agentscope_major() >= 2:
            await agent.reply(request)
        else:
            await agent(request)
    return problems, images


def test_img_history_of_images_compacts_and_stays_valid(driver: HostDriver, tmp_path: Path) -> None:
    window = 8000
    requests = [image_request(f"look at screenshot {i} " + "please " * 40, 1) for i in range(12)]
    problems, images = asyncio.run(_run_images(driver, tmp_path, window, requests))
    assert not problems, problems
    # with 2000 tokens an image (the package's own estimate) the text plus images fit:
    assert max(images) * 2000 <= window, images


def test_img_inline_base64_images(driver: HostDriver, tmp_path: Path) -> None:
    window = 8000
    requests = [
        image_request(f"inline shot {i} " + "please " * 40, 1, inline=True) for i in range(10)
    ]
    problems, images = asyncio.run(_run_images(driver, tmp_path, window, requests))
    assert not problems, problems
    assert max(images) * 2000 <= window, images


def test_img_request_with_many_images(driver: HostDriver, tmp_path: Path) -> None:
    """A single request with 6 images in an 8K window (2000 each by the package's estimate):
    the reply must not die; the model input within the window by the package's own count."""
    window = 8000
    requests = [image_request("compare these", 6)]
    problems, images = asyncio.run(_run_images(driver, tmp_path, window, requests))
    assert not problems, problems
    assert images, "no model call"
    assert images[-1] * 2000 <= window, (
        f"{images[-1]} images reached the model in an {window} window"
    )
