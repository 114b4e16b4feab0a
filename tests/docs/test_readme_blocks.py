"""Every code block of the README works as pasted (issue 22, items 2 and 7).

Python blocks are whole scripts: each runs with this interpreter in an empty folder prepared
only by the README's own setup block, with the network blocked, for the AgentScope major it is
written for (the 2.x run takes the 2.x example and the host-neutral ones, the 1.x run the 1.x
example and the host-neutral ones). Shell blocks name scripts, commands and options that
exist; the layout tree names files that exist; the notice sample is what the code writes.
A block of a kind none of these checks would fail the first test, so the README cannot drift.
"""

from __future__ import annotations

import itertools
import os
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from copaw_context import installed_agentscope_major
from copaw_context.cli import main
from copaw_context.core.config.files import OVERLAY_NAME
from copaw_context.core.config.running import load_running_config
from copaw_context.core.toolresults.notice import TruncationNotice, format_truncation_notice
from tests.docs.readme_blocks import ROOT, Block, readme_blocks

BLOCKS = readme_blocks()
MAJOR = installed_agentscope_major()
# Sections whose Python example is written for one AgentScope major; the others run on both.
SECTION_MAJOR = {
    "Attach it to an agent": 2,
    "Attach it to an AgentScope 1.x `ReActAgent` (QwenPaw's host)": 1,
}
# What each example prints when it worked (its last words).
SECTION_PRINTS = {
    **dict.fromkeys(SECTION_MAJOR, "assistant: The link step fails."),
    "Long-term memory and recall": "memory/",
}
PYTHON = [b for b in BLOCKS if b.language == "python"]
RUN_HERE = [b for b in PYTHON if SECTION_MAJOR.get(b.section, MAJOR) == MAJOR]
SETUP = [b for b in BLOCKS if b.language == "bash" and b.text.startswith("mkdir -p logs")]
SHELL = [b for b in BLOCKS if b.language == "bash" and b not in SETUP]
JSON = [b for b in BLOCKS if b.language == "json"]


def _bootstrap_pins(name: str) -> list[str]:
    """The pins scripts/bootstrap_qwenpaw.sh installs a QwenPaw with (``QWENPAW1_PINS``...)."""
    script = (ROOT / "scripts" / "bootstrap_qwenpaw.sh").read_text().splitlines()
    value = next(line.split("=", 1)[1] for line in script if line.startswith(f"{name}="))
    return " ".join(shlex.split(value)).split()


# What the QwenPaw venvs of the tests have (the README's pip line of each section has it).
QWENPAW_PINS = {
    "Coming from QwenPaw": _bootstrap_pins("QWENPAW1_PINS"),
    "Coming from QwenPaw 2.2": _bootstrap_pins("QWENPAW2_PINS"),
}
QWENPAW_COMMANDS = [["app"]]
"""The ``qwenpaw`` command lines the README may show."""

