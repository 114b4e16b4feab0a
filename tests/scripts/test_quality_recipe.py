"""The quality recipe (scripts/quality): seeded sessions, scoring, the OpenAI-compatible
model (against a loopback server) and the offline run. No network beyond 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from copaw_context.testing import ScriptedTextModel
from scripts.quality.openai_model import OpenAICompatibleModel, StreamStopped, read_sse
from scripts.quality.rescore import rescore
from scripts.quality.run import evaluate, format_table, main
from scripts.quality.score import fact_kept, score_summary
from scripts.quality.sessions import CATEGORIES, Planted, build_sessions


def test_sessions_are_seeded_and_plant_every_category_in_both_languages() -> None:
    sessions = build_sessions(seed=3, filler=4)
    again = build_sessions(seed=3, filler=4)
    assert [s.messages for s in sessions] == [s.messages for s in again]
    assert build_sessions(seed=4, filler=4)[0].messages != sessions[0].messages
    assert {s.language for s in sessions} == {"en", "zh"}
    for session in sessions:
        assert {fact.category for fact in session.planted} == set(CATEGORIES)


def test_scoring_reads_sections_and_exact_lines() -> None:
    summary = (
        "## Goal\n- ship the CSV export\n## Constraints & Preferences\n- never edit VENDOR/\n"
        "## Progress\n## Key Decisions\n- papaparse: it handles quoted newlines\n"
        "## Next Steps\n1. Run the tests\n## Critical Context\n- src/api.ts\n"
        "- add an aria-label later\n"
    )
    assert fact_kept(Planted("goal", ("CSV export",)), summary)
    assert fact_kept(Planted("constraints", ("Never edit vendor/",)), summary)
    assert fact_kept(Planted("decisions", ("papaparse", "quoted newlines")), summary)
    assert not fact_kept(Planted("decisions", ("papaparse", "smaller bundle")), summary)
    assert not fact_kept(Planted("next_steps", ("aria-label",)), summary)  # not a next step
    assert fact_kept(Planted("paths", ("src/api.ts",)), summary)
    assert not fact_kept(Planted("paths", ("src/API.ts",)), summary)


def test_the_offline_run_keeps_every_planted_fact(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--extractive", "--filler", "3"]) == 0
    table = capsys.readouterr().out
    total = next(line for line in table.split("\n") if line.startswith("| total"))
    assert total.endswith("| 4/4 | 8/8 | 8/8 | 8/8 | 4/4 | 4/4 |"), table


def test_the_offline_run_counts_junk_and_the_ratio_and_rescore_reads_its_summaries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--extractive", "--filler", "3", "--show"]) == 0
    captured = capsys.readouterr()
    head, _rule, *rows = captured.out.strip().split("\n")
    assert head.split(" | ")[4:6] == ["junk", "ratio"]
    assert all(row.split(" | ")[4] == "0" for row in rows), captured.out  # no junk line
    assert all(0 < float(row.split(" | ")[5].split()[0]) < 1 for row in rows)
    table = rescore(captured.err, seed=1, filler=3)
    total = table.split("\n")[-1]
    assert total.startswith("| total | 0 | - |") and total.endswith("| 36/36 |"), table
    snippet = "- [x] read_file(a.py): ok — 1  x = 1\n"  # a numbered source line as an outcome
    # the English two (a Done with no item gets the snippet in place of its "(none)")
    junky = re.sub(r"### Done\n(?:- \(none\)\n)?", "### Done\n" + snippet, captured.err)
    assert rescore(junky, seed=1, filler=3).split("\n")[-1].startswith("| total | 2 | notice 2 |")


async def test_a_scripted_model_is_scored_after_the_carry_over() -> None:
    session = build_sessions(seed=1, filler=2)[0]
    vague = (
        "## Goal\n- Fix the dashboard build and ship the CSV export\n"
        "## Constraints & Preferences\n- (none)\n## Progress\n### Done\n- (none)\n"
        "### In Progress\n- (none)\n### Blocked\n- (none)\n## Key Decisions\n- Use papaparse\n"
        "## Next Steps\n1. the next concrete action\n## Critical Context\n- (none)\n"
    )
    row = await evaluate(session, ScriptedTextModel([vague]), cap=6000)
    assert row.result.method == "llm"
    assert row.score["errors"] == (2, 2) and row.score["paths"] == (3, 3)
    assert row.score["constraints"] == (2, 2) and row.score["decisions"] == (1, 1)
    # the model lost it: the conversation's last stated plan is its next step (issue 21)
    assert row.score["next_steps"] == (1, 1)
    assert row.result.dropped_lines >= 2  # the template slot, the reasonless decision, (none)
    assert "| web-build | llm |" in format_table([row])
    assert score_summary(row.result.text, session.planted)["goal"] == (1, 1)


class _Handler(BaseHTTPRequestHandler):
    bodies: list[dict[str, object]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.bodies.append(body)
        self.send_response(200)
        if not body["stream"]:
            reply = {"choices": [{"message": {"content": "## Goal\nplain"}}]}
            data = json.dumps(reply).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in ("## Go", "al\n", "streamed"):
            chunk = {"choices": [{"delta": {"content": piece}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


async def test_the_openai_compatible_model_streams_with_progress(endpoint: str) -> None:
    _Handler.bodies.clear()
    model = OpenAICompatibleModel(endpoint, "qwen", context_size=4096)
    seen: list[int] = []
    reply = await model.complete("sys", "req", on_progress=seen.append)
    assert reply == "## Goal\nstreamed" and model.reports_progress
    assert seen == [5, 8, 16]
    plain = OpenAICompatibleModel(endpoint, "qwen", stream=False)
    assert await plain.complete("sys", "req") == "## Goal\nplain"
    assert not plain.reports_progress
    first = _Handler.bodies[0]
    assert first["model"] == "qwen" and first["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "req"},
    ]


def test_read_sse_ignores_comments_and_counts_reasoning_as_progress() -> None:
    seen: list[int] = []
    lines = [
        b": keep-alive\n",
        b'data: {"choices": [{"delta": {"reasoning_content": "hmm"}}]}\n',
        b'data: {"choices": [{"delta": {"content": "ok"}}]}\n',
        b"data: [DONE]\n",
        b'data: {"choices": [{"delta": {"content": "late"}}]}\n',
    ]
    assert read_sse(lines, seen.append) == "ok" and seen == [3, 5]
    stop = threading.Event()
    stop.set()
    with pytest.raises(StreamStopped):
        read_sse(lines, seen.append, stop)
