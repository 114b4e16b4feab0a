"""What the docs list or count is checked against the code (issue 22, item 7): the
HostSession members, the chat and shell commands, the modules named, the test counts, the
benchmark tables and run time."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

from copaw_context import installed_agentscope_major
from copaw_context.cli._app import _build_parser
from copaw_context.core.commands import COMMANDS
from copaw_context.core.host.protocol import ContextSource, HostSession
from tests.docs.readme_blocks import ROOT

DOCS = ROOT / "docs"
ARCHITECTURE = (DOCS / "architecture.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of ``heading`` (a ``## `` or ``### `` line) up to the next heading."""
    body = text.split(f"\n{heading}\n", 1)[1]
    return re.split(r"\n#{2,3} ", body, maxsplit=1)[0]


def table(text: str) -> list[list[str]]:
    """The rows of the first Markdown table in ``text`` (header and rule dropped)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]


def test_the_protocol_table_lists_every_member() -> None:
    members = {n for cls in (HostSession, ContextSource) for n in vars(cls) if n[0] != "_"}
    rows = table(section(ARCHITECTURE, "## The protocol"))
    listed = {name for row in rows for name in re.findall(r"`([a-z_]+)(?:\([^`]*\))?`", row[0])}
    assert listed == members, (sorted(members - listed), sorted(listed - members))


def test_every_chat_command_is_documented() -> None:
    pipeline = section(ARCHITECTURE, "## The pipeline")
    commands = section(README, "## Commands")
    chat_rows = " ".join(row[1] for row in table(commands) if row[0] == "chat")
    for name in COMMANDS:
        assert re.search(rf"/{name}\b", pipeline), f"/{name} missing in architecture.md"
        assert re.search(rf"/{name}\b", chat_rows), f"/{name} missing in the README's table"


def test_every_shell_command_is_documented() -> None:
    parser = _build_parser()
    (subcommands,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    names = sorted(subcommands.choices)  # type: ignore[attr-defined]
    assert names == ["chat", "check-config", "demo", "memory", "qwenpaw", "store"]
    shell_rows = " ".join(
        row[1] for row in table(section(README, "## Commands")) if row[0] == "shell"
    )
    (cli_row,) = [
        row for row in table(section(ARCHITECTURE, "## Who owns what")) if row[0] == "`cli/`"
    ]
    for name in names:
        assert f"copaw-context {name}" in shell_rows, name
        assert f"`copaw-context {name}`" in cli_row[1] or f"`{name}`" in cli_row[1], name


def test_the_modules_named_as_owners_exist() -> None:
    rows = table(section(ARCHITECTURE, "## Who owns what"))
    checked = 0
    for row in rows:
        folder = ROOT / "copaw_context"
        for path in re.findall(r"`([\w*/.]+)`", row[0]):
            # A bare name ("`core/steps/cut.py`, `data_fit.py`") sits next to the one before.
            base = folder if "/" not in path else ROOT / "copaw_context"
            assert sorted(base.glob(path.rstrip("/"))), path
            if "/" in path.rstrip("/"):
                folder = (ROOT / "copaw_context" / path).parent
            checked += 1
    assert checked > 20


def _collected(path: str = "tests") -> int:
    """How many tests pytest selects here (the 1.x run leaves out the 2.x-only ones)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]  # "1564 tests collected" / "335/360 tests ..."
    return int(re.match(r"(\d+)", last).group(1))  # type: ignore[union-attr]


def _about(text: str, pattern: str) -> int:
    match = re.search(pattern, re.sub(r"\s+", " ", text))
    assert match, pattern
    return int(match.group(1).replace(",", ""))


def test_the_test_counts_in_the_reliability_doc_are_current() -> None:
    doc = (DOCS / "reliability.md").read_text(encoding="utf-8")
    if installed_agentscope_major() >= 2:
        stated = _about(doc, r"holds about ([\d,]+) tests in the 2\.x run")
        reliability = _about(doc, r"about (\d+) now in the 2\.x run")
        assert abs(_collected("tests/reliability") - reliability) <= 0.1 * reliability
    else:
        stated = _about(doc, r"and about ([\d,]+) in the 1\.x run")
    actual = _collected()
    assert abs(actual - stated) <= 0.1 * stated, f"the doc says about {stated}, pytest {actual}"


def _number(cell: str) -> tuple[float, int]:
    """The first number of a cell and its decimals: ``"452 (loads ...)"`` -> (452.0, 0)."""
    match = re.match(r"-?[\d,]+(?:\.(\d+))?", cell)
    assert match, cell
    return float(match.group(0).replace(",", "")), len(match.group(1) or "")


def _same(doc_cell: str, latest_cell: str) -> bool:
    if doc_cell == latest_cell:  # also "-", no figure
        return True
    shown, decimals = _number(doc_cell)
    measured, _ = _number(latest_cell)
    return abs(shown - measured) <= 0.5 * 10**-decimals + 1e-9


