"""The prompt-cache figure: how much of each model input is the previous input's prefix.

Providers serve the unchanged prefix of an input from a prompt cache (Anthropic, OpenAI,
DashScope, vLLM and llama.cpp prefix caches). For every model input this module counts the
tokens of its longest common prefix (LCP) with the previous input of the same agent, and
keeps the session's sums: the reused share is ``sum LCP / sum input tokens``.

An input is compared in the order a request carries it: the tool schemas, the system prompt,
the summary, then the context messages. Each message is keyed by what the ledger already
holds (its id and part count, its bytes and tokens): the keys of two inputs are compared in C
(a tuple comparison per message, as the ledger's look at the part objects), and tokens come
from the ledger's counts up to the first message that differs. Inside that message the parts
that stayed the same are summed and only the common prefix of the first changed part's text
is tokenised (of its head: :data:`HEAD_CHARS`). So a call costs a comparison per message and
the new or changed messages' views, never a count of the whole context.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, ne

from copaw_context.core.context.ledger import Ledger, MessageEntry
from copaw_context.core.host.protocol import FixedParts, HostSession
from copaw_context.core.tokens.meter import MESSAGE_OVERHEAD_TOKENS, TokenMeter

__all__ = ["HEAD_CHARS", "PrefixReuse", "describe_reuse", "observe_input", "session_reuse"]

HEAD_CHARS = 8192
"""Characters of each part's text kept to count a common prefix inside a changed part."""

_SCRATCH_KEY = "copaw_context.cache_reuse"
_STATE_KEY = "cache_reuse"
_key = attrgetter("fingerprint", "nbytes", "tokens")
_tokens = attrgetter("tokens")


@dataclass(frozen=True, slots=True)
class PrefixReuse:
    """One model input against the previous one, and the session's sums so far."""

    reused_tokens: int
    """Tokens of this input's longest common prefix with the previous input."""
    input_tokens: int
    """Tokens of this input (our count)."""
    session_reused_tokens: int
    session_input_tokens: int
    calls: int

    @property
    def session_share(self) -> float:
        """The session's reused share: sum LCP / sum input tokens (0.0 before any call)."""
        if not self.session_input_tokens:
            return 0.0
        return self.session_reused_tokens / self.session_input_tokens


@dataclass(frozen=True, slots=True)
class _Part:
    """What a later input's part is compared with: its tokens, length, hash and head."""

    tokens: int
    length: int
    digest: int
    head: str

    @classmethod
    def of(cls, tokens: int, text: str) -> _Part:
        return cls(tokens, len(text), hash(text), text[:HEAD_CHARS])

    def same(self, other: _Part) -> bool:
        return (self.length, self.digest, self.tokens) == (other.length, other.digest, other.tokens)


@dataclass(slots=True)
class _Previous:
    """The previous input of one agent (in ``host.scratch``: never saved)."""

    fixed: tuple[_Part, ...] = ()
    keys: list[tuple[object, ...]] = field(default_factory=list)
    parts: list[tuple[_Part, ...]] = field(default_factory=list)


def _previous(host: HostSession) -> _Previous:
    previous = host.scratch.get(_SCRATCH_KEY)
    if not isinstance(previous, _Previous):
        previous = host.scratch[_SCRATCH_KEY] = _Previous()
    return previous


def _message_parts(host: HostSession, index: int, entry: MessageEntry) -> tuple[_Part, ...]:
    view = host.view(index, 0)
    tokens = [part.tokens for part in entry.parts]
    if len(tokens) != len(view.parts):
        tokens = [entry.tokens] + [0] * (len(view.parts) - 1)
    return tuple(
        _Part.of(count, part.text if part.sent else "")
        for count, part in zip(tokens, view.parts, strict=False)
    )


def _common(old: Sequence[_Part], new: Sequence[_Part], meter: TokenMeter) -> int:
    """Tokens of the parts two versions of a segment share, and of the common prefix of the
    first part that differs."""
    reused = 0
    for before, now in zip(old, new, strict=False):
        if before.same(now):
            reused += now.tokens
            continue
        prefix = os.path.commonprefix([before.head, now.head])
        return reused + (meter.text(prefix)[0] if prefix else 0)
    return reused


