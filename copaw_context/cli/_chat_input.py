"""What ``copaw-context chat`` answers itself: unknown commands and model errors."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from copaw_context.core.commands import COMMANDS, parse_command

__all__ = ["KNOWN_COMMANDS", "Endpoint", "unknown_command_reply"]

KNOWN_COMMANDS = (
    "/compact [note]",
    "/context",
    "/clear",
    "/new",
    "/history",
    "/dump_history [path]",
    "/load_history path",
    "/help",
    "/exit",
)
_LOCAL = ("help", "exit", "quit")
_NAME = re.compile(r"/[A-Za-z][A-Za-z0-9_-]*")


def unknown_command_reply(text: str) -> str | None:
    """The local answer to a line that looks like a command but is none (``None``: not so).

    ``/foo`` alone, or a near miss of a command with an argument (``/compat keep the
    numbers``), is answered here; text that only starts with ``/``, such as a path
    (``/etc/hosts is empty``), goes to the model as usual. ``/help`` lists the commands.
    """
    if parse_command(text) is not None:
        return None
    head, _, rest = text.strip().partition(" ")
    if not _NAME.fullmatch(head):
        return None
    name = head[1:].lower()
    if name == "help":
        return f"commands: {', '.join(KNOWN_COMMANDS)}; anything else goes to the model."
    if name in ("exit", "quit"):
        return f"/{name} takes no argument; type /{name} alone to quit."
    close = difflib.get_close_matches(name, [*COMMANDS, *_LOCAL], n=1, cutoff=0.75)
    if rest.strip() and not close:
        return None  # e.g. "/tmp is full": a sentence, not a command
    hint = f"; did you mean /{close[0]}?" if close else ""
    return (
        f"unknown command {head}{hint} Known: {', '.join(KNOWN_COMMANDS)}. "
        "To ask the model about it, put a word before it."
    )


@dataclass(frozen=True)
class Endpoint:
    """The model endpoint of the chat, to say how to fix a failed request."""

    provider: str = "openai"
    base_url: str | None = None
    api_key_env: str | None = None

    def explain(self, error: BaseException) -> str:
        """One line: what failed and how to fix it; the chat goes on."""
        kind = type(error).__name__
        detail = " ".join(str(error).split())[:300] or kind
        env = self.api_key_env or (
            "DASHSCOPE_API_KEY" if self.provider == "dashscope" else "OPENAI_API_KEY"
        )
        where = self.base_url or f"the {self.provider} endpoint"
        lowered = kind.lower()
        if "connection" in lowered:
            fix = f"could not reach {where}; check --base-url and that the server is running"
        elif "timeout" in lowered:
            fix = f"{where} did not answer in time; try again"
        elif "authentication" in lowered or "permission" in lowered:
            fix = f"the API key was refused; check ${env} (or --api-key-env)"
        elif "notfound" in lowered:
            fix = "the model or endpoint was not found; check --model and --base-url"
        elif "ratelimit" in lowered:
            fix = "rate limited; wait a moment and send the message again"
        else:
            fix = "the model request failed; send the message again or check the settings"
        return (
            f"{fix} ({kind}: {detail}). Your message was not answered; the chat goes on "
            "(/exit quits)."
        )
