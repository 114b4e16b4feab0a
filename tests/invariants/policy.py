"""A scripted assistant for long sessions that reads only what a provider receives.

``SessionPolicy`` is a step for the scripted model of either major: it looks at the
formatted OpenAI chat-completions messages of each call (the same on both hosts), calls a few
tools per user turn (two at once every third turn), follows one truncation notice with
``read_file``, then answers; a call without tools (the compactor) gets a six-section
summary. Every call with tools is handed to ``on_call`` first, for the invariant checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, text_step, tool_calls_step
from tests.reliability.drivers import formatted_text
from tests.summaries import PREVIOUS_SUMMARY

__all__ = ["SessionPolicy", "session_tools", "user_turns"]

_CALLS_PER_TURN = 3


def user_turns(count: int) -> list[str]:
    """Distinct user requests (each names its turn, so the policy can tell them apart)."""
    return [
        f"Turn {n}: build target t{n}, search the logs and fetch the page. Never touch prod."
        for n in range(count)
    ]


def session_tools() -> list[Callable[..., str]]:
    """Tools whose outputs are large enough to be cut and compacted."""

    def run_build(target: str) -> str:
        """Run a build.

        Args:
            target (`str`): The make target.
        """
        return f"building {target}\n" + "".join(f"cc -c src/f{i}.c\n" for i in range(250))

    def search_logs(query: str) -> str:
        """Search the logs.

        Args:
            query (`str`): What to look for.
        """
        return "".join(f"2026-12-01 worker-{i} {query} retry {i}\n" for i in range(120))

    def fetch_page(url: str) -> str:
        """Fetch a web page.

        Args:
            url (`str`): The page.
        """
        return f"<h1>{url}</h1>\n" + "".join(f"<p>cache key k{i} = {i}</p>\n" for i in range(900))

    return [run_build, search_logs, fetch_page]


class SessionPolicy:
    """Plays the assistant (see the module docstring)."""

    def __init__(self, on_call: Callable[[ModelCall, str], None]) -> None:
        self.on_call = on_call
        self.request = ""
        self.steps = 0
        self.turn = 0
        self.read_notice = False
        self.compactor_calls = 0

    def _latest_request(self, call: ModelCall) -> str:
        for message in reversed(call.formatted):
            text = formatted_text(message)
            if message.get("role") == "user" and text.startswith("Turn "):
                return text
        return ""

    def __call__(self, call: ModelCall) -> list[Any]:
        if not call.tools:
            self.compactor_calls += 1
            return text_step(PREVIOUS_SUMMARY)
        request = self._latest_request(call)
        self.on_call(call, request)
        if request != self.request:
            self.request, self.steps, self.read_notice = request, 0, False
            self.turn += 1
        self.steps += 1
        last = call.formatted[-1]
        is_result = last.get("role") == "tool"
        notice = parse_truncation_notice(formatted_text(last)) if is_result else None
        if notice is not None and notice[1].file_path and not self.read_notice:
            self.read_notice = True
            args = {"file_path": notice[1].file_path, "start_line": notice[1].next_line}
            return tool_calls_step(("read_file", args))
        if self.steps > _CALLS_PER_TURN + 1:
            return text_step(f"Turn {self.turn} is done.")
        n = self.turn
        if self.steps == 1 and n % 3 == 0:
            return tool_calls_step(
                ("run_build", {"target": f"t{n}"}), ("search_logs", {"query": f"q{n}"})
            )
        calls = [
            ("run_build", {"target": f"t{n}"}),
            ("search_logs", {"query": f"q{n}"}),
            ("fetch_page", {"url": f"https://docs.example.com/p{n}.html"}),
        ]
        return tool_calls_step(calls[(self.steps - 1) % len(calls)])
