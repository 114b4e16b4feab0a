"""The cheap checks in front of fact extraction's patterns never lose a fact."""

from __future__ import annotations

from copaw_context.core.summary import extract_facts
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart


def _paths_of(output: str) -> tuple[str, ...]:
    result = TranscriptPart("tool_result", output, "shell", "c1")
    return extract_facts([TranscriptMessage("user", "user", (result,))]).file_paths


def test_offloaded_file_paths_in_any_case_and_quoting() -> None:
    assert _paths_of("Full output SAVED TO /var/tmp/run-7/out.log (2 MB)") == (
        "/var/tmp/run-7/out.log",
    )
    assert _paths_of("Saved in the file `~/reports/q3.csv`") == ("~/reports/q3.csv",)
    assert _paths_of('cut; file_path="/srv/tool result/a b.txt" start_line=40') == (
        "/srv/tool result/a b.txt",
    )


def test_output_without_a_saved_file_has_no_paths() -> None:
    log = "\n".join(f"0000{i} INFO [02] build step {i} saved" for i in range(50))
    assert _paths_of(log) == ()
