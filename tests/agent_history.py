"""Seeded AgentScope 2.x histories and their block keys, for the compaction tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentscope.message import AssistantMsg, Msg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg

from copaw_context.core.archive.store import read_archive
from copaw_context.core.config.running import RunningConfig
from tests.invariants.settings import config as invariant_config

__all__ = ["archived_block_keys", "block_keys", "config", "seeded_history"]


def config(window: int, **light: Any) -> RunningConfig:
    """Compaction settings for these tests (the invariant suite's, with larger exempt limits);
    the memory summariser (which would also call the compactor's model) is off:
    tests/agentscope2/test_memory_integration.py covers it."""
    exempt = {"exempt_recent_max_bytes": 9000, "exempt_old_max_bytes": 2000}
    return invariant_config(window, pruning=exempt, **light)


def block_keys(messages: list[Msg]) -> list[tuple[str, str]]:
    return [(b.type, b.id) for m in messages for b in m.content]


def archived_block_keys(workspace: Path) -> list[tuple[str, str]]:
    keys: list[tuple[str, str]] = []
    for path in sorted((workspace / "dialog").glob("*.jsonl")):
        for record in read_archive(path):
            msg = Msg.model_validate(record["message"])
            keys.extend((b.type, b.id) for b in msg.content)
    return keys


def seeded_history(turns: int, result_bytes: int = 1500) -> list[Msg]:
    history: list[Msg] = []
    for t in range(turns):
        history.append(UserMsg("user", f"Request {t}: check module m{t}. Never touch prod.yaml."))
        call_id = f"seed_call_{t}"
        history.append(
            AssistantMsg(
                "assistant",
                [
                    TextBlock(text=f"Checking m{t}."),
                    ToolCallBlock(
                        id=call_id, name="run_build", input=json.dumps({"target": f"m{t}"})
                    ),
                    ToolResultBlock(
                        id=call_id,
                        name="run_build",
                        output=[TextBlock(text=("build ok line\n" * (result_bytes // 14)))],
                        state="success",
                    ),
                    TextBlock(text=f"Module m{t} builds."),
                ],
            )
        )
    return history
