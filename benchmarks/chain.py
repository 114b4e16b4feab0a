"""Decay over chains of compactions (issue 21 item 4): which planted facts are still in the
summary after each automatic compaction of a long session.

Each seeded session (``benchmarks/chain_sessions.py``: EN and ZH, python/pytest, node/npm,
cargo, go) runs on a real AgentScope 2.x ``Agent`` with our middleware, driven by a scripted
model, in a small window, so that it compacts automatically 10 to 20 times. After each
compaction every fact that has left the context (no message holds its carrier) must be in
the summary: the goal, the constraints, the exact error lines of the tasks still open, the
files changed, the decisions with their reasons, the newest plan (under Next Steps) and each
closed task's passing run (under Done). A closed task's error still in the summary while a
fact of an open one is missing is a crowding (target: none).

The extractive compactor runs offline; ``compactor_url`` (an OpenAI-compatible server) runs
the LLM compactor instead, with that model.
"""

from __future__ import annotations

import asyncio
import statistics
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, InjectionConfig
from agentscope.message import Msg, UserMsg
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChoice, Toolkit

from benchmarks.chain_sessions import KINDS, Fact, Session, build_sessions
from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.events import ContextEvent
from copaw_context.core.summary import Summary, split_summary_message
from copaw_context.core.tokens import make_token_counter
from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step

__all__ = [
    "CHAIN_WINDOW",
    "Point",
    "SessionRun",
    "bench_chain",
    "chain_table",
    "run_session",
    "select_sessions",
]

CHAIN_WINDOW = 16_000
_TOOLS = ("cat", "shell", "write_file")


@dataclass
class Point:
    """One compaction of a session: per kind (kept, due), and what crowded."""

    number: int
    turn: int
    scores: dict[str, tuple[int, int]]
    missing: list[str]
    stale_errors: int  # errors of closed tasks still in the summary
    crowded: bool  # a stale error beside a missing open fact
    ratio: float  # summary tokens / (compacted messages + previous summary) tokens
    method: str


@dataclass
class SessionRun:
    """A session's compactions, in order."""

    name: str
    language: str
    points: list[Point] = field(default_factory=list)


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().replace("`", "").split())


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def kept(fact: Fact, summary: str, doc: Summary) -> bool:
    """Whether ``summary`` (``doc`` parsed) holds ``fact``: an error line or a path exactly
    (its own whitespace aside), the others as fragments in one line of their section."""
    if fact.kind in ("open_errors", "paths"):
        return fact.fragments[0].strip() in summary
    if fact.section:
        lines = [line for item in doc.items(fact.section) for line in item.split("\n")]  # type: ignore[arg-type]
    else:
        lines = summary.split("\n")
    wanted = [_norm(fragment) for fragment in fact.fragments]
    return any(all(w in _norm(line) for w in wanted) for line in lines)


def score(
    session: Session, summary: str, context: str, turn: int
) -> tuple[dict[str, tuple[int, int]], list[str], int, bool]:
    """Per kind (kept, due) at a compaction during ``turn`` with ``context`` (every text of
    the live messages) and ``summary``; the facts missed; stale errors; crowding."""
    doc = Summary.parse(summary, "zh" if session.language == "zh" else "en")
    scores = {kind: (0, 0) for kind in KINDS}
    missing: list[str] = []
    plans = [f for f in session.facts if f.kind == "next_steps" and f.turn <= turn]
    newest = max(plans, key=lambda f: f.turn) if plans else None
    stale = 0
    for fact in session.facts:
        if fact.turn >= turn or fact.carrier in context:
            if fact.kind == "open_errors" and fact.closed_at is not None and fact.closed_at < turn:
                stale += fact.fragments[0].strip() in summary
            continue  # not planted yet, or still in the context
        if fact.kind == "open_errors" and fact.closed_at is not None and fact.closed_at <= turn:
            stale += fact.closed_at < turn and fact.fragments[0].strip() in summary
            continue  # closed (or closing in this turn): no open error
        if fact.kind == "next_steps" and fact is not newest:
            continue  # an older plan: the newest one is what is next
        ok = kept(fact, summary, doc)
        got, due = scores[fact.kind]
        scores[fact.kind] = (got + ok, due + 1)
        if not ok:
            missing.append(f"{fact.kind}: {' / '.join(fact.fragments)}")
    open_missing = any(m.startswith(("open_errors", "constraints", "paths")) for m in missing)
    return scores, missing, stale, bool(stale and open_missing)


