"""The prompt-cache benchmark's script and its measure, host-neutral (no AgentScope import:
it also runs in QwenPaw 1.1's venv, ``benchmarks/cache_qwenpaw.py``).

A session is a seeded list of user turns, each a few steps; a step is one model call that
asks for one tool call (70%) or two to four in parallel; each call's output is 200 B to
200 KB (log-uniform) of log lines. Every host gets the same script through its own agent and
a scripted model, and every model input of the agent is measured the same way: the request
as the model receives it (the tool schemas, then each formatted message, as JSON) in o200k
tokens, and its longest common prefix (LCP) with the previous input.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.corpus import tool_output
from copaw_context.core.tokens import make_token_counter

__all__ = [
    "RECENT_BYTES",
    "SUMMARY",
    "WINDOW",
    "Measured",
    "Script",
    "fresh_tokens",
    "make_script",
    "measure_inputs",
    "segments",
]

WINDOW = 65_536
RECENT_BYTES = 50_000
"""The recent limit (``pruning_recent_msg_max_bytes``'s default): the first bytes of a fresh
output the model is shown."""
_POOL_BYTES = 2_000_000

SUMMARY = "\n".join(
    [
        "## Goal",
        "- Keep the build green",
        "",
        "## Constraints & Preferences",
        "- Never modify vendor/ files",
        "",
        "## Progress",
        "### Done",
        "- [x] Reviewed the build logs",
        "### In Progress",
        "- [ ] Fixing the failing test",
        "### Blocked",
        "- (none)",
        "",
        "## Key Decisions",
        "- Read long outputs from their saved files",
        "",
        "## Next Steps",
        "1. Run the test suite",
        "",
        "## Critical Context",
        "- src/build/cache.py is where the cache key is computed",
    ]
)


@dataclass
class Script:
    """The turns of one session: per turn its request and its steps (each a tuple of the
    queries its parallel calls send); ``outputs`` maps a query to its tool output."""

    turns: list[tuple[str, list[tuple[str, ...]]]]
    outputs: dict[str, str]
    _turn: int = -1
    _step: int = 0

    @property
    def steps(self) -> int:
        return sum(len(steps) for _, steps in self.turns)

    def begin(self, turn: int) -> None:
        """The agent is about to get the request of ``turn``."""
        self._turn, self._step = turn, 0

    def next_action(self) -> tuple[str, ...] | None:
        """The queries of the current turn's next step (None: the turn's answer)."""
        steps = self.turns[self._turn][1]
        if self._step >= len(steps):
            return None
        self._step += 1
        return steps[self._step - 1]


def make_script(steps: int, seed: int = 11) -> Script:
    """A seeded session of about ``steps`` steps in turns of 4 to 14 steps."""
    rng = random.Random(seed)
    pool = tool_output(_POOL_BYTES, seed=seed)
    outputs: dict[str, str] = {}
    turns: list[tuple[str, list[tuple[str, ...]]]] = []
    made = 0
    while made < steps:
        count = min(rng.randint(4, 14), steps - made)
        turn: list[tuple[str, ...]] = []
        for _ in range(count):
            width = 1 if rng.random() < 0.7 else rng.randint(2, 4)
            queries = []
            for _ in range(width):
                query = f"q{len(outputs):04d}"
                size = int(math.exp(rng.uniform(math.log(200), math.log(200_000))))
                start = pool.find("\n", rng.randrange(0, len(pool) - size)) + 1
                outputs[query] = pool[start : start + size]
                queries.append(query)
            turn.append(tuple(queries))
        made += count
        turns.append((f"Turn {len(turns)}: check the build logs and fix what fails.", turn))
    return Script(turns, outputs)


def fresh_tokens(script: Script, recent_bytes: int = RECENT_BYTES) -> int:
    """o200k tokens of every output's first ``recent_bytes`` UTF-8 bytes (a character cut in
    two left out): a context manager that shows the model this much of each fresh output
    sends it once at least, never from a cache."""
    counter = make_token_counter("o200k_base")
    return sum(
        counter.count(output.encode("utf-8")[:recent_bytes].decode("utf-8", errors="ignore"))
        for output in script.outputs.values()
    )


def segments(tools: Any, formatted: Sequence[Any]) -> list[str]:
    """A model input as the model receives it: the tool schemas, then each message (JSON)."""
    return [
        json.dumps(tools or [], ensure_ascii=False, sort_keys=True),
        *(json.dumps(m, ensure_ascii=False, sort_keys=True, default=str) for m in formatted),
    ]


@dataclass
class Measured:
    """The figures of one host's session."""

    calls: int = 0
    input_tokens: int = 0
    reused_tokens: int = 0
    breaks: dict[str, int] = field(
        default_factory=lambda: {"re-cut": 0, "compaction": 0, "other": 0}
    )
    lost: dict[str, int] = field(default_factory=lambda: {"re-cut": 0, "compaction": 0, "other": 0})
    lost_in_cut: int = 0
    """Of the tokens re-cuts lost, those of the cut results themselves (their previous,
    longer text beyond the head they kept); the rest followed them (newer messages, unchanged,
    sent again). A result shown long and later cut shorter in place loses at least this much
    whenever it is cut: the re-cuts' floor."""
    largest_input: int = 0
    ceiling_tokens: int = 0
    """What no context manager can reuse less than: each input's new tokens (those beyond
    the previous input's length) are never in a cache."""

    first_sent: int = 0
    """Of the tokens not cached, those of texts no earlier input held (new messages, fresh
    tool results, a result's shorter cut, a new summary): sent once by any context manager
    that shows them. The rest of the tokens not cached were sent before and again after a
    break (``sent_again``)."""

    @property
    def sent_again(self) -> int:
        """Tokens not cached that an earlier input already held (sent again after a break)."""
        return max(0, self.uncached - self.first_sent)

    @property
    def uncached(self) -> int:
        """Input tokens not served from the cache (sum of input - LCP): what a provider bills
        at the full rate."""
        return self.input_tokens - self.reused_tokens

    @property
    def share(self) -> float:
        return self.reused_tokens / self.input_tokens if self.input_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "reused_tokens": self.reused_tokens,
            "share": self.share,
            "breaks": dict(self.breaks),
            "lost": dict(self.lost),
            "lost_in_cut": self.lost_in_cut,
            "uncached": self.uncached,
            "first_sent": self.first_sent,
            "sent_again": self.sent_again,
            "largest_input": self.largest_input,
            "ceiling": self.ceiling_tokens / self.input_tokens if self.input_tokens else 0.0,
        }


