"""``copaw-context demo --plot`` checks the plot can be written before the run (issue 22,
item 3): matplotlib missing is one line naming the extra to install, and so is a bad name or
folder; nothing is run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from copaw_context.cli import main


def test_plot_without_matplotlib_is_one_line_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    workspace = tmp_path / "demo-workspace"
    argv = ["demo", "--plot", str(tmp_path / "x.png"), "--workspace", str(workspace)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "copaw-context: error: --plot needs matplotlib, which is not installed; "
        "install it with: pip install 'copaw-context[plot]'\n"
    )
    assert not workspace.exists()  # checked before the run: nothing was started


@pytest.mark.parametrize(
    ("name", "problem"),
    [("x.txt", "the name must end in one of "), ("missing/x.png", "does not exist")],
)
def test_a_plot_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, problem: str
) -> None:
    workspace = tmp_path / "demo-workspace"
    argv = ["demo", "--plot", str(tmp_path / name), "--workspace", str(workspace)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and problem in err and "Traceback" not in err
    assert not workspace.exists()


def test_a_model_without_a_key_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["demo", "--model", "m", "--workspace", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert err == (
        "copaw-context: error: --model needs an API key in $OPENAI_API_KEY "
        "(or a --base-url of a local server)\n"
    )


def test_a_folder_the_demo_did_not_make_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["demo", "--workspace", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"copaw-context: error: {tmp_path} is not empty")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
