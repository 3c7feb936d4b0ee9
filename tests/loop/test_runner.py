"""The Runner: the generation loop, stop conditions, callbacks, seeding, restarts (config checks:
test_config_checks.py)."""

import csv
import json

import pytest
import torch
from omegaconf import OmegaConf

from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed
from neurorun.config.checks import validate_config
from neurorun.loop.build import build_parts
from neurorun.loop.callbacks import Callbacks
from neurorun.loop.runner import Runner, run

DESIGN_KEYS = ("generation", "mean_eval", "median_eval", "pop_best_eval", "best_sample_eval",
               "center_eval", "popsize", "total_interaction_count", "total_episode_count",
               "stdev_mean", "elapsed_s", "steps_per_s")
EPISODE_KEYS = tuple(f"episode_{kind}_{stat}" for kind in ("return", "length")
                     for stat in ("min", "mean", "max"))
TIME_COLUMNS = ("elapsed_s", "steps_per_s")


def tiny(*overrides):
    return compose_config(["debug=default", "logger.console.quiet=true", *overrides])


def metrics(run_dir):
    with open(run_dir / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


def without_time(rows):
    return [{k: v for k, v in row.items() if k not in TIME_COLUMNS} for row in rows]


def test_status_has_the_design_keys_and_counts_add_up(tmp_path):
    result = run(tiny("generations=3"), run_dir=tmp_path)
    rows = metrics(tmp_path)
    assert [int(r["generation"]) for r in rows] == [1, 2, 3]
    for key in DESIGN_KEYS + EPISODE_KEYS:
        assert key in rows[0]
    interactions = [int(r["interactions"]) for r in rows]
    assert [int(r["total_interaction_count"]) for r in rows] == [
        sum(interactions[:i + 1]) for i in range(3)]
    assert [int(r["total_episode_count"]) for r in rows] == [10, 20, 30]  # popsize 10 x 1 ep
    best = [float(r["pop_best_eval"]) for r in rows]
    assert [float(r["best_sample_eval"]) for r in rows] == [max(best[:i + 1]) for i in range(3)]
    assert result["stop_reason"].startswith("generations")
    for row in rows:
        assert float(row["episode_length_max"]) <= 50  # debug: episode_length 50
        assert float(row["episode_return_mean"]) == pytest.approx(float(row["mean_eval"]))


def test_stops_at_target_score_on_the_center_evaluation(tmp_path):
    result = run(tiny("generations=40", "target_score=30"), run_dir=tmp_path)
    centers = [float(r["center_eval"]) for r in metrics(tmp_path)]
    assert centers[-1] >= 30 and all(c < 30 for c in centers[:-1])
    assert result["stop_reason"].startswith("target_score")


def test_stops_at_max_interactions(tmp_path):
    run(tiny("generations=50", "max_interactions=400"), run_dir=tmp_path)
    totals = [int(r["total_interaction_count"]) for r in metrics(tmp_path)]
    assert totals[-1] >= 400 and all(t < 400 for t in totals[:-1])


def test_stops_at_max_time(tmp_path):
    result = run(tiny("generations=50", "max_time=0.000001"), run_dir=tmp_path)
    assert len(metrics(tmp_path)) == 1 and result["stop_reason"].startswith("max_time")


def test_center_is_evaluated_every_k_generations(tmp_path):
    run(tiny("generations=4", "eval_every=2", "target_score=null"), run_dir=tmp_path)
    assert [r["center_eval"] != "" for r in metrics(tmp_path)] == [False, True, False, True]


def test_adaptive_popsize_asks_popsize_more_until_popsize_max(tmp_path):
    run(tiny("algo.num_interactions=1000000", "algo.popsize_max=30"), run_dir=tmp_path)
    assert [int(r["popsize"]) for r in metrics(tmp_path)] == [30, 30]


def test_adaptive_popsize_stops_asking_once_interactions_are_reached(tmp_path):
    run(tiny("algo.num_interactions=150", "generations=3"), run_dir=tmp_path)
    for row in metrics(tmp_path):
        popsize, made = int(row["popsize"]), int(row["interactions"])
        assert popsize % 10 == 0 and made >= 150
        assert made - 10 * 50 < 150  # the last batch of 10 (<= 50 steps each) was needed


def test_callbacks_see_every_generation(tmp_path):
    seen = []

    class Recorder(Callbacks):
        def on_run_start(self, runner):
            seen.append(("start", runner.generation))

        def on_generation_end(self, runner, generation, status):
            seen.append(("generation", generation, status["mean_eval"]))

        def on_run_end(self, runner, result):
            seen.append(("end", result["generation"]))

    run(tiny("generations=3"), run_dir=tmp_path, callbacks=Recorder())
    means = [float(r["mean_eval"]) for r in metrics(tmp_path)]
    assert seen == [("start", 0), *[("generation", g + 1, means[g]) for g in range(3)],
                    ("end", 3)]


def test_same_seed_same_metrics_other_seed_other_metrics(tmp_path):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        run(tiny("generations=3", f"seed={seed}"), run_dir=tmp_path / name)
    a, b, c = (without_time(metrics(tmp_path / name)) for name in "abc")
    assert a == b
    assert a != c


def test_best_policy_is_the_center_with_the_best_evaluation(tmp_path):
    """best.pt holds the center of the generation whose center_eval (in metrics.csv) was the
    highest, not the last center nor a training sample; re-evaluated here it scores that."""
    class Centers(Callbacks):
        def __init__(self):
            self.centers = []

        def on_generation_end(self, runner, generation, status):
            self.centers.append(runner.algorithm.center.detach().clone())

    recorder = Centers()
    run(tiny("generations=6", "target_score=null"), run_dir=tmp_path, callbacks=recorder)
    evals = [float(r["center_eval"]) for r in metrics(tmp_path)]
    best_generation = max(range(len(evals)), key=lambda g: (evals[g], -g))  # the first best
    saved = torch.load(tmp_path / "checkpoints" / "best.pt", weights_only=True)["solution"]
    torch.testing.assert_close(saved, recorder.centers[best_generation].float())
    meta = json.loads((tmp_path / "checkpoints" / "best.json").read_text())
    assert meta["generation"] == best_generation + 1 and meta["score"] == evals[best_generation]
    cfg = tiny()
    problem, _ = build_parts(validate_config(cfg))
    returns, _ = problem.test_episodes(saved, int(cfg.eval_episodes),
                                        derive_seed(int(cfg.seed), "evaluation"))
    assert float(returns.double().mean()) == pytest.approx(evals[best_generation], rel=1e-6)
    problem.close()


def test_torch_threads_is_applied(tmp_path):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        Runner(tiny("torch_threads=1"), run_dir=tmp_path).problem.close()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_per_parameter_center_init_is_checked_against_the_sized_problem(tmp_path):
    """CartPole-v1's linear policy has 4 x 2 weights + 2 biases = 10 parameters; the config
    check cannot know that, the built run can."""
    center = [0.01 * i for i in range(10)]
    runner = Runner(tiny("env=CartPole-v1", "network=linear", "generations=1",
                         f"algo.center_init=[{','.join(map(str, center))}]"),
                    run_dir=tmp_path / "ten")
    assert runner.algorithm.center.tolist() == pytest.approx(center)
    assert runner.run()["generation"] == 1
    with pytest.raises(ConfigError, match=r"center_init=<9 values>: expected one value, or 10 "):
        Runner(tiny("env=CartPole-v1", "network=linear", "algo.center_init=[0,0,0,0,0,0,0,0,0]"),
               run_dir=tmp_path / "nine")


@pytest.mark.parametrize(("spec", "expected"), [
    ("Linear(obs_length, act_length + 3)", "the network gives 5 numbers per step, but "
     "CartPole-v1 takes actions of 2"),
    ("Linear(obs_length + 1, act_length)", "cannot take CartPole-v1's observations of 4 numbers"),
    ("Tanh() >> Linear(obs_length + 1, act_length)", "cannot take CartPole-v1's observations"),
    # an inner width: it blamed the observations, with numpy's broadcasting message
    ("Linear(obs_length, 8) >> Tanh() >> Linear(9, act_length)", r"layer 3 of the network, "
     r"Linear\(in_features=9, out_features=2, bias=True\), cannot take the 8 numbers layer 2 "
     "gives"),
    # next to a recurrent layer: it blamed the observations, with torch's bmm message
    ("GRU(obs_length, 4) >> Linear(5, act_length)", r"layer 2 of the network, "
     r"Linear\(in_features=5, out_features=2, bias=True\), cannot take the 4 numbers layer 1"),
    ("Linear(obs_length, 4) >> LSTM(5, 2) >> Linear(2, act_length)", r"layer 2 of the "
     r"network, LSTM\(5, 2, bias=True\), cannot take the 4 numbers layer 1 gives"),
    ("GRU(obs_length + 1, 4) >> Linear(4, act_length)",
     "cannot take CartPole-v1's observations of 4 numbers"),
])
def test_a_network_of_the_wrong_widths_is_refused_before_generation_one(tmp_path, spec,
                                                                        expected):
    with pytest.raises(ConfigError, match=expected) as caught:
        Runner(tiny("env=CartPole-v1", f"network.spec='{spec}'"), run_dir=tmp_path / "run")
    assert "\n" not in str(caught.value) and "Fix:" in str(caught.value)
    assert not (tmp_path / "run").exists()


def test_a_network_import_path_that_is_no_factory_names_network_spec(tmp_path):
    with pytest.raises(ConfigError, match=r"network.spec='os.path:sep': network factory '/' is "
                                          "a str, not a function or class"):
        run(tiny("network.spec=os.path:sep"), run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_generation_beyond_the_machines_memory_is_refused_before_generation_1(tmp_path):
    # 10^10 solutions x 10 parameters x 4 bytes, three copies: 1.2 TB
    with pytest.raises(ConfigError, match=r"algo.popsize=10000000000 solutions of 10 "
                                          r"parameters need about 1200.0 GB.*Fix: algo.popsize="):
        run(tiny("algo.popsize=10000000000"), run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("noise", ["seeds", "table"])  # table: drawn per attempt at build time
def test_a_stalled_search_restarts_from_a_new_start_and_resumes_exactly(tmp_path, noise):
    """Learning rates of 1e-12: the center does not move (CartPole: the same actions), its
    center_eval never rises, so every 2 center evaluations the search restarts from a new draw of
    problem.initial_bounds (seeded by the restart's number)."""
    common = ["generations=7", "restart.patience=2", f"algo.noise_source={noise}",
              "algo.noise_table_size=1000", "algo.center_learning_rate=1e-12",
              "algo.stdev_learning_rate=1e-12", "problem.initial_bounds=[-0.5,0.5]",
              "checkpoint_every=1"]
    straight = run(tiny(*common), run_dir=tmp_path / "straight")
    rows = metrics(tmp_path / "straight")
    # the third evaluation of an attempt is the second without a rise: a restart after it
    assert [int(r["restarts"]) for r in rows] == [0, 0, 0, 1, 1, 1, 2]
    assert straight["restarts"] == 2
    centers = [row["center_eval"] for row in rows]
    assert len(set(centers[:3])) == 1 and len(set(centers[3:6])) == 1  # attempts do not move
    cut = tmp_path / "cut"
    run(tiny(*common[1:], "generations=4"), run_dir=cut)
    from neurorun.config.resume import load_run_config
    from neurorun.record.layout import saved_config_path

    saved_config_path(cut).parent.mkdir(parents=True, exist_ok=True)
    saved_config_path(cut).write_text(OmegaConf.to_yaml(tiny(*common[1:], "generations=4")))
    run(load_run_config(cut, ["generations=7"]), run_dir=cut)
    assert without_time(metrics(cut)) == without_time(rows)


def test_restarts_need_room_in_the_budget(tmp_path):
    with pytest.raises(ConfigError, match=r"restart.patience=5 with eval_every=1: the first "
                                          r"restart could come after generation 6, but "
                                          r"generations=2"):
        run(tiny("restart.patience=5"), run_dir=tmp_path / "run")


def test_a_run_saved_before_restarts_existed_resumes(tmp_path):
    """Its saved config has no restart section, its state (format 1) no restart keys."""
    from neurorun.config.resume import load_run_config
    from neurorun.record.layout import saved_config_path

    run_dir = tmp_path / "old"
    cfg = tiny("generations=2")
    run(cfg, run_dir=run_dir)
    plain = OmegaConf.to_container(cfg)
    plain.pop("restart")
    saved_config_path(run_dir).parent.mkdir(parents=True, exist_ok=True)
    saved_config_path(run_dir).write_text(OmegaConf.to_yaml(plain))
    state_path = run_dir / "checkpoints" / "state.pt"
    state = torch.load(state_path, weights_only=True)
    for key in ("format", "restarts", "restart_due", "stall_history"):
        state.pop(key)
    state["status"].pop("restarts")
    torch.save(state, state_path)
    result = run(load_run_config(run_dir, ["generations=3"]), run_dir=run_dir)
    assert result["generation"] == 3 and result["restarts"] == 0


# a diverged search stops; its non-finite center is never evaluated or saved
@pytest.mark.parametrize(("overrides", "named"), [
    (["algo=snes", "algo.center_learning_rate=1e308"], "center_learning_rate"),
    (["algo=snes", "algo.stdev_learning_rate=1e308"], "stdev_learning_rate"),
    (["algo=xnes", "algo.stdev_learning_rate=1e308"], "stdev_learning_rate"),
])
def test_a_diverged_search_stops_naming_the_rate(tmp_path, overrides, named):
    # the keys of the initial spread are named beside the rate
    with pytest.raises(ConfigError, match=rf"diverged in generation 1: .*algo\.{named}=1e\+308"
                                          rf".*algo\.radius_init=.*Fix: a smaller algo\.{named}, "
                                          r"or a smaller start \(algo\.radius_init, "
                                          r"algo\.center_init or problem\.initial_bounds\)\.$"):
        run(tiny(*overrides), run_dir=tmp_path / "run")
    assert not (tmp_path / "run" / "checkpoints").exists()  # nothing was saved


def test_a_search_diverging_later_keeps_the_last_finite_generation(tmp_path):
    class Explode(Callbacks):  # generation 2's update overflows the center
        def on_generation_end(self, runner, generation, status):
            runner.algorithm.center_lr = 1e308

    evaluated = []
    with pytest.raises(ConfigError, match="diverged in generation 2: its center"):
        runner = Runner(tiny("algo=snes", "generations=5"), run_dir=tmp_path,
                        callbacks=Explode())
        evaluate = runner._evaluate_center
        runner._evaluate_center = lambda: evaluated.append(runner.generation) or evaluate()
        runner.run()
    assert evaluated == [1] and len(metrics(tmp_path)) == 1
    for name in ("best.pt", "last.pt"):
        saved = torch.load(tmp_path / "checkpoints" / name, weights_only=True)["solution"]
        assert bool(torch.isfinite(saved).all())
    state = torch.load(tmp_path / "checkpoints" / "state.pt", weights_only=True)
    assert state["generation"] == 1


def test_a_diverged_search_keeps_its_finished_generations_to_resume_with_the_fix(tmp_path):
    """A divergence (a config error) saved nothing since the last checkpoint: with
    checkpoint_every=10 the run was lost, though its fix is a resume with a smaller rate."""
    from neurorun.config.resume import load_run_config

    class Explode(Callbacks):  # generation 3's update overflows the center
        def on_generation_end(self, runner, generation, status):
            if generation == 2:
                runner.algorithm.center_lr = 1e308

    with pytest.raises(ConfigError, match="diverged in generation 3: its center"):
        Runner(tiny("algo=snes", "generations=4", "checkpoint_every=10"), run_dir=tmp_path,
               callbacks=Explode()).run()
    assert torch.load(tmp_path / "checkpoints" / "state.pt",
                      weights_only=True)["generation"] == 2
    before = metrics(tmp_path)
    assert len(before) == 2
    result = run(load_run_config(tmp_path, ["algo.center_learning_rate=0.5"]), run_dir=tmp_path)
    assert result["generation"] == 4 and metrics(tmp_path)[:2] == before


def test_a_seed_changed_in_the_saved_config_is_refused_on_resume(tmp_path):
    """Resume keeps the run's seed (its random state is saved); a seed
    edited into .hydra/config.yaml is refused as seed= on the command line is."""
    from neurorun.config.resume import load_run_config
    from neurorun.record.layout import saved_config_path

    run_dir = tmp_path / "run"
    run(tiny("generations=2", "seed=3"), run_dir=run_dir)
    saved = OmegaConf.load(saved_config_path(run_dir))
    saved.seed = 4
    OmegaConf.save(saved, saved_config_path(run_dir))
    before = metrics(run_dir)
    with pytest.raises(ConfigError, match=r"seed=4 .*seed=3.*Fix:"):
        Runner(load_run_config(run_dir, ["generations=3"]), run_dir=run_dir)
    assert metrics(run_dir) == before  # nothing ran
    saved.seed = 3  # put back: resumes
    OmegaConf.save(saved, saved_config_path(run_dir))
    assert run(load_run_config(run_dir, ["generations=3"]), run_dir=run_dir)["generation"] == 3


def test_a_config_error_of_the_evaluator_comes_before_the_results_header(tmp_path, capsys,
                                                                          monkeypatch):
    """Parallel=ray refuses some settings only once ray is up (after the
    loggers started); the console's config and header come once everything is built."""
    import neurorun.loop.parts
    from neurorun.loggers.console import format_header

    def refuse(cfg, problem):
        raise ConfigError("parallel: refused")
    monkeypatch.setattr(neurorun.loop.parts, "make_evaluator", refuse)
    shown = ("debug=default", "logger.console.quiet=false", "logger.console.plain=true")
    with pytest.raises(ConfigError, match="refused"):
        Runner(compose_config(list(shown)), run_dir=tmp_path / "run")
    assert format_header().strip() not in capsys.readouterr().out
    monkeypatch.undo()
    run(compose_config([*shown, "generations=1"]), run_dir=tmp_path / "ok")
    assert format_header().strip() in capsys.readouterr().out  # still shown when it runs




def test_a_config_composed_with_hydras_node_runs_as_without_it(tmp_path):
    """`compose_config(..., hydra_config=True)` (to inspect Hydra's settings) runs as the
    run's config alone: Hydra's node needs a job to resolve, and is not saved."""
    with_hydra = compose_config(["debug=default", "logger.console.quiet=true"],
                                hydra_config=True)
    assert "hydra" in with_hydra
    run(with_hydra, run_dir=tmp_path / "a")
    run(tiny(), run_dir=tmp_path / "b")
    assert without_time(metrics(tmp_path / "a")) == without_time(metrics(tmp_path / "b"))
    assert "hydra" not in OmegaConf.load(tmp_path / "a" / ".hydra" / "config.yaml")
