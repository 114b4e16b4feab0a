"""A request with more images than the window holds: the oldest images (the request's own
included) are replaced by a notice naming the saved data, oldest first, until the input fits
by the package's own count (2,000 tokens an image); the reply comes and every image's data is
on disk (found from outside: 6 images in an 8,000-token window were sent as is, 12,402 tokens
by the package's own count)."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

from copaw_context import installed_agentscope_major
from copaw_context.core.context.ledger import DATA_BLOCK_TOKENS
from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input

WINDOW = 8000
IMAGES = 6
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/"
    "PchI7wAAAABJRU5ErkJggg=="
)


def image_request(text: str, count: int) -> Any:
    if installed_agentscope_major() >= 2:
        from agentscope.message import Base64Source, DataBlock, TextBlock, UserMsg

        blocks: list[Any] = [TextBlock(text=text)]
        blocks += [
            DataBlock(source=Base64Source(data=PNG, media_type="image/png")) for i in range(count)
        ]
        return UserMsg("user", blocks)
    from agentscope.message import Msg

    items: list[dict[str, Any]] = [{"type": "text", "text": text}]
    items += [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
        for i in range(count)
    ]
    return Msg("user", items, "user")


def _images_in(formatted: list[dict[str, Any]]) -> int:
    return sum(
        sum(1 for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url")
        for m in formatted
        if isinstance(m.get("content"), list)
    )


def test_images_beyond_the_window_are_replaced_by_a_notice(driver: HostDriver) -> None:
    figures = StepFigures()
    images: list[int] = []
    events: list[Any] = []

    async def main(workspace: Path) -> tuple[list[str], int]:
        async def answer(call: Any) -> Any:
            formatted = await driver.provider_inputs(call)
            images.append(_images_in(formatted["openai"]))
            check_model_input(formatted, driver.tool_schemas(call), WINDOW, figures)
            return driver.text_step("seen")

        hook = driver.hook(agent_config(WINDOW, "extractive"), workspace, on_event=events.append)
        agent = await driver.agent(hook, driver.model([answer] * 3, context_size=WINDOW), [])
        request = image_request("compare these screenshots", IMAGES)
        first = await (
            agent.reply(request) if installed_agentscope_major() >= 2 else agent(request)
        )
        total = (await driver.report(hook, agent)).total
        return [first.get_text_content(), await driver.ask(agent, "and now?")], total

    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        replies, total = asyncio.run(main(workspace))
        notices = [e.message for e in events if e.kind == "warning" and "replaced" in e.message]
        saved = [p.read_text() for p in (workspace / "dialog" / "requests").glob("*")]
    assert replies == ["seen", "seen"]
    assert notices, [e.message for e in events]
    # Within the window by our own count, and the images the model got fit it.
    assert total <= WINDOW, total
    assert max(images) * DATA_BLOCK_TOKENS <= WINDOW, images
    assert max(images) > 0, images  # the newest images stay
    # Every image the model did not get is on disk (2.x drops one itself: max_image_num 5).
    on_disk = saved.count(f"data:image/png;base64,{PNG}")
    assert on_disk + max(images) >= IMAGES - (installed_agentscope_major() >= 2), saved
    dropped = int(re.search(r"(\d+) of \d+ image", notices[0]).group(1))  # type: ignore[union-attr]
    record(
        "request_images",
        images_sent=IMAGES,
        images_reached_model=max(images),
        images_replaced=dropped,
        saved_files=len(saved),
        max_input_ratio=round(figures.max_input_ratio, 3),
        package_count_ratio=round(total / WINDOW, 3),
    )
