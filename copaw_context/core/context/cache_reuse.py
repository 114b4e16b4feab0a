"""The prompt-cache figure: how much of each model input is the previous input's prefix.

Providers serve the unchanged prefix of an input from a prompt cache (Anthropic, OpenAI,
DashScope, vLLM and llama.cpp prefix caches). For every model input this module counts the
tokens of its longest common prefix (LCP) with the previous input of the same agent, and
keeps the session's sums: the reused share is ``sum LCP / sum input tokens``.

An input is compared in the order a request carries it: the tool schemas, the system prompt,
the summary, then the context messages. Each message is keyed by what the ledger already
holds (its id and part count, its bytes and tokens), and the keys, the running token sums
and the part counts of the previous input are kept: only the messages from the first one the
ledger changed since then (``Ledger.take_first_change``) are keyed again and compared, and
the tokens up to the first message that differs come from the running sums. Inside that
message the parts that stayed the same (tokens and bytes) are summed; of the first changed
part, when it was cut shorter in place (a stage-2 re-cut keeps the head of the same text),
the excerpt before our notice is tokenised. So a call costs the keys and part counts of the
new or changed messages and at most one view, never a walk over the whole context.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import accumulate, compress, count
from operator import attrgetter, ne

from copaw_context.core.context.ledger import Ledger
from copaw_context.core.host.protocol import FixedParts, HostSession
from copaw_context.core.tokens.meter import MESSAGE_OVERHEAD_TOKENS, TokenMeter
from copaw_context.core.toolresults.notice import find_notice

__all__ = ["PrefixReuse", "describe_reuse", "observe_input", "session_reuse"]

_SCRATCH_KEY = "copaw_context.cache_reuse"
_STATE_KEY = "cache_reuse"
_key = attrgetter("fingerprint", "nbytes", "tokens")
_part_key = attrgetter("tokens", "nbytes")
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


@dataclass(slots=True)
class _Previous:
    """The previous input of one agent (in ``host.scratch``: never saved)."""

    fixed: tuple[tuple[int, str], ...] = ()
    keys: list[tuple[object, ...]] = field(default_factory=list)
    parts: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    prefix: list[int] = field(default_factory=lambda: [0])
    """``prefix[i]``: the tokens of the first ``i`` messages."""
    ledger: Ledger | None = None
    """The ledger the keys were taken from (another one: every key is taken again)."""


def _previous(host: HostSession) -> _Previous:
    previous = host.scratch.get(_SCRATCH_KEY)
    if not isinstance(previous, _Previous):
        previous = host.scratch[_SCRATCH_KEY] = _Previous()
    return previous


def _kept_head(host: HostSession, index: int, part: int, meter: TokenMeter) -> int:
    """Tokens of what a part cut shorter in place still shares with its earlier text: the
    excerpt before our ``<<<TRUNCATED>>>`` notice (a cut keeps the head of the same text)."""
    view = host.view(index, part)
    if not view.parts:
        return 0
    part_view = view.parts[0]
    texts = [p for p in part_view.output if isinstance(p, str)]
    found = find_notice(texts[-1]) if texts else None
    if found is None or not part_view.text.endswith(texts[-1]):
        return 0
    notice = len(texts[-1]) - found[0]  # the view ends with the output's last text part
    return meter.text(part_view.text[: len(part_view.text) - notice])[0]


def _in_message(
    host: HostSession,
    index: int,
    old: tuple[tuple[int, int], ...],
    new: tuple[tuple[int, int], ...],
    meter: TokenMeter,
) -> int:
    """Tokens the two versions of message ``index`` share: the parts that stayed the same,
    and the kept head of the first one, if it was cut shorter."""
    reused = MESSAGE_OVERHEAD_TOKENS
    for part, (before, now) in enumerate(zip(old, new, strict=False)):
        if before == now:
            reused += now[0]
            continue
        if now[1] < before[1]:
            reused += _kept_head(host, index, part, meter)
        return reused
    return reused


def _lcp(
    host: HostSession,
    previous: _Previous,
    fixed: tuple[tuple[int, str], ...],
    keys: list[tuple[object, ...]],
    prefix: list[int],
    unchanged: int,
    ledger: Ledger,
    meter: TokenMeter,
) -> int:
    """Tokens of the current input's common prefix with the previous one (``keys`` and
    ``prefix``: this input's; its first ``unchanged`` messages are the previous input's)."""
    if not previous.fixed:
        return 0  # no previous input (a new session, or the first call of this process)
    reused = 0
    for (tokens, text), (_, before) in zip(fixed, previous.fixed, strict=True):
        if text != before:
            common = os.path.commonprefix([before, text])
            return reused + (meter.text(common)[0] if common else 0)
        reused += tokens
    old, low = previous.keys, min(unchanged, len(keys), len(previous.keys))
    differs = map(ne, keys[low:], old[low:])
    first = low + next(compress(count(), differs), min(len(keys), len(old)) - low)
    reused += prefix[first]
    if first < len(keys) and first < len(old):
        new = tuple(map(_part_key, ledger.messages[first].parts))
        reused += _in_message(host, first, previous.parts[first], new, meter)
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
    remember this input for the next call. Only messages from the first the ledger changed
    since the previous call are looked at (their keys and part counts); a view only of a
    part cut shorter in the first message that differs."""
    previous = _previous(host)
    messages = ledger.messages
    low = ledger.take_first_change() if previous.ledger is ledger else 0
    low = min(low, len(previous.keys), len(previous.prefix) - 1)
    keys = previous.keys[:low]
    keys.extend(map(_key, messages[low:]))
    prefix = previous.prefix[: low + 1]
    prefix.extend(accumulate(map(_tokens, messages[low:]), initial=prefix[-1]))
    del prefix[low + 1]  # accumulate repeats its initial value
    texts = (fixed.tool_schemas, fixed.system_prompt, fixed.summary_message)
    parts = tuple(zip(fixed_tokens, texts, strict=True))
    reused = _lcp(host, previous, parts, keys, prefix, low, ledger, meter)
    reused = min(reused, input_tokens)
    kept = previous.parts[:low]
    kept.extend(tuple(map(_part_key, entry.parts)) for entry in messages[low:])
    previous.fixed, previous.keys, previous.parts = parts, keys, kept
    previous.prefix, previous.ledger = prefix, ledger
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