PERFORMANCE = (DOCS / "performance.md").read_text(encoding="utf-8")
LATEST = (ROOT / "benchmarks" / "results" / "latest.md").read_text(encoding="utf-8")
# docs/performance.md section, latest.md section, and which latest column each doc column shows
TABLES = [
    (
        "## Truncation: one output cut to 50 KB",
        "## Truncation: one output cut to 50 KB",
        {3: 1, 4: 2},
    ),
    ("## Offload write", "## Offload write (file + directory fsync)", {3: 1, 4: 2}),
    ("## Stage 1: one fresh result", "## Stage 1 (one fresh result, 30% Chinese)", {2: 1, 3: 2}),
    ("## Per step", "## Per step (medians)", {i: i for i in range(10) if i != 1}),
]


def test_the_performance_tables_show_the_committed_results() -> None:
    for doc_heading, latest_heading, columns in TABLES:
        doc_rows = table(section(PERFORMANCE, doc_heading).split("\n### ", 1)[0])
        latest_rows = table(section(LATEST, latest_heading))
        assert len(doc_rows) == len(latest_rows), doc_heading
        for doc_row, latest_row in zip(doc_rows, latest_rows, strict=True):
            for doc_column, latest_column in columns.items():
                doc_cell, latest_cell = doc_row[doc_column], latest_row[latest_column]
                assert _same(doc_cell, latest_cell), (
                    doc_heading,
                    doc_row[0],
                    doc_cell,
                    latest_cell,
                )


def test_the_bench_run_time_is_the_committed_one_everywhere() -> None:
    seconds = _about(LATEST, r"Run: default, (\d+) s\.")
    minutes = round(seconds / 60)
    bench = (ROOT / "scripts" / "bench.sh").read_text(encoding="utf-8")
    for text in (PERFORMANCE, bench):
        assert _about(text, r"default run[:,] about (\d+) minutes") == minutes
    assert f"run of {seconds} s" in re.sub(r"\s+", " ", PERFORMANCE)


def test_the_cache_table_shows_the_committed_run() -> None:
    committed = (ROOT / "benchmarks" / "results" / "cache.md").read_text(encoding="utf-8")
    heading = next(line for line in committed.splitlines() if line.startswith("## Prompt-cache"))
    doc_rows = table(section(PERFORMANCE, "## Prompt-cache reuse"))
    assert doc_rows == table(section(committed, heading))
    assert [row[0] for row in doc_rows] == [
        "copaw-context (AgentScope 2.x middleware)",
        "AgentScope 2.x built-in compression",
        "QwenPaw 1.1.12 light context manager",
        "copaw-context, pruning_recent_msg_max_bytes 10,000 (trade-off)",
    ]


def test_the_llm_quality_rows_are_the_committed_run() -> None:
    """docs/quality.md's LLM rows: the run's table (benchmarks/results/quality-llm/) and
    its summaries rescored by this version's checker."""
    base = ROOT / "benchmarks" / "results" / "quality-llm"
    quality = (DOCS / "quality.md").read_text(encoding="utf-8")
    body = section(quality, "## LLM compactor with a 1.5B local model")
    seed1, seed2 = body.split("\nSeed 2 (", 1)
    for seed, text in ((1, seed1), (2, seed2)):
        rows = table(text)
        names = [r[0] for r in rows]
        assert names[:2] == ["web-build", "go-service"] and len(rows) in (2, 4), names
        _check_llm_rows(base, seed, rows)


def _check_llm_rows(base: Path, seed: int, rows: list[list[str]]) -> None:
    from scripts.quality.rescore import rescore

    run: dict[str, list[str]] = {}
    rescored: dict[str, list[str]] = {}
    for language in ("en", "zh")[: len(rows) // 2]:
        run |= {r[0]: r for r in table((base / f"seed{seed}-{language}.md").read_text("utf-8"))}
        summaries = (base / f"seed{seed}-{language}-summaries.txt").read_text(encoding="utf-8")
        rescored |= {r[0]: r for r in table(rescore(summaries, seed=seed))}
    for row in rows:
        measured = run[row[0]]
        assert measured[1] == "llm"  # the model's summary, no fallback
        assert [row[1], row[2], row[4], *row[5:]] == [measured[2], measured[4], *measured[5:]]
        again = rescored[row[0]]
        assert row[3] == (f"{again[1]} ({again[2]})" if again[1] != "0" else "0"), row
        assert row[4] == again[3]


def test_the_results_the_docs_cite_are_committed() -> None:
    # twice a docs test passed where the run was made and failed on a fresh clone: the
    # results it reads were left out by benchmarks/results/.gitignore (recall.md, quality-llm/)
    listed = subprocess.run(
        ["git", "ls-files", "benchmarks/results"], cwd=ROOT, capture_output=True, text=True
    )
    assert listed.returncode == 0, f"the docs' results are checked in a git checkout: {listed}"
    tracked = set(listed.stdout.split())
    docs = "\n".join(
        p.read_text("utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    )
    cited = set(re.findall(r"benchmarks/results/[\w./-]+\.md\b", docs))
    assert cited, "the docs cite no committed result"
    assert not cited - tracked, f"cited but not committed: {sorted(cited - tracked)}"
    named = set(re.findall(r"[\w.-]+\.(?:md|txt|json)\b", docs))
    here = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "benchmarks" / "results").rglob("*")
        if p.is_file() and p.name in named
    }
    assert not here - tracked, (
        f"named by the docs, on disk, not committed: {sorted(here - tracked)}"
    )
