"""neurorun-compare: the table against means over the fabricated sweep computed by hand."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from neurorun.tools import compare as compare_tool

from .helpers import rows, write_run


def by_group(rows):
    return {row["group"]: row for row in rows}


def test_center_eval_by_default(sweep):
    metric, rows = compare_tool.compare([sweep])
    assert metric == "center_eval"
    groups = by_group(rows)
    pgpe, snes = groups["algo=pgpe"], groups["algo=snes"]
    # pgpe center_eval: [1, -, 5] and [3, 9, 1] -> finals 5, 1; bests 5, 9
    assert (pgpe["runs"], pgpe["final_mean"], pgpe["final_std"]) == (2, 3, 2)
    assert (pgpe["best_mean"], pgpe["best_std"]) == (7, 2)
    # snes: [2, 3, 4] and [2, 5, 6] -> finals 4, 6; bests 4, 6
    assert (snes["final_mean"], snes["final_std"], snes["best_mean"]) == (5, 1, 5)
    assert (snes["steps_mean"], snes["steps_std"]) == (300, 0)
    assert snes["time_s_mean"] == pytest.approx(0.3)


def test_other_metric(sweep):
    _, rows = compare_tool.compare([sweep], "mean_eval")
    groups = by_group(rows)
    # pgpe mean_eval [1, 2, 3], [3, 2, 7]; snes [4, 6, 8], [0, 6, 10]
    assert (groups["algo=pgpe"]["final_mean"], groups["algo=pgpe"]["final_std"]) == (5, 2)
    assert (groups["algo=snes"]["final_mean"], groups["algo=snes"]["best_mean"]) == (9, 9)


def test_table_and_csv(sweep, tmp_path, capsys):
    assert compare_tool.main([str(sweep)]) == 0
    table = capsys.readouterr().out
    assert "3.00 ± 2.00" in table and "7.00 ± 2.00" in table and "algo=snes" in table
    assert compare_tool.main([str(sweep / "0_pgpe_s0")]) == 0  # one run: no spread
    alone = capsys.readouterr().out
    assert " 5.00 " in alone and alone.count("±") == 1  # the title's "mean ± std over runs"
    assert compare_tool.main([str(sweep), "--csv"]) == 0
    parsed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["group"], float(r["final_mean"])) for r in parsed] == [("algo=pgpe", 3.0),
                                                                        ("algo=snes", 5.0)]
    out = tmp_path / "results.csv"
    assert compare_tool.main([str(sweep), "--csv", str(out)]) == 0
    with open(out, newline="") as file:
        assert float(list(csv.DictReader(file))[1]["best_mean"]) == 5.0


def test_center_eval_missing_falls_back_to_mean_eval(sweep, capsys):
    write_run(sweep / "4_cem_s0", [{"generation": 1, "mean_eval": 4, "center_eval": "nan"}],
              ["seed=0", "algo=cem", "generations=3"])
    # it switched without a word
    with pytest.warns(UserWarning, match=r"^1 of 5 runs have no finite center_eval \(.*4_cem_s0; "
                                         r".*comparing mean_eval"):
        metric, rows = compare_tool.compare([sweep])
    assert metric == "mean_eval"
    groups = by_group(rows)
    assert list(groups) == ["algo=pgpe", "algo=snes", "algo=cem"]
    assert groups["algo=pgpe"]["final_mean"] == 5
    assert (groups["algo=cem"]["runs"], groups["algo=cem"]["final_mean"]) == (1, 4)
    assert compare_tool.main([str(sweep)]) == 0
    assert capsys.readouterr().err.startswith("warning: 1 of 5 runs have no finite center_eval")


def test_runs_of_different_envs_are_grouped_apart_with_a_warning(tmp_path, capsys):
    """Two seeds of the same overrides, one on CartPole and one on Pendulum (saved env.id)."""
    for name, env, finals in (("a", "CartPole-v1", [1, 2]), ("b", "Pendulum-v1", [-900, -300])):
        folder = write_run(tmp_path / name, [{"generation": g + 1, "mean_eval": v,
                                              "total_interaction_count": 10, "elapsed_s": 1}
                                             for g, v in enumerate(finals)], ["algo=pgpe"])
        (folder / ".hydra" / "config.yaml").write_text(f"env:\n  id: {env}\n")
    with pytest.warns(UserWarning, match=r"2 envs \(CartPole-v1, Pendulum-v1\).*grouped apart"):
        _, rows = compare_tool.compare([tmp_path / "a", tmp_path / "b"], "mean_eval")
    groups = by_group(rows)
    assert set(groups) == {"env=CartPole-v1, algo=pgpe", "env=Pendulum-v1, algo=pgpe"}
    assert groups["env=Pendulum-v1, algo=pgpe"]["final_mean"] == -300
    assert compare_tool.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "grouped apart" in capsys.readouterr().err  # the command line shows the warning too


def test_metrics_whose_generations_do_not_increase_are_flagged(tmp_path, capsys):
    """Two processes that both wrote one metrics file interleave generations 1, 2, 1, 3, 2."""
    write_run(tmp_path / "run", [{"generation": g, "mean_eval": 1.0,
                                  "total_interaction_count": 10, "elapsed_s": 1}
                                 for g in (1, 2, 1, 3, 2)], ["algo=pgpe"])
    write_run(tmp_path / "fine", [{"generation": g, "mean_eval": 1.0,
                                   "total_interaction_count": 10, "elapsed_s": 1}
                                  for g in (1, 2, 3)], ["algo=snes"])
    with pytest.warns(UserWarning, match=r"run: its metrics' generations do not increase") as seen:
        compare_tool.compare([tmp_path / "run", tmp_path / "fine"], "mean_eval")
    assert not any("fine" in str(w.message) for w in seen)
    assert compare_tool.main([str(tmp_path / "run")]) == 0
    assert "generations do not increase" in capsys.readouterr().err


def test_the_table_is_printed_whole_off_a_terminal(tmp_path, capsys):
    from .helpers import rows, write_run

    long = "Linear(obs_length, 64) >> Tanh() >> Linear(64, 64) >> Tanh() >> Linear(64, act_length)"
    write_run(tmp_path / "sweep" / "0_a", rows([1, 2]), ["seed=0", f"network.spec={long}"])
    write_run(tmp_path / "sweep" / "1_b", rows([3, 4]), ["seed=0", "network.spec=Linear"])
    assert compare_tool.main([str(tmp_path / "sweep")]) == 0  # capsys: not a terminal
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "group" in line)
    assert "steps" in header and "time (s)" in header
    assert any(long in line for line in lines)  # the group is not wrapped or cut


# a run given again by another path (`..`, a symbolic link, a sweep and
# one of its runs) was counted twice: pgpe's group said 3 or 4 runs and its std shrank
def test_a_run_given_by_two_paths_is_counted_once(sweep, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(sweep / "2_pgpe_s1")
    dotted = sweep / ".." / sweep.name / "0_pgpe_s0"
    with pytest.warns(UserWarning, match="the same run given again; counted once") as said:
        _, rows = compare_tool.compare([sweep, dotted, link, sweep / "0_pgpe_s0"])
    assert len(said) == 1
    pgpe = by_group(rows)["algo=pgpe"]  # center_eval finals 5 and 1, as test_center_eval_...
    assert (pgpe["runs"], pgpe["final_mean"], pgpe["final_std"]) == (2, 3, 2)
    assert str(link) in str(said[0].message) and str(dotted) in str(said[0].message)


def test_runs_inside_a_run_folder_are_counted_with_it(tmp_path):
    """A sweep written inside a run's folder (hydra.sweep.dir=<run>/sweep): the folder with
    metrics was taken for a lone run, and the sweep's runs vanished from the table."""
    write_run(tmp_path / "base", rows([1.0, 2.0]), ["algo=pgpe"])
    for seed, final in ((0, 4.0), (1, 8.0)):
        write_run(tmp_path / "base" / "sweep" / str(seed), rows([0.0, final]),
                  ["algo=snes", f"seed={seed}"])
    _, table = compare_tool.compare([tmp_path / "base"], "mean_eval")
    groups = by_group(table)
    assert (groups["algo=pgpe"]["runs"], groups["algo=pgpe"]["final_mean"]) == (1, 2)
    assert (groups["algo=snes"]["runs"], groups["algo=snes"]["final_mean"]) == (2, 6)
    # a metric file given by name is that run alone
    _, table = compare_tool.compare([tmp_path / "base" / "metrics.csv"], "mean_eval")
    assert [(row["group"], row["runs"]) for row in table] == [("algo=pgpe", 1)]