def _cause(old: list[str], new: list[str], first: int) -> str:
    """Why input ``new`` does not start with input ``old`` (``first``: the first segment that
    differs): a tool result of both cut shorter, a compaction (messages removed, or the
    summary after the system prompt changed), or something else."""
    if first < len(new) and first < len(old):
        try:
            before, now = json.loads(old[first]), json.loads(new[first])
        except ValueError:
            before = now = None
        if (
            isinstance(before, dict)
            and isinstance(now, dict)
            and before.get("role") == now.get("role") == "tool"
            and before.get("tool_call_id") == now.get("tool_call_id")
        ):
            return "re-cut"
    if len(new) < len(old) or first <= 2:
        return "compaction"
    return "other"


def measure_inputs(inputs: Sequence[list[str]]) -> Measured:
    """o200k LCP of each input with the previous one (segments are counted once each)."""
    counter = make_token_counter("o200k_base")
    counts: dict[str, int] = {}

    def tokens(text: str) -> int:
        if text not in counts:
            counts[text] = counter.count(text)
        return counts[text]

    figures = Measured()
    sent: set[str] = set()
    previous: list[str] = []
    previous_total = 0
    for current in inputs:
        total = sum(tokens(s) for s in current)
        first = next(
            (i for i, (a, b) in enumerate(zip(previous, current, strict=False)) if a != b),
            min(len(previous), len(current)),
        )
        reused = sum(tokens(s) for s in current[:first])
        head = 0
        if previous and first < min(len(previous), len(current)):
            common = os.path.commonprefix([previous[first], current[first]])
            head = counter.count(common) if common else 0
            reused += head
        if previous and (first < len(previous)):
            cause = _cause(previous, current, first)
            figures.breaks[cause] += 1
            figures.lost[cause] += max(0, previous_total - reused)
            if cause == "re-cut":
                changed = range(first, min(len(previous), len(current)))
                cut = sum(tokens(previous[i]) for i in changed if previous[i] != current[i])
                figures.lost_in_cut += max(0, cut - head)
        fresh = [s for s in dict.fromkeys(current[first:]) if s not in sent]
        first_sent = sum(tokens(s) for s in fresh)
        if fresh and fresh[0] == current[first] and first < len(previous):
            first_sent -= head  # a cut segment: its kept head was cached
        figures.first_sent += min(first_sent, total - min(reused, total))
        sent.update(current[first:])
        figures.calls += 1
        figures.input_tokens += total
        figures.reused_tokens += min(reused, total)
        figures.largest_input = max(figures.largest_input, total)
        figures.ceiling_tokens += min(previous_total, total) if previous else 0
        previous, previous_total = current, total
    return figures
