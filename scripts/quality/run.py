"""Run the seeded sessions through the compactor and print the facts kept per category.

    .venv/bin/python -m scripts.quality.run --extractive
    .venv/bin/python -m scripts.quality.run --base-url http://127.0.0.1:8080/v1 --model qwen

Each session (two English, two Chinese, see :mod:`scripts.quality.sessions`) is compacted
once with no previous summary; the summary is scored for the planted goal, constraints,
paths, exact error lines, decisions with their reasons and next steps, its junk lines are
counted by the package's checker (``junk``) and its size is given as a share of the
compacted input (``ratio``, estimated tokens). ``--extractive`` needs no endpoint. Not a
test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from copaw_context.core.summary import (
    CompactorModel,
    CompactorResult,
    SummaryCompactor,
    find_junk,
    render_transcript,
)
from copaw_context.core.tokens import make_token_counter
from scripts.quality.openai_model import OpenAICompatibleModel
from scripts.quality.score import Score, score_summary, total
from scripts.quality.sessions import CATEGORIES, Session, build_sessions

__all__ = ["Row", "evaluate", "format_table", "main"]


@dataclass(frozen=True)
class Row:
    """One session's result: its summary's junk lines (counted by the package's checker,
    :func:`~copaw_context.core.summary.junk.find_junk`) and its size as a share of the
    compacted input (estimated tokens of the summary / of the rendered transcript)."""

    session: str
    result: CompactorResult
    seconds: float
    score: Score
    junk: int = 0
    ratio: float = 0.0


async def evaluate(
    session: Session,
    model: CompactorModel | None,
    *,
    cap: int = 6000,
    timeout_seconds: float = 120.0,
    retries: int = 1,
) -> Row:
    """Compact ``session`` with ``model`` (None: extractive) and score the summary."""
    compactor = SummaryCompactor(
        mode="extractive" if model is None else "llm",
        counter=make_token_counter("estimate"),
        language=session.language,
        timeout_seconds=timeout_seconds,
        retries=retries,
        max_summary_chars=cap,
    )
    started = time.monotonic()
    result = await compactor.summarise(session.messages, previous=None, model=model)
    seconds = time.monotonic() - started
    score = score_summary(result.text, session.planted, session.language)
    junk = len(find_junk(result.text, session.language))
    counter = make_token_counter("estimate")
    compacted = counter.count(render_transcript(session.messages))
    ratio = counter.count(result.text) / max(1, compacted)
    return Row(session.name, result, seconds, score, junk, ratio)


def _cell(kept: int, planted: int) -> str:
    return f"{kept}/{planted}"


def format_table(rows: Sequence[Row]) -> str:
    """The rows and their totals as a Markdown table."""
    head = ["session", "method", "s", "dropped", "junk", "ratio", *CATEGORIES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        method = row.result.method + (" (fallback)" if row.result.fallback_reason else "")
        cells = [row.session, method, f"{row.seconds:.1f}", str(row.result.dropped_lines)]
        cells += [str(row.junk), f"{row.ratio:.2f}"]
        cells += [_cell(*row.score[c]) for c in CATEGORIES]
        lines.append("| " + " | ".join(cells) + " |")
    sums = total(row.score for row in rows)
    dropped = sum(row.result.dropped_lines for row in rows)
    cells = ["total", "", f"{sum(r.seconds for r in rows):.1f}", str(dropped)]
    median = statistics.median(r.ratio for r in rows) if rows else 0.0
    cells += [str(sum(r.junk for r in rows)), f"{median:.2f} (median)"]
    lines.append("| " + " | ".join(cells + [_cell(*sums[c]) for c in CATEGORIES]) + " |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extractive", action="store_true", help="no model: offline summary")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. .../v1")
    parser.add_argument("--model", default="local", help="model name sent to the endpoint")
    parser.add_argument("--api-key", default="none")
    parser.add_argument("--context-size", type=int, default=8192)
    parser.add_argument("--timeout", type=float, default=120.0, help="compactor timeout (s)")
    parser.add_argument("--retries", type=int, default=1)
    parser.add_argument("--no-stream", action="store_true", help="no streaming, no progress")
    parser.add_argument("--max-summary-chars", type=int, default=6000, help="the budget cap")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--filler", type=int, default=6, help="seeded file reads per session")
    parser.add_argument("--language", choices=["en", "zh", "all"], default="all")
    parser.add_argument("--show", action="store_true", help="print each summary too")
    return parser


async def _run(args: argparse.Namespace) -> list[Row]:
    model: CompactorModel | None = None
    if not args.extractive:
        model = OpenAICompatibleModel(
            args.base_url,
            args.model,
            api_key=args.api_key,
            context_size=args.context_size,
            stream=not args.no_stream,
            max_tokens=args.max_summary_chars // 2,  # a longer reply is rejected anyway
        )
    rows = []
    for session in build_sessions(args.seed, args.filler):
        if args.language in ("all", session.language):
            row = await evaluate(
                session,
                model,
                cap=args.max_summary_chars,
                timeout_seconds=args.timeout,
                retries=args.retries,
            )
            rows.append(row)
            if args.show:
                print(f"## {session.name}\n{row.result.text}\n", file=sys.stderr)
            if row.result.fallback_reason:
                print(f"{session.name}: {row.result.fallback_reason}", file=sys.stderr)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.extractive and not args.base_url:
        _parser().error("give --base-url (and --model), or --extractive")
    print(format_table(asyncio.run(_run(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
