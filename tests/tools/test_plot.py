"""neurorun-plot: the figure's lines against means computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from neurorun.tools import plot as plot_tool

from .helpers import rows, write_run

pytestmark = pytest.mark.extras("plots")


def lines_by_label(figure):
    (axes,) = figure.axes
    return {line.get_label(): (line.get_xdata(), line.get_ydata()) for line in axes.lines}


def test_one_mean_line_per_group(sweep):
    figure = plot_tool.plot_runs([sweep], y="mean_eval")
    lines = lines_by_label(figure)
    assert set(lines) == {"algo=pgpe (2 runs)", "algo=snes (2 runs)"}
    # pgpe: [1, 2, 3] and [3, 2, 7]; snes: [4, 6, 8] and [0, 6, 10]
    np.testing.assert_allclose(lines["algo=pgpe (2 runs)"][0], [1, 2, 3])
    np.testing.assert_allclose(lines["algo=pgpe (2 runs)"][1], [2, 2, 5])
    np.testing.assert_allclose(lines["algo=snes (2 runs)"][1], [2, 6, 9])


def test_std_and_minmax_bands(sweep):
    (axes,) = plot_tool.plot_runs([sweep], y="mean_eval", band="std").axes
    tops = sorted(c.get_paths()[0].vertices[:, 1].max() for c in axes.collections)
    assert tops == [5 + 2, 9 + 1]  # mean + std at generation 3: pgpe 5 ± 2, snes 9 ± 1
    (axes,) = plot_tool.plot_runs([sweep], y="mean_eval", band="minmax").axes
    bottoms = sorted(c.get_paths()[0].vertices[:, 1].min() for c in axes.collections)
    assert bottoms == [0, 1]  # snes min 0 at generation 1, pgpe min 1
    (axes,) = plot_tool.plot_runs([sweep], y="mean_eval", band="none").axes
    assert not axes.collections


def test_missing_values_are_interpolated(sweep):
    # pgpe seed 0 has no center_eval at generation 2: (1 + 5) / 2 there
    lines = lines_by_label(plot_tool.plot_runs([sweep], y="center_eval"))
    np.testing.assert_allclose(lines["algo=pgpe (2 runs)"][1], [(1 + 3) / 2, (3 + 9) / 2, 3])
    np.testing.assert_allclose(lines["algo=snes (2 runs)"][1], [2, 4, 5])


def test_different_x_grids_share_the_covered_range(tmp_path):
    write_run(tmp_path / "a", rows([0, 10, 20], steps=[0, 10, 20]), ["seed=0"])
    write_run(tmp_path / "b", rows([0, 10, 30, 50], steps=[0, 5, 15, 25]), ["seed=1"])
    lines = lines_by_label(plot_tool.plot_runs([tmp_path], x="interactions"))
    ((x, y),) = lines.values()
    np.testing.assert_allclose(x, [0, 5, 10, 15, 20])  # b reaches 25, a only 20
    # a on the grid: 0, 5, 10, 15, 20; b: 0, 10, 20, 30, 40
    np.testing.assert_allclose(y, [0, 7.5, 15, 22.5, 30])


def test_a_group_whose_runs_share_no_x_range_is_drawn_run_by_run_with_a_warning(tmp_path):
    """Steps 0-20 and 30-50 overlap nowhere: no mean exists, so each run is its own line
    (the whole curve, as --band runs) beside the other group's mean, not left out."""
    write_run(tmp_path / "a", rows([0, 10, 20], steps=[0, 10, 20]), ["algo=snes", "seed=0"])
    write_run(tmp_path / "b", rows([5, 6, 7], steps=[30, 40, 50]), ["algo=snes", "seed=1"])
    write_run(tmp_path / "c", rows([1, 2, 3], steps=[0, 10, 20]), ["algo=pgpe", "seed=0"])
    with pytest.warns(UserWarning, match="algo=snes: its runs' total_interaction_count ranges "
                                         "do not overlap"):
        figure = plot_tool.plot_runs([tmp_path], x="interactions")
    (axes,) = figure.axes
    curves = sorted((list(line.get_xdata()), list(line.get_ydata())) for line in axes.lines)
    assert curves == [([0, 10, 20], [0, 10, 20]), ([0, 10, 20], [1, 2, 3]),
                      ([30, 40, 50], [5, 6, 7])]
    assert [line.get_label() for line in axes.lines if not line.get_label().startswith("_")] \
        == ["algo=snes (2 runs)", "algo=pgpe (1 runs)"]


