"""An oversized user request is cut only once its full text is saved (defects 6, 14)."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.toolresults.offload import OffloadStore, SavedText
from copaw_context.core.toolresults.truncation import parse_truncation_notice, truncate_text_output
from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step
from tests.helpers import allow, lines_text, make_agent


def config() -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 8000,
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 6000,
                        "pruning_old_msg_max_bytes": 2000,
                    },
                },
            }
        }
    )


def fetch(page: int) -> str:
    """Fetch a page of the report.

    Args:
        page (`int`): Page number.
    """
    return lines_text(95, seed=f"page {page}")


REQUEST = "Please review this incident log carefully:\n" + lines_text(260, seed="incident")


def steps(pages: int) -> list[Any]:
    calls = [tool_calls_step(("fetch", {"page": n})) for n in range(pages)]
    return [*calls, text_step("reviewed")]


def request_text(model: ScriptedChatModel, call: int) -> str:
    users = [m for m in model.calls[call].messages if m.role == "user"]
    return users[-1].get_text_content() or ""


async def test_a_cut_request_is_saved_once_however_many_passes(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(), tmp_path, on_event=events.append)
    model = ScriptedChatModel(steps(16), context_size=8000)
    # A large system prompt leaves little reserve: every pass finds the request over it.
    agent = await make_agent(hook, model, [allow(fetch)], system_prompt="Rule. " * 2200)
    await agent.reply(UserMsg("user", REQUEST))
    passes = [e for e in events if e.kind in ("compaction", "truncation")]
    assert len(passes) >= 3
    saved = list((tmp_path / "dialog" / "requests").glob("*.txt"))
    assert len(saved) == 1, f"{len(saved)} copies of one request"
    assert saved[0].read_text(encoding="utf-8") == REQUEST
    cut = parse_truncation_notice(request_text(model, -1))
    assert cut is not None and Path(cut[1].file_path or "").name == saved[0].name


async def test_a_request_that_cannot_be_saved_is_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = OffloadStore.save_parts

    async def disk_full(self: OffloadStore, parts: Sequence[str], **kwargs: str) -> SavedText:
        if self.directory.name == "requests":
            raise OSError(errno.ENOSPC, "No space left on device")
        return await original(self, parts, **kwargs)

    monkeypatch.setattr(OffloadStore, "save_parts", disk_full)  # save() goes through it too
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(), tmp_path, on_event=events.append)
    model = ScriptedChatModel(steps(4), context_size=8000)
    agent = await make_agent(hook, model, [allow(fetch)])
    await agent.reply(UserMsg("user", REQUEST))
    for index in range(len(model.calls)):
        assert request_text(model, index) == REQUEST, "the request lost text it had nowhere else"
    warnings = [e for e in events if e.kind == "warning" and "kept whole" in e.message]
    assert warnings, "an event must say the request could not be saved"


async def test_a_pasted_foreign_notice_is_part_of_the_request(tmp_path: Path) -> None:
    pasted = truncate_text_output(
        lines_text(600, seed="pasted"), max_bytes=14_000, file_path="/elsewhere/out.txt"
    )
    request = pasted  # exactly a cut output: its notice parses as a notice
    hook = MemoryCompactionHook(config(), tmp_path)
    model = ScriptedChatModel(steps(16), context_size=8000)
    agent = await make_agent(hook, model, [allow(fetch)], system_prompt="Rule. " * 2200)
    await agent.reply(UserMsg("user", request))
    saved = list((tmp_path / "dialog" / "requests").glob("*.txt"))
    assert len(saved) == 1 and saved[0].read_text(encoding="utf-8") == request
    cut = parse_truncation_notice(request_text(model, -1))
    assert cut is not None and Path(cut[1].file_path or "").name == saved[0].name


@pytest.mark.parametrize("exists", [False, True])
async def test_a_forged_notice_naming_a_request_file_is_part_of_the_request(
    tmp_path: Path, exists: bool
) -> None:
    """A user request ending with a notice that names a ``dialog/requests/`` file the package
    never wrote (missing, or holding other text) is content: it is saved before it is cut."""
    forged_path = tmp_path / "dialog" / "requests" / ("ab" * 16 + ".txt")
    if exists:
        forged_path.parent.mkdir(parents=True)
        forged_path.write_text("some other request\n", encoding="utf-8")
    request = truncate_text_output(
        lines_text(3000, seed="forged"), max_bytes=14_000, file_path=str(forged_path)
    )
    assert parse_truncation_notice(request) is not None
    hook = MemoryCompactionHook(config(), tmp_path)
    model = ScriptedChatModel(steps(16), context_size=8000)
    agent = await make_agent(hook, model, [allow(fetch)], system_prompt="Rule. " * 2200)
    await agent.reply(UserMsg("user", request))
    saved = [
        p
        for p in (tmp_path / "dialog" / "requests").glob("*.txt")
        if p.read_text(encoding="utf-8") == request
    ]
    assert len(saved) == 1, "the request's full text is in no file"
    cut = parse_truncation_notice(request_text(model, -1))
    assert cut is not None and Path(cut[1].file_path or "").name == saved[0].name


async def test_a_request_of_many_text_blocks_is_cut_by_its_total(tmp_path: Path) -> None:
    """Blocks each under the cap are cut by their total: saved once, joined, before the cut;
    the first block keeps the excerpt and the notice, the others one short marker."""
    from agentscope.message import TextBlock

    from copaw_context.core.steps.cut import MOVED_TEXT

    blocks = [lines_text(30, seed=f"block {n}") for n in range(40)]
    hook = MemoryCompactionHook(config(), tmp_path)
    model = ScriptedChatModel(steps(16), context_size=8000)
    agent = await make_agent(hook, model, [allow(fetch)], system_prompt="Rule. " * 2200)
    await agent.reply(UserMsg("user", [TextBlock(text=block) for block in blocks]))
    saved = list((tmp_path / "dialog" / "requests").glob("*.txt"))
    assert len(saved) == 1, f"{len(saved)} copies of one request"
    assert saved[0].read_text(encoding="utf-8") == "\n".join(blocks)
    users = [m for m in model.calls[-1].messages if m.role == "user"]
    texts = [b.text for b in users[-1].get_content_blocks("text")]
    cut = parse_truncation_notice(texts[0])
    assert cut is not None and Path(cut[1].file_path or "").name == saved[0].name
    assert texts[1:] == [MOVED_TEXT]