class _Model(ScriptedChatModel):
    """The agent's steps from the session's script; any other call (a memory summary, the
    compactor when it is the agent's own model) gets a short text."""

    def __init__(self, session: Session, window: int = CHAIN_WINDOW) -> None:
        super().__init__([], context_size=window, model_name="gpt-4o")
        self.steps: deque[Any] = deque()

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse:
        usage = ChatUsage(input_tokens=1, output_tokens=1, time=0.0)
        names = {t.get("function", {}).get("name") for t in tools or []}
        if "shell" not in names or not self.steps:
            return ChatResponse(content=text_step("ok"), is_last=True, usage=usage)
        step = self.steps.popleft()
        blocks = text_step(step) if isinstance(step, str) else tool_calls_step(*step)
        return ChatResponse(content=blocks, is_last=True, usage=usage)


def _toolkit(outputs: deque[str]) -> list[FunctionTool]:
    def cat(file_path: str) -> str:
        """Print a file.

        Args:
            file_path (`str`): The file.
        """
        return outputs.popleft()

    def shell(command: str) -> str:
        """Run a shell command.

        Args:
            command (`str`): The command.
        """
        return outputs.popleft()

    def write_file(file_path: str, content: str) -> str:
        """Write a file.

        Args:
            file_path (`str`): The file.
            content (`str`): Its new text.
        """
        return outputs.popleft()

    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="benchmark")
    return [FunctionTool(f, permission=allow) for f in (cat, shell, write_file)]  # type: ignore[arg-type]


