"""Summary texts for tests, host-neutral (no AgentScope import: both majors use them)."""

from __future__ import annotations

__all__ = ["PREVIOUS_SUMMARY", "six_section_summary"]

PREVIOUS_SUMMARY = """## Goal
- Ship the parser fix for ticket PARSE-17

## Constraints & Preferences
- Never modify vendor/ files

## Progress
### Done
- [x] Reproduced the crash in src/parser.c
### In Progress
- [ ] Writing the regression test
### Blocked
- None

## Key Decisions
- Keep the public API unchanged

## Next Steps
1. Run the full test suite

## Critical Context
- /repo/src/parser.c:412 is where tok is undeclared"""


def six_section_summary(done_lines: int) -> str:
    """A valid six-section summary of about ``done_lines`` x 58 characters."""
    done = [
        f"- [x] Finished step {i:05d}: updated src/module_{i % 97:02d}/parser.py"
        for i in range(done_lines)
    ]
    return "\n".join(
        [
            "## Goal",
            "- Ship the parser fix for ticket PARSE-17",
            "",
            "## Constraints & Preferences",
            "- Never modify vendor/ files",
            "",
            "## Progress",
            "### Done",
            *done,
            "### In Progress",
            "- [ ] Writing the regression test",
            "### Blocked",
            "- (none)",
            "",
            "## Key Decisions",
            "- Keep the public API unchanged",
            "",
            "## Next Steps",
            "1. Run the full test suite",
            "",
            "## Critical Context",
            "- /repo/src/parser.c:412 is where tok is undeclared",
        ]
    )