def test_a_last_row_cut_short_is_left_out(tmp_path):
    """A run still writing its metrics.csv (or killed mid-row): the row cut inside its step
    count was read as 29 steps where the run had made 293."""
    run = write_run(tmp_path / "run", [{"generation": 1, "mean_eval": 2.0, "center_eval": 4.0,
                                        "total_interaction_count": 150, "elapsed_s": 0.5}],
                    ["seed=0"])
    with open(run / "metrics.csv", "a") as file:
        file.write("2,3.0,8.0,29")  # generation 2, cut inside total_interaction_count
    _, (row,) = compare_tool.compare([run])
    assert (row["final_mean"], row["steps_mean"], row["time_s_mean"]) == (4.0, 150, 0.5)


def test_a_resumed_run_is_labelled_by_what_it_ran_with(tmp_path):
    """A run resumed to 4 generations at popsize 12 was labelled `generations=2,
    algo.popsize=8`; a sweep's `quiet=True` and a run's `quiet=true` made two groups."""
    from neurorun.tools.runs import load_runs

    resumed = write_run(tmp_path / "a", rows([1, 2, 3, 4]),
                        ["generations=2", "algo.popsize=8", "seed=0"])
    record = resumed / ".hydra" / "resumed_2026-11-30_00-00-00"
    record.mkdir()
    (record / "overrides.yaml").write_text(
        f"- resume={resumed}\n- generations=4\n- +algo.popsize=12\n")
    write_run(tmp_path / "b", rows([1, 2, 3, 4]),
              ["generations=4", "algo.popsize=12", "seed=1", "logger.console.quiet=True"])
    (resumed / ".hydra" / "overrides.yaml").write_text(
        "- generations=2\n- algo.popsize=8\n- seed=0\n- logger.console.quiet=true\n")
    by_folder = {run.path.name: run.overrides for run in load_runs([tmp_path])}
    assert by_folder["a"] == by_folder["b"] | {"seed": "0", "resume": str(resumed)} == {
        "generations": "4", "algo.popsize": "12", "seed": "0", "logger.console.quiet": "true",
        "resume": str(resumed)}
    groups = compare_tool.group_runs(load_runs([tmp_path]))
    assert {label: len(members) for label, members in groups.items()} == {
        "generations=4, algo.popsize=12, logger.console.quiet=true": 2}


