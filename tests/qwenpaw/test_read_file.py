"""``read_file`` inside QwenPaw keeps QwenPaw's tool (its parameters, its reach) and reads our
saved outputs exactly where our notices point (``line_offset`` included)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from qwenpaw.agents.react_agent import QwenPawAgent
from qwenpaw.config.config import load_agent_config

from tests.qwenpaw.kit import QwenPawSite, agent_calls, install_plugin, load_plugins, tool_results

NOTICE = re.compile(r'file_path="([^"]+)" start_line=(\d+)(?: line_offset=(\d+))?')


async def test_our_notices_are_followed_and_other_files_read_by_qwenpaws_tool(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = QwenPawSite(qwenpaw_home, "reader", monkeypatch, window=40000)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    outside = tmp_path / "outside.txt"  # not in the workspace: only QwenPaw's tool reads it
    outside.write_text("alpha\nbeta\n", encoding="utf-8")
    (site.workspace / "notes.txt").write_text("gamma\n", encoding="utf-8")
    workspace = await site.start()

    await site.ask(workspace, "count to 20000")
    cut = tool_results(agent_calls(site.model)[-1])[-1]
    path, line, offset = NOTICE.search(cut).groups()  # type: ignore[union-attr]
    follow = {"file_path": path, "start_line": int(line), "end_line": int(line) + 2}
    if offset is not None:
        follow["line_offset"] = int(offset)
    await site.ask(workspace, f"CALL read_file {json.dumps(follow)}")
    await site.ask(workspace, f"CALL read_file {json.dumps({'file_path': str(outside)})}")
    await site.ask(workspace, 'CALL read_file {"file_path": "notes.txt"}')
    await workspace.stop()

    calls = agent_calls(site.model)
    (schema,) = [t["function"] for t in calls[-1].tools if t["function"]["name"] == "read_file"]
    assert set(schema["parameters"]["properties"]) == {
        "file_path",
        "start_line",
        "end_line",
        "line_offset",
    }
    assert schema["parameters"]["required"] == ["file_path"]
    followed, qwenpaws, relative = (tool_results(c)[-1] for c in calls[-5::2])
    lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
    expected = "".join(lines[int(line) - 1 : int(line) + 2])[int(offset or 0) :]
    assert followed.startswith(expected)  # the exact bytes the notice points at, then a hint
    assert f"start_line={int(line) + 3}" in followed[len(expected) :]
    assert qwenpaws.startswith("alpha\nbeta"), qwenpaws
    assert relative.startswith("gamma"), relative


async def test_a_flag_qwenpaw_sets_on_the_formatter_reaches_the_model_formatter(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "media", monkeypatch)
    workspace = await site.start()
    manager = workspace.context_manager
    agent = QwenPawAgent(
        agent_config=load_agent_config("media"),
        context_manager=manager,
        workspace_dir=site.workspace,
    )
    await manager.pre_reply(agent, {})
    assert agent.formatter is not site.model.formatter  # our proxy
    agent._set_formatter_media_strip(True)  # what QwenPaw does for a model without vision
    assert site.model.formatter._qwenpaw_force_strip_media is True
    await workspace.stop()
