"""The README's memory wiring example runs as written."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from copaw_context.core.config import RunningConfig
from copaw_context.core.events import CompactionRecord
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

README = Path(__file__).resolve().parent.parent / "README.md"


class ScriptedModel:
    """A tiny host-neutral model answering every call with the same text."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls = 0

    async def complete(self, system_prompt: str, request: str) -> str:
        self.calls += 1
        return self.answer


async def test_the_memory_wiring_example_runs(tmp_path: Path) -> None:
    section = README.read_text(encoding="utf-8").split("## Long-term memory and recall", 1)[1]
    section = section.split("\n## ", 1)[0]
    example = re.findall(r"```python\n(.*?)```", section, re.S)[-1]
    model = ScriptedModel("- Preference: short answers")
    namespace: dict[str, object] = {
        "config": RunningConfig(),
        "workspace": tmp_path,
        "model": model,
    }
    setup, shutdown = example.rsplit("\n", 2)[0], example.rsplit("\n", 2)[1]
    assert shutdown.startswith("await scheduler.stop()")
    steps = f"{setup}\nscheduler.start()\nsummariser.on_compaction(record)\n{shutdown}\n"
    body = textwrap.indent(steps, "    ")
    exec(f"async def example(record):\n{body}    return tools, summariser, scheduler\n", namespace)
    message = TranscriptMessage("user", "user", (TranscriptPart("text", "keep it short"),))
    record = CompactionRecord("auto", "s", "a", (message,), None)
    tools, summariser, scheduler = await namespace["example"](record)  # type: ignore[operator]
    assert model.calls == 1 and not scheduler.running  # type: ignore[attr-defined]
    assert [f.__name__ for f in tools.functions()][-1] == "memory_search"  # type: ignore[attr-defined]
    assert "short answers" in await tools.memory_search("short answers")  # type: ignore[attr-defined]
