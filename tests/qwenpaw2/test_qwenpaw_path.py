"""QwenPaw 2.2.2's own request path, offline: the harness the other tests stand on.

``Workspace.stream_query`` -> ``Runtime.run`` as QwenPaw's channels call it, QwenPaw's
built-in hooks and commands, its own ``execute_shell_command`` (``seq 1 20000``: ~109 KB);
only the model is scripted. The agent keeps QwenPaw's default context strategy
(``"scroll"``), which copaw-context leaves alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.qwenpaw2.kit import QwenPawSite, agent_calls, tool_results


async def test_a_turn_runs_qwenpaws_shell_tool_through_its_runtime(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "own-path", monkeypatch, window=64000, strategy="scroll")
    app = await site.start()
    try:
        reply = await site.ask(app, "count to 20000")
    finally:
        await app.stop()

    assert reply.startswith("done after"), reply
    calls = agent_calls(site.model)
    assert len(calls) == 2  # the tool call, then the answer
    (result,) = tool_results(calls[-1])
    assert result.startswith("1\n2\n3\n")  # QwenPaw's shell tool ran seq
    light = site.agent_json["running"]["light_context_config"]
    assert light["strategy"] == "scroll"  # Workspace.start() wrote QwenPaw's own settings
    assert light["tool_result_pruning_config"]["tool_results_cache"] == "tool_results"
    state = site.saved_state()
    assert [m["role"] for m in state["context"]][0] == "user"  # the session was saved
    assert "MemoryCompactionHook" not in state.get("middle_context", {})