# A script that blocks every connection past this machine, then runs the example as __main__.
RUNNER = """\
import runpy, socket, sys
def blocked(*args, **kwargs):
    raise OSError("network blocked while running a README example")
socket.socket.connect = blocked
socket.create_connection = blocked
socket.getaddrinfo = blocked
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_every_block_is_checked() -> None:
    kinds = {
        "python": PYTHON,
        "bash": SETUP + SHELL,
        "json": JSON,
        "text": [b for b in BLOCKS if b.text.startswith(("<<<TRUNCATED>>>", "copaw_context/\n"))],
    }
    checked = [b for blocks in kinds.values() for b in blocks]
    assert sorted(checked, key=lambda b: b.line) == BLOCKS, [b for b in BLOCKS if b not in checked]
    assert len(SETUP) == 1 and len(PYTHON) >= 3
    assert set(SECTION_MAJOR) <= {b.section for b in PYTHON}
    assert all(b.section in SECTION_PRINTS for b in PYTHON)
    assert {SECTION_MAJOR.get(b.section, 0) for b in PYTHON} == {0, 1, 2}  # both majors run


@pytest.mark.parametrize("block", JSON, ids=lambda b: b.name)
def test_json_example_is_a_settings_file_that_loads(tmp_path: Path, block: Block) -> None:
    """A JSON block is a ``copaw-context.json`` (the README shows no other JSON file)."""
    (tmp_path / "agent.json").write_text('{"running": {}}', encoding="utf-8")
    (tmp_path / OVERLAY_NAME).write_text(block.text, encoding="utf-8")
    merged = load_running_config(tmp_path / "agent.json")
    assert merged != load_running_config(tmp_path / "agent.json", beside=False)


@pytest.mark.parametrize("block", RUN_HERE, ids=lambda b: b.name)
def test_python_example_runs_as_pasted(tmp_path: Path, block: Block) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    setup = subprocess.run(
        ["bash", "-c", SETUP[0].text], cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert setup.returncode == 0, setup.stderr
    (folder / "example.py").write_text(block.text, encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path)}  # nothing lands in the real home folder
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "runner.py"), "example.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert SECTION_PRINTS[block.section] in done.stdout, done.stdout


def _commands(block: Block) -> list[list[str]]:
    """The command lines of a shell block (comments dropped, continuations joined)."""
    text = re.sub(r"\\\n\s*", " ", block.text)
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [shlex.split(line.replace("[", " ").replace("]", " ")) for line in lines if line]


def _options(words: list[str]) -> list[str]:
    return sorted({w.split("=", 1)[0] for w in words if w.startswith("--")} - {"--help"})


def _help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*argv, "--help"]) == 0, argv
    return capsys.readouterr().out


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.name)
def test_shell_commands_name_what_exists(block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    for words in _commands(block):
        program = words[0]
        if program == "bash":
            assert (ROOT / words[1]).is_file(), words
        elif program == "copaw-context":
            # The subcommand words: up to the first option or placeholder (DIR, QUERY).
            path = list(itertools.takewhile(lambda w: w.islower() and w[0] != "-", words[1:]))
            usage = _help_of(path, capsys)
            for option in _options(words):
                assert option in usage, (words, option)
        elif program == ".venv/bin/python" and words[1] == "-m":
            module = words[2]
            assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module
            usage = subprocess.run(
                [sys.executable, "-m", module, "--help"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert usage.returncode == 0, usage.stderr
            for option in _options(words):
                assert option in usage.stdout, (words, option)
        elif program == "pip" and words[1] == "install":
            # QwenPaw's pins as the QwenPaw venv of the tests has them, and this clone.
            assert words[2:] == [*QWENPAW_PINS[block.section], "."], words
        elif program == "qwenpaw":
            # QwenPaw's own command line; tests/qwenpaw/ checks it offers these.
            assert words[1:] in QWENPAW_COMMANDS, words
        else:
            pytest.fail(f"{block.name}: no check for the command {words}")


def test_the_layout_tree_names_files_that_exist() -> None:
    (tree,) = [b for b in BLOCKS if b.text.startswith("copaw_context/\n")]
    parents: list[Path] = []
    entry = ROOT
    checked = 0
    for line in tree.text.splitlines():
        indent = len(line) - len(line.lstrip())
        first, _, description = line.strip().partition(" ")
        if indent <= 4 and first:  # an entry: its name, then what it is
            depth = indent // 2
            parents = parents[:depth]
            base = parents[-1] if parents else ROOT
            matches = sorted(base.glob(first.rstrip("/")))
            assert matches, f"{first} (in {base.relative_to(ROOT)}/) does not exist"
            entry = matches[0]
            if first.endswith("/"):
                parents.append(entry)
            checked += 1
        else:
            description = line
        # Files named in the description: inside the entry (a folder) or next to it.
        for name in re.findall(r"(?<![\w./])[a-z_][\w*]*\.(?:py|sh|md)\b", description):
            places = [entry, entry.parent] if entry.is_dir() else [entry.parent]
            assert any(sorted(place.glob(name)) for place in places), f"{name} near {entry}"
            checked += 1
    assert checked > 40


def test_the_notice_sample_is_what_the_code_writes() -> None:
    (sample,) = [b for b in BLOCKS if b.text.startswith("<<<TRUNCATED>>>")]
    notice = TruncationNotice(
        file_path="/ws/tool_result/0c1d\u2026.txt",
        total_lines=4210,
        start_line=1,
        start_offset=0,
        excerpt_bytes=49987,
        next_line=812,
        next_offset=0,
    )
    assert format_truncation_notice(notice) == sample.text.rstrip("\n")


@pytest.mark.parametrize(
    "block", [b for b in RUN_HERE if b.section in SECTION_MAJOR], ids=lambda b: b.name
)
def test_the_attach_example_spends_exactly_its_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: Block
) -> None:
    """In-process, to look at the scripted model afterwards: both replies were the agent's
    (nothing taken by a compactor or the memory summariser) and read_file was offered."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    subprocess.run(["bash", "-c", SETUP[0].text], check=True, timeout=60)
    (tmp_path / "example.py").write_text(block.text, encoding="utf-8")
    namespace = runpy.run_path(str(tmp_path / "example.py"), run_name="__main__")
    model = namespace["model"]
    model.assert_complete()
    assert len(model.calls) == 2
    assert "read_file" in model.calls[0].tool_names and "build_log" in model.calls[0].tool_names
    assert "undefined symbol: main" in str(model.calls[1].messages)  # the tool's real output