def _fixed(fixed: FixedParts, report_tokens: Sequence[int]) -> tuple[_Part, ...]:
    texts = (fixed.tool_schemas, fixed.system_prompt, fixed.summary_message)
    return tuple(_Part.of(tokens, text) for tokens, text in zip(report_tokens, texts, strict=True))


def _lcp(
    previous: _Previous,
    fixed: tuple[_Part, ...],
    keys: list[tuple[object, ...]],
    messages: Sequence[MessageEntry],
    current_parts: dict[int, tuple[_Part, ...]],
    meter: TokenMeter,
) -> int:
    """Tokens of the current input's common prefix with the previous one."""
    if not previous.fixed:
        return 0  # no previous input (a new session, or the first call of this process)
    for position, (before, now) in enumerate(zip(previous.fixed, fixed, strict=True)):
        if not before.same(now):
            return sum(p.tokens for p in fixed[:position]) + _common([before], [now], meter)
    reused = sum(part.tokens for part in fixed)
    old = previous.keys
    first = next(compress(range(len(keys)), map(ne, keys, old)), min(len(keys), len(old)))
    reused += sum(map(_tokens, messages[:first]))
    if first < len(keys) and first < len(old):
        common = _common(previous.parts[first], current_parts[first], meter)
        if common:
            reused += MESSAGE_OVERHEAD_TOKENS + common
    return reused


def observe_input(
    host: HostSession,
    ledger: Ledger,
    meter: TokenMeter,
    fixed: FixedParts,
    fixed_tokens: tuple[int, int, int],
    input_tokens: int,
) -> PrefixReuse:
    """Compare the input about to be sent (the ledger in sync with it, ``fixed`` its fixed
    parts; ``fixed_tokens``: the tokens of its tool schemas, system prompt and summary) with
    the previous one, add the figure to the session's sums (saved with the session) and
    remember this input for the next call."""
    previous = _previous(host)
    messages = ledger.messages
    keys = list(map(_key, messages))
    old = previous.keys
    changed = list(compress(range(min(len(keys), len(old))), map(ne, keys, old)))
    current = {index: _message_parts(host, index, messages[index]) for index in changed}
    for index in range(len(old), len(keys)):
        current[index] = _message_parts(host, index, messages[index])
    parts = _fixed(fixed, fixed_tokens)
    reused = min(_lcp(previous, parts, keys, messages, current, meter), input_tokens)
    kept = previous.parts[: len(keys)]
    kept.extend(() for _ in range(len(keys) - len(kept)))
    for index, value in current.items():
        kept[index] = value
    previous.fixed, previous.keys, previous.parts = parts, keys, kept
    return _add(host, reused, input_tokens)


def _add(host: HostSession, reused: int, tokens: int) -> PrefixReuse:
    sums = host.state.get(_STATE_KEY)
    if not isinstance(sums, dict) or sums.get("session") != host.session_id:
        sums = {"session": host.session_id, "reused": 0, "tokens": 0, "calls": 0}
    sums = {
        **sums,
        "reused": int(sums.get("reused", 0)) + reused,
        "tokens": int(sums.get("tokens", 0)) + tokens,
        "calls": int(sums.get("calls", 0)) + 1,
        "last_reused": reused,
        "last_tokens": tokens,
    }
    host.state[_STATE_KEY] = sums
    return PrefixReuse(reused, tokens, sums["reused"], sums["tokens"], sums["calls"])


def session_reuse(host: HostSession) -> PrefixReuse | None:
    """The session's figure as saved (None before its first model call)."""
    sums = host.state.get(_STATE_KEY)
    if not isinstance(sums, dict) or sums.get("session") != host.session_id:
        return None
    try:
        return PrefixReuse(
            int(sums["last_reused"]),
            int(sums["last_tokens"]),
            int(sums["reused"]),
            int(sums["tokens"]),
            int(sums["calls"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def describe_reuse(reuse: PrefixReuse | None) -> str:
    """The ``/context`` line of the prompt-cache figure."""
    if reuse is None:
        return "- Prompt-cache reuse: no model call in this session yet"
    return (
        f"- Prompt-cache reuse: last call {reuse.reused_tokens} of {reuse.input_tokens} tokens "
        f"were the previous input's prefix; session {reuse.session_share:.1%} "
        f"({reuse.session_reused_tokens} of {reuse.session_input_tokens} tokens, "
        f"{reuse.calls} calls)"
    )
