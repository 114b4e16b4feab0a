"""A summary says what is still open (issue 21 item 4): a shell call is named by its command,
a later clean run of the same command closes its earlier failure (in one compaction and
across compactions), the saved full text of a file's successful read is no fact, and a Rust
panic's message line is carried."""

from __future__ import annotations

import json

from copaw_context.core.summary import Summary, extract_facts, extractive_summary
from copaw_context.core.summary.errors import scan_errors
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

PYTEST_FAIL = (
    "tests/test_tax.py F\nE   KeyError: 'CH'\n"
    "FAILED tests/test_tax.py::test_swiss_rate - KeyError: 'CH'\n1 failed in 0.08s"
)
GO_FAIL = "--- FAIL: TestLRUEvict (0.00s)\n    lru_test.go:31: got 3 entries, want 2\nFAIL"


class _Session:
    def __init__(self) -> None:
        self.messages: list[TranscriptMessage] = []

    def run(self, command: str, output: str, *, failed: bool = False) -> None:
        call_id = f"c{len(self.messages)}"
        raw = json.dumps({"command": command})
        call = TranscriptPart("tool_call", raw, "shell", call_id)
        result = TranscriptPart("tool_result", output, "shell", call_id, failed)
        self.messages.append(TranscriptMessage("assistant", "bot", (call,)))
        self.messages.append(TranscriptMessage("user", "user", (result,)))

    def read(self, path: str, output: str) -> None:
        call_id = f"c{len(self.messages)}"
        call = TranscriptPart("tool_call", json.dumps({"file_path": path}), "cat", call_id)
        result = TranscriptPart("tool_result", output, "cat", call_id)
        self.messages.append(TranscriptMessage("assistant", "bot", (call,)))
        self.messages.append(TranscriptMessage("user", "user", (result,)))


def test_a_shell_call_is_named_by_its_command() -> None:
    session = _Session()
    session.run("pytest tests/test_tax.py", PYTEST_FAIL, failed=True)
    (outcome,) = extract_facts(session.messages).tool_outcomes
    assert outcome.startswith("shell(pytest tests/test_tax.py): error — ")


def test_a_clean_run_closes_the_earlier_failure_of_the_same_command() -> None:
    session = _Session()
    session.run("pytest tests/test_tax.py", PYTEST_FAIL, failed=True)
    session.run("go test ./internal/cache/", GO_FAIL, failed=True)
    session.run("pytest tests/test_tax.py", "4 passed in 0.07s")
    facts = extract_facts(session.messages)
    assert not [line for line in facts.error_lines if "KeyError" in line]
    assert "lru_test.go:31: got 3 entries, want 2" in facts.error_lines  # still open
    assert facts.passed == ("shell(pytest tests/test_tax.py)",)
    doc = Summary.parse(extractive_summary(session.messages))
    assert not [item for item in doc.blocked if "test_tax" in item]
    assert [item for item in doc.blocked if "go test ./internal/cache/" in item]
    assert [item for item in doc.done if "shell(pytest tests/test_tax.py): ok" in item]


def test_a_clean_run_closes_a_failure_an_earlier_compaction_carried() -> None:
    first = _Session()
    first.run("pytest tests/test_tax.py", PYTEST_FAIL, failed=True)
    first.run("go test ./internal/cache/", GO_FAIL, failed=True)
    previous = extractive_summary(first.messages)
    assert "shell(pytest tests/test_tax.py): error" in previous
    second = _Session()
    second.run("pytest tests/test_tax.py", "4 passed in 0.07s")
    doc = Summary.parse(extractive_summary(second.messages, previous_summary=previous))
    assert not [item for item in doc.blocked if "test_tax" in item]
    assert not [item for item in doc.critical if "test_swiss_rate" in item]
    assert [item for item in doc.blocked if "go test ./internal/cache/" in item]
    assert "lru_test.go:31: got 3 entries, want 2" in doc.text()


def test_a_run_that_still_shows_an_error_closes_nothing() -> None:
    session = _Session()
    session.run("go build ./...", "internal/metrics/export.go:57:14: undefined: evictOldest")
    session.run("go build ./...", "internal/metrics/export.go:57:14: undefined: evictOldest")
    facts = extract_facts(session.messages)
    assert "internal/metrics/export.go:57:14: undefined: evictOldest" in facts.error_lines
    assert facts.passed == ()


def test_the_saved_text_of_a_files_read_is_no_fact_and_a_failed_runs_is() -> None:
    session = _Session()
    notice = "<<<TRUNCATED>>> call `read_file` with file_path=/ws/tool_result/{}.txt"
    session.read("src/app.py", "1  import os\n" + notice.format("aaaa"))
    session.run("make", "error: planted\n" + notice.format("bbbb"), failed=True)
    paths = extract_facts(session.messages).file_paths
    assert "src/app.py" in paths and "/ws/tool_result/bbbb.txt" in paths
    assert "/ws/tool_result/aaaa.txt" not in paths


def test_a_rust_panic_message_is_an_error_line() -> None:
    output = (
        "thread 'parser::tests::parses_empty' panicked at src/parser.rs:88:9:\n"
        "called `Option::unwrap()` on a `None` value\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    )
    lines = [item.text for item in scan_errors(output)]
    assert "called `Option::unwrap()` on a `None` value" in lines
    assert not [line for line in lines if line.startswith("note:")]
