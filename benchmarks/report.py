"""Markdown tables, the targets check and the per-step plot of one benchmark run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.cache_script import RECENT_BYTES
from benchmarks.handler_split import handler_table, handler_worst_ratio
from benchmarks.measure import Figure
from benchmarks.recall import RecallRun, recall_table
from benchmarks.steps import StepRow, growth_exponent

__all__ = ["cache_table", "markdown", "plot_steps", "targets"]

MB = 1_000_000


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / MB:.2f}"


def _cut_table(figures: list[Figure]) -> list[str]:
    lines = [
        "| input | cut to 50 KB (median ms) | peak extra memory (MB) | naive encode-slice-decode "
        "(ms) | naive peak (MB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for f in figures:
        extra = f.extra or {}
        lines.append(
            f"| {f.label} | {f.median_ms:.3f} | {_mb(f.peak_bytes)} | "
            f"{extra.get('naive_ms', 0):.2f} | {_mb(extra.get('naive_peak'))} |"
        )
    return lines


def _simple_table(title: str, figures: list[Figure]) -> list[str]:
    lines = [f"| {title} | median ms | peak extra memory (MB) |", "|---|---:|---:|"]
    lines += [f"| {f.label} | {f.median_ms:.3f} | {_mb(f.peak_bytes)} |" for f in figures]
    return lines


def _step_table(rows: list[StepRow]) -> list[str]:
    lines = [
        "| N | counter | tokens | pre-reasoning ms/step | offload writes (mean/step) | "
        "step without writes | floor (count new content) | stage 1 | first step (cold) | "
        "AgentScope built-in ms/step |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        built = "-" if r.builtin_ms is None else f"{r.builtin_ms:.2f}"
        lines.append(
            f"| {r.n} | {_counter(r.counter)} | {r.tokens:,} | {r.pre_ms:.2f} | {r.io_ms:.2f} | "
            f"{r.cpu_ms:.2f} | {r.floor_ms:.3f} | {r.stage1_ms:.2f} | "
            f"{r.cold_ms:.1f} | {built} |"
        )
    return lines


def _compaction_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| N | counter | ours wall ms | ours CPU ms | ours model calls | built-in wall ms | "
        "built-in CPU ms | built-in model calls | messages after (ours, built-in) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in results["compaction"]["rows"]:
        ours, builtin = row["ours"], row["builtin"]
        lines.append(
            f"| {row['n']} | {_counter(row['counter'])} | {1000 * ours['wall_s']:,.0f} | "
            f"{1000 * ours['cpu_s']:,.0f} | {ours['calls']} | {1000 * builtin['wall_s']:,.0f} | "
            f"{1000 * builtin['cpu_s']:,.0f} | {builtin['calls']} | "
            f"{ours['messages'][1]}, {builtin['messages'][1]} |"
        )
    reasons = [
        f"- N={row['n']}, {_counter(row['counter'])}: {_calls(row['ours']['reasons'])}"
        for row in results["compaction"]["rows"]
        if row["ours"]["reasons"]
    ]
    if reasons:
        lines += ["", "Why ours made its compactor calls (the compaction event's list):", ""]
        lines += reasons
    return lines


def _profile_table(profile: dict[str, Any]) -> list[str]:
    """Where one compaction's CPU goes: own time per part of the code (cProfile, worker
    threads inline; ``profile-compaction.txt`` has the functions)."""
    shares = [(str(where), float(seconds)) for where, seconds in profile["shares"]]
    total = sum(seconds for _, seconds in shares) or 1.0
    lines = [
        f"## Where one compaction's CPU goes (N={profile['n']}, o200k, under cProfile)",
        "",
        "| part of the code | own CPU ms | share |",
        "|---|---:|---:|",
    ]
    for where, seconds in shares[:15]:
        lines.append(f"| {where} | {1000 * seconds:,.0f} | {seconds / total:.0%} |")
    rest = sum(seconds for _, seconds in shares[15:])
    if rest:
        lines.append(f"| the rest | {1000 * rest:,.0f} | {rest / total:.0%} |")
    return lines


def _calls(reasons: list[str]) -> str:
    """The first call's reason and how many stages and retries followed."""
    retries = sum(1 for why in reasons if why.startswith("retry"))
    stages = len(reasons) - retries
    return f"{reasons[0]}; {stages} stages, {retries} retries"