def _run_with_config(folder, finals, overrides, config):
    write_run(folder, [{"generation": g + 1, "mean_eval": v, "total_interaction_count": 10,
                        "elapsed_s": 1} for g, v in enumerate(finals)], overrides)
    (folder / ".hydra" / "config.yaml").write_text(config)


CONFIG = "seed: {seed}\nenv:\n  id: CartPole-v1\nalgo:\n  name: pgpe\n  popsize: {popsize}\n"


def test_runs_of_one_config_form_one_group_whatever_their_commands_said(tmp_path):
    """`seed=0`, `env=CartPole-v1 seed=1` and `algo=pgpe seed=2` on the debug preset (whose
    env and algorithm those are) were three groups of one run, one labelled "all runs"."""
    for seed, extra in enumerate([[], ["env=CartPole-v1"], ["algo=pgpe"]]):
        _run_with_config(tmp_path / str(seed), [seed, 2 * seed], [*extra, f"seed={seed}"],
                         CONFIG.format(seed=seed, popsize=4))
    _run_with_config(tmp_path / "wide", [7, 9], ["algo.popsize=8", "seed=0"],
                     CONFIG.format(seed=0, popsize=8))
    groups = by_group(compare_tool.compare([tmp_path], "mean_eval")[1])
    assert set(groups) == {"algo.popsize=4", "algo.popsize=8"}  # no override tells the first
    assert groups["algo.popsize=4"]["runs"] == 3
    assert groups["algo.popsize=4"]["final_mean"] == pytest.approx((0 + 2 + 4) / 3)
    assert groups["algo.popsize=8"]["final_mean"] == 9


def test_runs_that_differ_only_in_their_saved_config_are_told_apart_by_it(tmp_path):
    """The same command on two presets' defaults (or a config edited before a resume)."""
    for name, popsize in (("a", 4), ("b", 6)):
        _run_with_config(tmp_path / name, [popsize], ["algo=pgpe"],
                         CONFIG.format(seed=0, popsize=popsize))
    assert set(by_group(compare_tool.compare([tmp_path], "mean_eval")[1])) == {
        "algo.popsize=4", "algo.popsize=6"}


def test_a_group_with_one_finite_value_has_no_spread(sweep):
    """Its finals [4, nan]: the mean of the one finite value, and no stdev (it read 0)."""
    write_run(sweep / "4_cem_s0", [{"generation": 1, "mean_eval": 4, "center_eval": 4}],
              ["seed=0", "algo=cem", "generations=3"])
    write_run(sweep / "5_cem_s1", [{"generation": 1, "mean_eval": 4, "center_eval": "nan"}],
              ["seed=1", "algo=cem", "generations=3"])
    _, rows = compare_tool.compare([sweep], "center_eval")
    cem = by_group(rows)["algo=cem"]
    assert (cem["runs"], cem["final_mean"]) == (2, 4)
    assert np.isnan(cem["final_std"])
    assert compare_tool.format_mean_std(cem["final_mean"], cem["final_std"]) == "4.00"
