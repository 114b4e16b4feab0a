"""What counts as a chat command, and the reply shape of ``/compact`` (the reference's)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMMANDS", "ChatCommand", "format_compact_reply", "parse_command"]

COMMANDS = ("compact", "context", "clear", "new", "history", "dump_history", "load_history")
_MAX_NOTE_CHARS = 2000


@dataclass(frozen=True)
class ChatCommand:
    """A recognised command and its argument text."""

    name: str
    argument: str = ""


def parse_command(text: str | None) -> ChatCommand | None:
    """The command in a user message's text, or None when it is ordinary input.

    Only a text that starts with ``/<known command>`` counts, so a path such as
    ``/etc/hosts`` typed by the user is never taken for a command.
    """
    text = (text or "").strip()
    if not text.startswith("/"):
        return None
    head, _, rest = text[1:].partition(" ")
    name = head.strip().lower()
    if name not in COMMANDS:
        return None
    return ChatCommand(name, rest.strip()[:_MAX_NOTE_CHARS])


def format_compact_reply(
    *,
    compacted: int,
    tokens_before: int,
    tokens_after: int,
    window: int,
    summary: str,
    fallback_reason: str | None,
) -> str:
    """The reply to a successful ``/compact``."""

    def pct(tokens: int) -> str:
        return f"{tokens}/{window} ({100 * tokens / max(1, window):.1f}%)"

    lines = [
        "**Compact Complete!**",
        "",
        f"- Messages compacted: {compacted}",
        f"- Tokens: {pct(tokens_before)} -> {pct(tokens_after)}",
    ]
    if fallback_reason:
        lines.append(
            f"- The model summary failed ({fallback_reason}); an extractive summary was used"
        )
    lines += ["", "**Compressed Summary:**", summary]
    return "\n".join(lines)