def _counter(name: str) -> str:
    return {"estimate": "bytes/4", "o200k_base": "o200k"}.get(name, name)


def _series(rows: list[StepRow], counter: str, key: str) -> list[tuple[int, float]]:
    out = []
    for r in rows:
        if r.counter != counter:
            continue
        value = {
            "pre": r.pre_ms,
            "cpu": r.cpu_ms,
            "floor": r.floor_ms,
            "builtin": r.builtin_ms,
        }[key]
        if value is not None:
            out.append((r.n, value))
    return out


def _exponents(rows: list[StepRow]) -> list[str]:
    lines = ["| series | growth exponent (log-log slope over N) |", "|---|---:|"]
    for counter in ("estimate", "o200k_base"):
        for key, label in (("pre", "pre-reasoning"), ("cpu", "pre-reasoning excl. writes")):
            points = _series(rows, counter, key)
            if len(points) > 1:
                lines.append(f"| {label}, {_counter(counter)} | {growth_exponent(points):.2f} |")
    builtin = _series(rows, "estimate", "builtin")
    if len(builtin) > 1:
        lines.append(f"| AgentScope built-in | {growth_exponent(builtin):.2f} |")
    return lines


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for every target this run measured."""
    out: list[tuple[str, str, bool | None]] = []
    cuts: list[Figure] = results.get("cut", [])
    if cuts:
        worst_ms = max(f.median_ms for f in cuts)
        worst_peak = max(f.peak_bytes or 0 for f in cuts)
        out.append(("cut <= 1 ms at any size", f"{worst_ms:.3f} ms worst", worst_ms <= 1.0))
        out.append(("cut <= 1 MB extra peak", f"{_mb(worst_peak)} MB worst", worst_peak <= MB))
    saves: list[Figure] = results.get("save", [])
    if saves:
        peak = max(f.peak_bytes or 0 for f in saves)
        out.append(("offload write: memory does not grow", f"{_mb(peak)} MB peak", peak <= 2 * MB))
    rows: list[StepRow] = results.get("steps", [])
    at = {(r.n, r.counter): r for r in rows}
    if (1000, "estimate") in at:
        r = at[(1000, "estimate")]
        out.append(("N=1000 bytes/4 <= 1.5 ms/step", f"{r.pre_ms:.2f} ms", r.pre_ms <= 1.5))
    if (1000, "o200k_base") in at:
        r = at[(1000, "o200k_base")]
        over = r.pre_ms - r.floor_ms
        out.append(("N=1000 o200k <= floor + 0.5 ms", f"floor + {over:.2f} ms", over <= 0.5))
    for counter in ("estimate", "o200k_base"):
        points = _series(rows, counter, "pre")
        if len(points) > 1:
            slope = growth_exponent(points)
            out.append(
                (f"growth exponent <= 0.2 ({_counter(counter)})", f"{slope:.2f}", slope <= 0.2)
            )
    recall: list[RecallRun] = results.get("recall", [])
    for run in recall:
        out.append(
            (f"recall@5 >= 0.9 (seed {run.seed})", f"{run.recall_at_5:.3f}", run.recall_at_5 >= 0.9)
        )
        out.append(
            (
                f"memory_search p95 <= 50 ms (seed {run.seed})",
                f"{run.p95_ms:.1f} ms",
                run.p95_ms <= 50,
            )
        )
    if (50, "estimate") in at and at[(50, "estimate")].builtin_ms is not None:
        r = at[(50, "estimate")]
        builtin_ms = r.builtin_ms or 0.0
        out.append(
            (
                "N=50 bytes/4 step no dearer than the built-in",
                f"{r.pre_ms:.2f} ms vs {builtin_ms:.2f} ms",
                r.pre_ms <= builtin_ms,
            )
        )
    handler = results.get("handler_split")
    if handler:
        ratio = handler_worst_ratio(handler)
        out.append(
            (
                f"AsMsgHandler split no slower than AgentScope's (N={handler['n']})",
                f"{ratio:.2f}x at its worst reserve",
                ratio <= 1.0,
            )
        )
    split = results.get("split")
    if split:
        worst = max(split["ms"].values())
        out.append((f"split <= 5 ms at N={split['n']}", f"{worst:.1f} ms worst", worst <= 5.0))
    compaction = results.get("compaction")
    for row in compaction["rows"] if compaction else ():
        if row["counter"] != "o200k_base":
            continue
        ours, builtin = row["ours"]["cpu_s"], row["builtin"]["cpu_s"]
        ratio = ours / builtin if builtin else float("inf")
        out.append(
            (
                f"compaction CPU <= 2x built-in (N={row['n']}, o200k)",
                f"{1000 * ours:.0f} ms vs {1000 * builtin:.0f} ms ({ratio:.1f}x)",
                ratio <= 2.0,
            )
        )
    cache = results.get("cache")
    if cache and cache.get("ours"):
        ours = cache["ours"]["share"]
        anchors = [cache[k]["share"] for k in ("builtin", "qwenpaw") if cache.get(k)]
        shown = " / ".join(f"{share:.1%}" for share in anchors)
        out.append(
            (
                "prompt-cache reuse >= 90%, above both anchors",
                f"{ours:.1%} (anchors {shown})",
                ours >= 0.9 and all(ours > share for share in anchors),
            )
        )
    return out


_CACHE_ROWS = (
    ("ours", "copaw-context (AgentScope 2.x middleware)"),
    ("builtin", "AgentScope 2.x built-in compression"),
    ("qwenpaw", "QwenPaw 1.1.12 light context manager"),
)


def cache_table(cache: dict[str, Any]) -> list[str]:
    """The prompt-cache section: reused share, breaks by cause, per context manager; then
    copaw-context with a smaller recent limit (the trade-off row)."""
    lines = [
        f"## Prompt-cache reuse ({cache['steps']} steps, {cache['window']:,}-token window, "
        "o200k LCP of consecutive model inputs)",
        "",
        "| context manager | model calls | reused | ceiling | not cached (tokens): first sent / "
        "sent again | breaks: "
        "re-cut / compaction / other | tokens lost: re-cut (in the cut results) / compaction "
        "/ other |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    small = cache.get("small_recent")
    rows = list(_CACHE_ROWS)
    if small is not None:
        label = f"copaw-context, pruning_recent_msg_max_bytes {small:,} (trade-off)"
        rows.append(("ours_small_recent", label))
    for key, label in rows:
        row = cache.get(key)
        if not row:
            lines.append(f"| {label} | n/a | n/a | n/a | n/a | n/a | n/a |")
            continue
        breaks, lost = row["breaks"], row["lost"]
        uncached = f"{row['uncached']:,}: {row['first_sent']:,} / {row['sent_again']:,}"
        in_cut = row.get("lost_in_cut")
        recut = f"{lost['re-cut']:,}" + ("" if in_cut is None else f" ({in_cut:,})")
        lines.append(
            f"| {label} | {row['calls']} | {row['share']:.1%} | {row['ceiling']:.1%} | "
            f"{uncached} | {breaks['re-cut']} / {breaks['compaction']} / {breaks['other']} | "
            f"{recut} / {lost['compaction']:,} / {lost['other']:,} |"
        )
    fresh, ours = cache.get("fresh_tokens"), cache.get("ours")
    if fresh and ours:
        most = ours["calls"] * cache["window"]
        lines += [
            "",
            f"The first {RECENT_BYTES:,} bytes of every tool output: {fresh:,} tokens, never "
            f"from a cache; over {ours['calls']} inputs of at most the window each ({most:,} "
            f"tokens), a context manager that shows them reuses at most {1 - fresh / most:.1%}.",
        ]
    if cache.get("ours", {}).get("engine_share") is not None:
        lines += [
            "",
            f"The engine's own figure for copaw-context (the `model_call` events, counted from "
            f"the ledger): {cache['ours']['engine_share']:.1%}.",
        ]
    return lines


def markdown(results: dict[str, Any], machine: str) -> str:
    """The whole run as Markdown."""
    lines = ["# copaw-context benchmark results", "", machine, ""]
    if results.get("cut"):
        lines += ["## Truncation: one output cut to 50 KB", "", *_cut_table(results["cut"]), ""]
    if results.get("save"):
        lines += ["## Offload write (file + directory fsync)", ""]
        lines += [*_simple_table("output", results["save"]), ""]
    if results.get("stage1"):
        lines += ["## Stage 1 (one fresh result, 30% Chinese)", ""]
        lines += [*_simple_table("output", results["stage1"]), ""]
    if results.get("steps"):
        lines += ["## Per step (medians)", "", *_step_table(results["steps"]), ""]
        lines += [*_exponents(results["steps"]), ""]
    if results.get("split"):
        split = results["split"]
        lines += [f"## Split planning at N={split['n']} (warm counts)", ""]
        lines += ["| reserve (tokens) | ms |", "|---:|---:|"]
        lines += [f"| {reserve:,} | {ms:.2f} |" for reserve, ms in split["ms"].items()]
        lines.append("")
    if results.get("handler_split"):
        lines += [*handler_table(results["handler_split"]), ""]
    if results.get("compaction"):
        lines += ["## One compaction (instant scripted model)", "", *_compaction_table(results)]
        lines.append("")
    if results.get("compaction_profile"):
        lines += [*_profile_table(results["compaction_profile"]), ""]
    if results.get("cache"):
        lines += [*cache_table(results["cache"]), ""]
    if results.get("recall"):
        lines += [*recall_table(results["recall"]), ""]
    if results.get("chain"):
        from benchmarks.chain import chain_table

        lines += ["## Chain of compactions", "", *chain_table(results["chain"]["runs"]), ""]
    checks = targets(results)
    if checks:
        lines += ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
        for name, value, met in checks:
            mark = "n/a" if met is None else ("yes" if met else "**no**")
            lines.append(f"| {name} | {value} | {mark} |")
        lines.append("")
    return "\n".join(lines)


def plot_steps(rows: list[StepRow], path: Path) -> None:
    """Per-step time against N (log-log), ours with both counters, the floor, the built-in."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    series = [
        ("estimate", "pre", "copaw-context, bytes/4", "-o"),
        ("estimate", "cpu", "copaw-context, bytes/4, excl. offload writes", "--o"),
        ("o200k_base", "pre", "copaw-context, o200k", "-s"),
        ("o200k_base", "floor", "floor: count the new content (o200k)", ":s"),
        ("estimate", "builtin", "AgentScope 2.0.11 built-in (bytes/4)", "-^"),
    ]
    for counter, key, label, style in series:
        points = _series(rows, counter, key)
        if points:
            axes.plot([n for n, _ in points], [t for _, t in points], style, label=label)
    axes.axhline(1.5, color="grey", linestyle="--", linewidth=1)
    axes.annotate("target 1.5 ms (bytes/4)", (50, 1.55), fontsize=7, color="grey")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("messages in the context (N)")
    axes.set_ylabel("median ms per step")
    axes.set_title("Pre-reasoning cost per step (128K window, no compaction in the step)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
