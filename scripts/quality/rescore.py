"""Score summaries another version of the package printed, with this version's checker.

    .venv/bin/python -m scripts.quality.run --extractive --show --seed 1 2> summaries.txt
    .venv/bin/python -m scripts.quality.rescore summaries.txt --seed 1

The file is what ``run --show`` prints to stderr (``## <session>`` then its summary). For
each session of that seed it prints the junk lines :func:`find_junk` finds, by reason, and
the summary's size as a share of the compacted input (estimated tokens), as ``run`` does:
the "before" figures of a change come from the old code's summaries scored the new way.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from copaw_context.core.summary import find_junk, render_transcript
from copaw_context.core.tokens import make_token_counter
from scripts.quality.score import score_summary, total
from scripts.quality.sessions import CATEGORIES, build_sessions

__all__ = ["main", "read_shown", "rescore"]


def read_shown(text: str, names: Sequence[str]) -> dict[str, str]:
    """Session name -> summary of the output of ``run --show``."""
    pattern = "|".join(re.escape(name) for name in names)
    parts = re.split(rf"(?m)^## ({pattern})\n", text)
    return {parts[i]: parts[i + 1].rstrip("\n") + "\n" for i in range(1, len(parts), 2)}


def rescore(text: str, seed: int = 1, filler: int = 6) -> str:
    """A Markdown table: per session its junk lines by reason, its ratio, its facts kept."""
    sessions = build_sessions(seed, filler)
    shown = read_shown(text, [s.name for s in sessions])
    counter = make_token_counter("estimate")
    lines = ["| session | junk | by reason | ratio | facts kept |", "|---|---|---|---|---|"]
    ratios: list[float] = []
    scores = []
    all_junk: Counter[str] = Counter()
    for session in sessions:
        if session.name not in shown:
            continue
        summary = shown[session.name]
        junk = Counter(line.reason for line in find_junk(summary, session.language))
        all_junk += junk
        ratio = counter.count(summary) / max(1, counter.count(render_transcript(session.messages)))
        ratios.append(ratio)
        score = score_summary(summary, session.planted, session.language)
        scores.append(score)
        kept = sum(k for k, _ in score.values())
        planted = sum(p for _, p in score.values())
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(junk.items())) or "-"
        cells = [session.name, str(sum(junk.values())), reasons, f"{ratio:.2f}"]
        lines.append("| " + " | ".join([*cells, f"{kept}/{planted}"]) + " |")
    sums = total(scores)
    kept = sum(sums[c][0] for c in CATEGORIES)
    planted = sum(sums[c][1] for c in CATEGORIES)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(all_junk.items())) or "-"
    median = statistics.median(ratios) if ratios else 0.0
    cells = ["total", str(sum(all_junk.values())), reasons, f"{median:.2f} (median)"]
    lines.append("| " + " | ".join([*cells, f"{kept}/{planted}"]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("summaries", type=Path, help="what run --show printed to stderr")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--filler", type=int, default=6)
    args = parser.parse_args(argv)
    print(rescore(args.summaries.read_text(encoding="utf-8"), args.seed, args.filler))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