async def run_session(
    session: Session,
    workspace: Path,
    compactor: ChatModelBase | None = None,
    window: int = CHAIN_WINDOW,
    *,
    max_compactions: int | None = None,
    log: Callable[[str], None] | None = None,
) -> SessionRun:
    """Run ``session`` and score the summary after each compaction (``compactor``: the LLM
    compactor's model; None: the extractive compactor). ``max_compactions``: the session
    stops after the turn in which it compacted that many times (a slow model's run);
    ``log`` gets one line per compaction: the facts kept per kind and the ones missing."""
    run = SessionRun(session.name, session.language)
    model = _Model(session, window)
    outputs = deque(session.outputs)
    # bytes/4 everywhere: the engine's counts, the events' tokens and the ratio's alike
    light = {"compactor": "extractive" if compactor is None else "llm", "token_counter": "estimate"}
    config = parse_running_config(
        {"running": {"max_input_length": window, "light_context_config": light}}
    )
    counter = make_token_counter("estimate")
    state: dict[str, Any] = {"turn": 0}
    agent: Agent | None = None

    def on_event(event: ContextEvent) -> None:
        if event.kind != "compaction" or agent is None:
            return
        text = split_summary_message(_summary(agent))
        live = "\n".join(s for msg in agent.state.context for s in _strings(msg.model_dump()))
        scores, missing, stale, crowded = score(session, text, live, state["turn"])
        tokens = counter.count(text)
        compacted = max(1, event.tokens_before - event.tokens_after + tokens)
        number = len(run.points) + 1
        point = Point(number, state["turn"], scores, missing, stale, crowded, 0.0, event.method)
        point.ratio = tokens / compacted
        run.points.append(point)
        if log is not None:
            log(_point_line(session.name, point))

    hook = MemoryCompactionHook(config, workspace, on_event=on_event, compactor_model=compactor)
    agent = Agent(
        name="assistant",
        system_prompt="You are a careful coding assistant.",
        model=model,
        toolkit=Toolkit(tools=[*await hook.list_tools(), *_toolkit(outputs)]),
        middlewares=[hook],
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    try:
        for number, turn in enumerate(session.turns):
            state["turn"] = number
            model.steps.extend(turn.steps)
            await agent.reply(UserMsg("user", turn.request))
            if max_compactions is not None and len(run.points) >= max_compactions:
                break
    finally:
        await hook.close()
    return run


def _point_line(name: str, point: Point) -> str:
    kinds = ", ".join(f"{k} {got}/{due}" for k, (got, due) in point.scores.items() if due)
    missing = "; ".join(point.missing) or "none"
    return (
        f"chain: {name} compaction {point.number} (turn {point.turn}, {point.method}, ratio "
        f"{point.ratio:.2f}): {kinds or 'nothing due'}; missing: {missing}"
    )


def _summary(agent: Agent) -> str:
    summary = agent.state.summary
    if isinstance(summary, str):
        return summary
    return "\n".join(getattr(block, "text", "") for block in summary)


def _sum(points: Iterable[Point]) -> dict[str, tuple[int, int]]:
    out = {kind: (0, 0) for kind in KINDS}
    for point in points:
        for kind, (got, due) in point.scores.items():
            out[kind] = (out[kind][0] + got, out[kind][1] + due)
    return out


def _cell(got: int, due: int) -> str:
    return f"{got}/{due} ({100 * got / due:.0f}%)" if due else "-"


def chain_table(runs: Sequence[SessionRun]) -> list[str]:
    """The Markdown tables: per session its compactions and the facts kept at its last one;
    the curve (all sessions, facts kept after the k-th compaction); EN and ZH at the last."""
    head = ["session", "compactions", *KINDS, "stale errors", "crowded", "ratio (median)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        last = run.points[-1] if run.points else None
        cells = [run.name, str(len(run.points))]
        cells += [_cell(*last.scores[k]) if last else "-" for k in KINDS]
        ratio = statistics.median(p.ratio for p in run.points) if run.points else 0.0
        cells += [str(last.stale_errors if last else 0)]
        cells += [str(sum(p.crowded for p in run.points)), f"{ratio:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| after compaction | sessions | " + " | ".join(KINDS) + " |"]
    lines.append("|" + "---|" * (len(KINDS) + 2))
    most = max((len(r.points) for r in runs), default=0)
    for k in range(1, most + 1):
        points = [r.points[k - 1] for r in runs if len(r.points) >= k]
        sums = _sum(points)
        lines.append(
            f"| {k} | {len(points)} | " + " | ".join(_cell(*sums[c]) for c in KINDS) + " |"
        )
    lines += ["", "| language | at the last compaction | " + " | ".join(KINDS) + " |"]
    lines.append("|" + "---|" * (len(KINDS) + 2))
    for language in ("en", "zh"):
        lasts = [r.points[-1] for r in runs if r.language == language and r.points]
        sums = _sum(lasts)
        lines.append(
            f"| {language} | {len(lasts)} sessions | "
            + " | ".join(_cell(*sums[c]) for c in KINDS)
            + " |"
        )
    ratios = [p.ratio for r in runs for p in r.points]
    if ratios:
        lines += [
            "",
            f"Median summary / compacted input: {statistics.median(ratios):.2f} "
            f"({len(ratios)} compactions; input: the compacted messages and the previous "
            "summary, tokens by bytes/4).",
        ]
    return lines


def bench_chain(
    root: Path,
    quick: bool,
    log: Callable[[str], None] = print,
    *,
    seed: int = 1,
    compactor: ChatModelBase | None = None,
    names: Sequence[str] | None = None,
    max_compactions: int | None = None,
    window: int = CHAIN_WINDOW,
) -> dict[str, Any]:
    """Every session of ``seed`` (quick: one per language; ``names``: only those, in that
    order), its compactions scored; ``max_compactions``: see :func:`run_session`;
    ``window``: the agent's window (a smaller one compacts more often, with less each time:
    a slow local model's run)."""
    sessions = select_sessions(build_sessions(seed), names)
    if quick and not names:
        sessions = sessions[:2]
    runs = []
    for session in sessions:
        log(f"chain: {session.name} ...")
        workspace = root / f"chain-{session.name}"
        run = run_session(
            session, workspace, compactor, window, max_compactions=max_compactions, log=log
        )
        runs.append(asyncio.run(run))
    return {
        "seed": seed,
        "window": window,
        "method": "extractive" if compactor is None else "llm",
        "max_compactions": max_compactions,
        "runs": runs,
    }


def select_sessions(sessions: Sequence[Session], names: Sequence[str] | None) -> list[Session]:
    """The sessions named in ``names`` (None or empty: all), in that order; an unknown name
    raises ValueError listing the known ones."""
    if not names:
        return list(sessions)
    by_name = {session.name: session for session in sessions}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        known = ", ".join(by_name)
        raise ValueError(f"unknown chain session(s) {', '.join(unknown)}; known: {known}")
    return [by_name[name] for name in names]