def test_runs_meeting_at_one_point_are_drawn_run_by_run_too(tmp_path):
    """Steps 0-20 and 20-40 share the single point 20: a one-point mean is no line."""
    write_run(tmp_path / "a", rows([0, 10, 20], steps=[0, 10, 20]), ["seed=0"])
    write_run(tmp_path / "b", rows([5, 6, 7], steps=[20, 30, 40]), ["seed=1"])
    with pytest.warns(UserWarning, match="do not overlap \\(or meet at one point\\)"):
        figure = plot_tool.plot_runs([tmp_path], x="interactions")
    (axes,) = figure.axes
    assert sorted(list(line.get_xdata()) for line in axes.lines) == [[0, 10, 20], [20, 30, 40]]


@pytest.mark.parametrize("band", ["std", "runs"])
def test_a_one_point_line_gets_a_marker_and_longer_lines_none(tmp_path, band):
    """A one-generation run (or a seed that solved at generation 1) is one point: a line
    alone draws nothing there."""
    write_run(tmp_path / "short" / "0", rows([7.0]), ["algo=snes"])
    write_run(tmp_path / "long" / "0", rows([1.0, 2.0]), ["algo=pgpe"])
    (axes,) = plot_tool.plot_runs([tmp_path], band=band).axes
    markers = {line.get_label(): (line.get_marker(), list(line.get_ydata()))
               for line in axes.lines}
    assert markers == {"algo=snes (1 runs)": ("o", [7.0]), "algo=pgpe (1 runs)": ("None", [1, 2])}


def test_band_runs_keeps_every_whole_run_in_its_group_color(tmp_path):
    write_run(tmp_path / "a", rows([0, 10, 20], steps=[0, 10, 20]), ["seed=0"])
    write_run(tmp_path / "b", rows([0, 10, 30, 50], steps=[0, 5, 15, 25]), ["seed=1"])
    figure = plot_tool.plot_runs([tmp_path], x="interactions", band="runs")
    (axes,) = figure.axes
    curves = sorted((list(line.get_xdata()), list(line.get_ydata())) for line in axes.lines)
    assert curves == [([0, 5, 15, 25], [0, 10, 30, 50]), ([0, 10, 20], [0, 10, 20])]
    assert len({line.get_color() for line in axes.lines}) == 1
    assert [line.get_label() for line in axes.lines if not line.get_label().startswith("_")] \
        == ["all runs (2 runs)"]
    assert not axes.collections


def test_a_legend_of_long_labels_goes_below_the_axes(tmp_path, sweep):
    """Override labels of a few keys would cover the curves inside the axes."""
    long = ["algo.radius_init=0.27", "algo.optimizer_config.max_speed=0.05"]
    write_run(tmp_path / "a", rows([0, 10], steps=[0, 10]), ["seed=0", *long])
    write_run(tmp_path / "b", rows([0, 20], steps=[0, 10]), ["seed=0", "algo.radius_init=0.9",
                                                              "algo.optimizer_config.max_speed=0.15"])
    figure = plot_tool.plot_runs([tmp_path / "a", tmp_path / "b"], band="runs")
    (axes,) = figure.axes
    assert axes.get_legend() is None
    (legend,) = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        ", ".join(long) + " (1 runs)",
        "algo.radius_init=0.9, algo.optimizer_config.max_speed=0.15 (1 runs)"]
    short = plot_tool.plot_runs([sweep])  # "algo=pgpe (2 runs)": inside the axes
    assert short.axes[0].get_legend() is not None and not short.legends


