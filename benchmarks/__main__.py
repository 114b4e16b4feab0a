"""Run the benchmarks: ``python -m benchmarks [--quick] [--only PART ...]``.

Prints a Markdown report and writes it, with the raw figures (JSON), the per-step plot and a
profile of a step, to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.cache import bench_cache
from benchmarks.chain import CHAIN_WINDOW, bench_chain, chain_table
from benchmarks.compaction import bench_compaction
from benchmarks.handler_split import handler_split_ms
from benchmarks.profile import profile_compaction, profile_steps
from benchmarks.recall import bench_recall, recall_table
from benchmarks.report import cache_table, markdown, plot_steps
from benchmarks.steps import bench_steps, split_ms
from benchmarks.store import bench_store, store_table
from benchmarks.truncation import bench_cut, bench_save, bench_stage1

__all__ = ["main"]

PARTS = (
    "cut",
    "save",
    "stage1",
    "steps",
    "split",
    "compaction",
    "profile",
    "cache",
    "recall",
    "chain",
    "store",
)
# Asked for by name: the chain of compactions (3 minutes; --only chain) and the store's costs
# against a PostgreSQL started for the run (4 minutes; --only store).
DEFAULT_PARTS = PARTS[:-2]
RESULTS = Path(__file__).resolve().parent / "results"


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    with_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                with_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"Machine: {with_model or cpu}, {os.cpu_count()} CPU cores, Python "
        f"{platform.python_version()}, {platform.system()} {platform.release()}."
    )


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    quick, only = args.quick, set(args.only or DEFAULT_PARTS)
    results: dict[str, Any] = {}
    for name, bench in (("cut", bench_cut), ("save", bench_save), ("stage1", bench_stage1)):
        if name in only:
            _log(f"{name} ...")
            results[name] = bench(quick)
    sizes = [50, 200] if quick else [50, 200, 1000, 3000]
    seeded: dict[int, list[Any]] = {}
    if "steps" in only:
        _log("per step ...")
        steps, warmup = (5, 2) if quick else (25, 3)
        results["steps"], seeded = bench_steps(root, sizes, steps, warmup, _log)
    largest, middle = sizes[-1], (200 if quick else 1000)
    if only & {"split", "compaction", "profile"}:
        import asyncio

        from benchmarks.sessions import seed_session

        for n in {largest, middle} - set(seeded):
            seeded[n] = asyncio.run(seed_session(root / f"seed-{n}", n))
    if "split" in only:
        _log("split ...")
        reserves = [0, 1_000, 13_107, 50_000, 100_000, 10**7]
        results["split"] = {"n": largest, "ms": split_ms(seeded[largest], reserves, 5)}
        _log("AsMsgHandler split against AgentScope's ...")
        results["handler_split"] = handler_split_ms(seeded[largest], 3 if quick else 9)
    if "compaction" in only:
        _log("compaction ...")
        sessions = {n: seeded[n] for n in sorted({middle, largest})}
        results["compaction"] = bench_compaction(root, sessions, 1 if quick else 3)
    if "cache" in only:
        _log("prompt-cache reuse ...")
        results["cache"] = bench_cache(root, quick, _log)
    if "recall" in only:
        _log("recall of memory_search ...")
        results["recall"] = bench_recall(root, quick, _log)
    if "chain" in only:
        _log("chain of compactions ...")
        compactor = _compactor(args)
        results["chain"] = bench_chain(
            root,
            quick,
            _log,
            seed=args.chain_seed,
            compactor=compactor,
            names=_names(args.chain_sessions),
            max_compactions=args.chain_compactions,
            window=args.chain_window,
        )
    if "store" in only:
        _log("the workspace store: files against PostgreSQL ...")
        results["store"] = bench_store(root, quick, _log)
    if "profile" in only:
        _log("profile ...")
        results["profile"] = profile_steps(root, seeded[largest], "estimate", 5 if quick else 15)
        _log("profile of one compaction ...")
        text, shares = profile_compaction(root, middle, seeded[middle], "o200k_base")
        results["compaction_profile"] = {"n": middle, "text": text, "shares": shares}
    return results


def _names(value: str | None) -> list[str] | None:
    """``--chain-sessions python-en,go-zh`` as a list (None: every session)."""
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    return names or None


def _compactor(args: argparse.Namespace) -> Any:
    """The LLM compactor's model (``--compactor-url``: an OpenAI-compatible server), or None:
    the extractive compactor."""
    if not args.compactor_url:
        return None
    from agentscope.credential import OpenAICredential
    from agentscope.model import OpenAIChatModel

    credential = OpenAICredential(api_key=args.compactor_key, base_url=args.compactor_url)
    return OpenAIChatModel(
        credential, args.compactor_model, stream=False, context_size=args.compactor_context
    )


def _without_profile_texts(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` without the profiles' text (each has its own file)."""
    out = {k: v for k, v in results.items() if k != "profile"}
    if "compaction_profile" in out:
        out["compaction_profile"] = {
            k: v for k, v in out["compaction_profile"].items() if k != "text"
        }
    return out


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short run (about 1 minute)")
    parser.add_argument("--only", nargs="+", choices=PARTS, help="run only these parts")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the results")
    parser.add_argument("--chain-seed", type=int, default=1, help="the chain part's sessions")
    parser.add_argument(
        "--chain-sessions",
        help="chain part: only these sessions, comma-separated (e.g. python-en,python-zh); "
        "default: all eight",
    )
    parser.add_argument(
        "--chain-compactions",
        type=int,
        help="chain part: stop each session after the turn of its N-th compaction (a slow "
        "model's run); default: the whole session",
    )
    parser.add_argument(
        "--chain-window",
        type=int,
        default=CHAIN_WINDOW,
        help=f"chain part: the agent's window in tokens (default {CHAIN_WINDOW:,}; a smaller "
        "one compacts more often, with less each time)",
    )
    parser.add_argument(
        "--compactor-url",
        help="chain part: an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1) for the "
        "LLM compactor; without it the extractive compactor runs (offline)",
    )
    parser.add_argument("--compactor-model", default="local", help="the model name it serves")
    parser.add_argument("--compactor-key", default="none", help="its API key")
    parser.add_argument("--compactor-context", type=int, default=32768, help="its window")
    args = parser.parse_args(argv)
    logging.getLogger("as").setLevel(logging.ERROR)  # AgentScope's logger
    logging.getLogger("copaw_context").setLevel(logging.ERROR)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="copaw-bench-") as tmp:
        results = _run(args, Path(tmp))
    elapsed = time.perf_counter() - started
    flags = (["--quick"] if args.quick else []) + (["--only", *args.only] if args.only else [])
    kind = " ".join(flags) or "default"
    machine = _machine() + f" Run: {kind}, {elapsed:.0f} s."
    report = markdown(results, machine)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(report + "\n", encoding="utf-8")
    if results.get("cache"):  # its own file too: `--only cache` runs leave latest.md's others
        cache_md = "\n".join(
            ["# Prompt-cache benchmark", "", machine, "", *cache_table(results["cache"])]
        )
        (args.out / "cache.md").write_text(cache_md + "\n", encoding="utf-8")
    if results.get("recall"):  # its own file too, like the cache part's
        recall_md = "\n".join(
            ["# Recall benchmark", "", machine, "", *recall_table(results["recall"])]
        )
        (args.out / "recall.md").write_text(recall_md + "\n", encoding="utf-8")
    if results.get("store"):  # its own file too, like the cache part's
        store_md = "\n".join(
            ["# Workspace store benchmark", "", machine, "", *store_table(results["store"])]
        )
        (args.out / "store.md").write_text(store_md + "\n", encoding="utf-8")
    if results.get("chain"):
        chain = results["chain"]
        head = (
            f"Seed {chain['seed']}, window {chain['window']:,} tokens, {chain['method']} compactor"
            + (f" ({args.compactor_model} at {args.compactor_url})" if args.compactor_url else "")
            + "."
        )
        if chain.get("max_compactions"):
            limit = chain["max_compactions"]
            head += f" Each session stopped after the turn of its compaction {limit}."
        chain_md = "\n".join(
            ["# Chain-of-compactions benchmark", "", machine, head, "", *chain_table(chain["runs"])]
        )
        (args.out / "chain.md").write_text(chain_md + "\n", encoding="utf-8")
    (args.out / "results.json").write_text(
        json.dumps(_jsonable(_without_profile_texts(results)), indent=1),
        encoding="utf-8",
    )
    if "profile" in results:
        (args.out / "profile-step.txt").write_text(results["profile"], encoding="utf-8")
    if "compaction_profile" in results:
        text = results["compaction_profile"]["text"]
        (args.out / "profile-compaction.txt").write_text(text, encoding="utf-8")
    if results.get("steps"):
        plot_steps(results["steps"], args.out / "steps.png")
    print(report)
    _log(f"written to {args.out} in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
