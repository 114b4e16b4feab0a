"""The demo's plot: context tokens per step (``copaw-context demo --plot``; needs matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from copaw_context.cli.demo.result import DemoResult, pruning_drops

__all__ = ["plot_steps", "steps_figure"]


def plot_steps(result: DemoResult, path: Path) -> None:
    """Draw context tokens per step, the threshold and the compactions to ``path`` (PNG)."""
    import matplotlib.pyplot as plt

    fig = steps_figure(result)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def steps_figure(result: DemoResult) -> Any:
    """The plot as a matplotlib ``Figure``: tokens per step on a y-axis from 0, the threshold
    and window lines, compactions, pruning drops marked, the legend below the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r.step for r in result.steps]
    tokens = [r.context_tokens for r in result.steps]
    fig, ax = plt.subplots(figsize=(10, 5.2))
    ax.plot(steps, tokens, marker=".", label="context tokens sent to the model")
    ax.axhline(result.threshold, color="tab:red", linestyle="--", label="compaction threshold")
    ax.axhline(result.window, color="black", linestyle=":", label="window")
    previous = 0
    for record in result.steps:
        if record.compactions > previous:
            ax.axvline(record.step - 0.5, color="tab:green", alpha=0.5)
        previous = record.compactions
    ax.plot([], [], color="tab:green", alpha=0.5, label="compaction")
    drops = pruning_drops(result)
    ax.plot(
        [r.step for r in drops],
        [r.context_tokens for r in drops],
        linestyle="none",
        marker="v",
        color="tab:orange",
        label="drop without a compaction (older tool results cut)",
    )
    ax.set_ylim(0, max([result.window, *tokens]) * 1.05)  # from 0: drops keep their real size
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens")
    ax.set_title("copaw-context demo: context size per step")
    # Below the axes, so that it never covers the data or the window line.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