def test_a_legend_label_wider_than_the_figure_is_wrapped(tmp_path):
    """Runs differing in many overrides had one-line labels cut at the figure's edge."""
    many = [f"algo.option_number_{k}=0.0075" for k in range(8)]
    write_run(tmp_path / "a", rows([0, 10]), ["seed=0", *many])
    write_run(tmp_path / "b", rows([0, 20]), ["seed=0", "algo.option_number_0=1"])
    (legend,) = plot_tool.plot_runs([tmp_path / "a", tmp_path / "b"], band="runs").legends
    text = legend.get_texts()[0].get_text()
    assert text.replace("\n", " ") == ", ".join(many) + " (1 runs)"
    assert max(len(line) for line in text.splitlines()) <= 100 < len(text)


def test_x_time_and_run_folders_given_one_by_one(sweep):
    figure = plot_tool.plot_runs([sweep / "0_pgpe_s0", sweep / "1_snes_s0"], x="time")
    lines = lines_by_label(figure)
    assert set(lines) == {"algo=pgpe (1 runs)", "algo=snes (1 runs)"}
    np.testing.assert_allclose(lines["algo=pgpe (1 runs)"][0], [0.1, 0.2, 0.3])
    assert figure.axes[0].get_xlabel() == "wall time (s)"


def test_main_writes_a_png(sweep, tmp_path, capsys):
    out = tmp_path / "curves.png"
    assert plot_tool.main([str(sweep), "--out", str(out), "--y", "center_eval"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("argv, message", [
    (["--y", "no_such_metric"], "no_such_metric"),
    (["--out", "curves.xyz"], "image format"),
])
def test_bad_options(sweep, tmp_path, capsys, argv, message):
    base = {"--out": str(tmp_path / "curves.png")}
    args = [str(sweep)]
    for key, value in {**base, **dict(zip(argv[::2], argv[1::2], strict=True))}.items():
        args += [key, value if key != "--out" or "/" in value else str(tmp_path / value)]
    assert plot_tool.main(args) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error


def test_runs_of_different_envs_get_their_own_lines_and_a_warning(tmp_path):
    for name, env in (("a", "CartPole-v1"), ("b", "Pendulum-v1")):
        folder = write_run(tmp_path / name, rows([1, 2]), ["algo=pgpe"])
        (folder / ".hydra" / "config.yaml").write_text(f"env:\n  id: {env}\n")
    with pytest.warns(UserWarning, match="2 envs"):
        figure = plot_tool.plot_runs([tmp_path / "a", tmp_path / "b"])
    assert set(lines_by_label(figure)) == {"env=CartPole-v1, algo=pgpe (1 runs)",
                                           "env=Pendulum-v1, algo=pgpe (1 runs)"}


def test_episodes_on_x_read_the_training_episode_count(tmp_path):
    """ES papers count training episodes (ARS's table): `--x episodes` plots against them."""
    for name, episodes, seed in (("a", [40, 80, 120], 0), ("b", [20, 60, 100], 1)):
        metrics = rows([1, 2, 3])
        for row, count in zip(metrics, episodes, strict=True):
            row["total_episode_count"] = count
        write_run(tmp_path / name, metrics, [f"seed={seed}"])
    figure = plot_tool.plot_runs([tmp_path], x="episodes")
    ((x, y),) = lines_by_label(figure).values()
    np.testing.assert_allclose(x, [40, 60, 80, 100])  # the range both runs cover
    # a (1, 2, 3 at 40, 80, 120) there: 1, 1.5, 2, 2.5; b (at 20, 60, 100): 1.5, 2, 2.5, 3
    np.testing.assert_allclose(y, [1.25, 1.75, 2.25, 2.75])
    assert figure.axes[0].get_xlabel() == "training episodes"
