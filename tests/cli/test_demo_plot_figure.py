"""The demo's plot (issue 22, item 6): the y-axis from 0, the legend outside the data (it never
covers the window line), pruning drops marked apart from compactions."""

from __future__ import annotations

from pathlib import Path

from copaw_context.cli.demo.plot import plot_steps, steps_figure
from copaw_context.cli.demo.result import pruning_drops
from copaw_context.cli.demo.run import run_demo


async def test_the_plot_starts_at_0_keeps_its_legend_off_the_data_and_marks_drops(
    tmp_path: Path,
) -> None:
    result = await run_demo(tmp_path / "ws", steps=60, out=None)
    drops = pruning_drops(result)
    assert drops  # the scripted session cuts older results without compacting
    fig = steps_figure(result)
    (ax,) = fig.axes
    assert ax.get_ylim()[0] == 0
    assert ax.get_ylim()[1] >= result.window
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend()
    legend_box = legend.get_window_extent(renderer)
    axes_box = ax.get_window_extent(renderer)
    assert not legend_box.overlaps(axes_box)  # below the axes: no line or point is hidden
    labels = [text.get_text() for text in legend.get_texts()]
    assert "window" in labels and "compaction" in labels
    marked = next(
        line for line in ax.get_lines() if "drop without a compaction" in line.get_label()
    )
    assert list(marked.get_xdata()) == [r.step for r in drops]
    assert list(marked.get_ydata()) == [r.context_tokens for r in drops]
    path = tmp_path / "steps.png"
    plot_steps(result, path)
    assert path.read_bytes().startswith(b"\x89PNG")
