"""Config checks (config.checks.validate_config and the checks of the parts): each refusal is
one line naming the key, its value and the fix, before any env, logger or ray actor starts."""

import csv

import pytest

import neurorun.loop.build
from neurorun.common.errors import ConfigError
from neurorun.loop.runner import Runner, run
from tests.loop.test_runner import tiny


@pytest.fixture
def no_problem(monkeypatch):
    """Fail the test if anything tries to build the problem (and so an environment)."""
    def refuse(**kwargs):
        raise AssertionError("the problem was built before the config was checked")
    monkeypatch.setattr(neurorun.loop.build, "make_problem", refuse)


@pytest.mark.parametrize(("overrides", "expected"), [
    (["+algo.foo=1"], ["algo.foo=1", "no such key", "Fix:"]),
    # typos in added keys: refused with the closest key of that section
    (["+generation=3"], ["generation=3", "did you mean generations?", "Fix:"]),
    (["+algo.popsiz=10"], ["algo.popsiz=10", "did you mean algo.popsize?", "Fix:"]),
    (["+problem.num_episode=2"], ["did you mean problem.num_episodes?", "Fix:"]),
    (["+env.backnd=envpool"], ["env.backnd='envpool'", "did you mean env.backend?", "Fix:"]),
    # every section is declared, nested ones too
    (["+logger.console.plian=true"], ["logger.console.plian=True",
                                      "did you mean logger.console.plain?", "Fix:"]),
    (["+logger.wandb.projct=x"], ["did you mean logger.wandb.project?", "Fix:"]),
    (["+parallel.num_actor=2"], ["did you mean parallel.num_actors?", "Fix:"]),
    (["+network.netwrk_args.hidden=3"], ["did you mean network.network_args?", "Fix:"]),
    # values that failed deep inside torch or the env
    (["problem.device=cuda"], ["problem.device='cuda'", "no CUDA", "Fix: problem.device=cpu"]),
    (["problem.device=gpu"], ["problem.device='gpu'", "not a torch device", "Fix:"]),
    *[([f"problem.device={kind}"], [f"problem.device={kind!r}", f"cpu or cuda, not {kind}",
                                     "Fix: problem.device=cpu"])
      for kind in ("mps", "xpu", "meta")],
    (["problem.vectorization=bogus"], ["problem.vectorization='bogus'", "auto, native", "Fix:"]),
    (["problem.alive_bonus_schedule=abc"], ["problem.alive_bonus_schedule='abc'", "Fix:"]),
    (["problem.alive_bonus_schedule=[1,2,3,4]"], ["problem.alive_bonus_schedule=", "Fix:"]),
    (["algo.popsize=abc"], ["algo.popsize='abc'", "integer >= 1", "Fix:"]),
    (["algo.popsize=11"], ["algo.popsize=11", "even", "Fix:"]),
    (["algo.popsize=null"], ["algo.popsize=None", "no default population size", "Fix:"]),
    (["algo=ars", "algo.num_directions=3", "algo.top_directions=4", "algo.popsize=null"],
     ["algo.top_directions=4 > algo.num_directions=3", "Fix:"]),
    (["algo.stdev_init=0.1"], ["algo.stdev_init=0.1", "algo.radius_init=2.25", "Fix:"]),
    (["algo.center_learning_rate=-1"], ["algo.center_learning_rate=-1", "Fix:"]),
    (["generations=0"], ["generations=0", "integer >= 1", "Fix:"]),
    (["restart.min_improvement=null"], ["restart.min_improvement=None", "number >= 0", "Fix:"]),
    (["seed=1180591620717411303424"], ["seed=1180591620717411303424", "Fix:"]),
    (["algo.center_init=[a,b]"], ["algo.center_init=['a', 'b']", "list of numbers", "Fix:"]),
    (["env=tests.cli.failing_env:make"],  # debug=default cuts episodes at 50 steps
     ["problem.episode_length=50", "env factory", "Fix: problem.episode_length=null"]),
    (["env=tests.cli.failing_env:make", "problem.episode_length=null",
      "problem.episode_length_schedule=[[0,10]]"],
     ["problem.episode_length_schedule=[[0, 10]]", "env factory",
      "Fix: problem.episode_length_schedule=null"]),
    # ARS and OpenAI-ES options
    (["algo=ars", "algo.top_directions=6"], ["algo.top_directions=6 > algo.num_directions=5",
                                             "Fix:"]),  # debug=default: popsize 10, N = 5
    # settings of no optimizer were kept and never read
    (["algo.optimizer=null"], ["algo.optimizer_config={'max_speed':", "with algo.optimizer=null",
                               "Fix: algo.optimizer_config=null"]),
    (["algo=snes", "algo.optimizer_config.max_speed=5"],
     ["algo.optimizer_config={'max_speed': 5} with algo.optimizer=null", "Fix:"]),
    (["algo=ars", "algo.noise=0"], ["algo.noise=0", "> 0", "Fix:"]),
    (["algo=ars", "algo.step_size=-0.1"], ["algo.step_size=-0.1", "> 0", "Fix:"]),
    (["algo=cmaes", "algo.distributed=true", "parallel=ray"],
     ["algo.distributed=true with algo 'cmaes'", "D x D covariance", "algo=sep_cmaes", "Fix:"]),
    (["algo.distributed=maybe"], ["algo.distributed='maybe'", "true, false or auto", "Fix:"]),
    # ray's counts, checked before ray starts
    *[(["parallel=ray", f"parallel.num_actors={bad}"],
       [f"parallel.num_actors={shown}", "expected an integer >= 1", "Fix:"])
      for bad, shown in (("0", "0"), ("-2", "-2"), ("abc", "'abc'"), ("1.5", "1.5"))],
    (["parallel=ray", "parallel.subbatch_size=0"], ["parallel.subbatch_size=0", "Fix:"]),
    (["parallel=ray", "parallel.max_actor_restarts=-1"],
     ["parallel.max_actor_restarts=-1", "integer >= 0", "Fix: parallel.max_actor_restarts="]),
    (["algo=openai_es", "algo.popsize=5"], ["algo.popsize=5 with algo.symmetric=true", "even",
                                            "Fix:"]),
    (["torch_threads=0"], ["torch_threads=0", "integer in [1, 1024]", "Fix:"]),
    (["eval_every=0"], ["target_score=475", "eval_every=0", "Fix:"]),
    (["eval_every=5", "generations=3"],
     ["target_score=475", "eval_every=5 > generations=3: none would run", "Fix:"]),
    (["generations=null"], ["would never stop", "Fix:"]),
    # text for a boolean is not true
    *[([f"{key}={bad}", *more], [f"{key}={shown}", "expected true or false", "Fix:"])
      for key, bad, shown, more in (("problem.observation_normalization", "no", "'no'", []),
                                    ("logger.tensorboard.enabled", "no", "'no'", []),
                                    ("logger.console.quiet", "off", "'off'", []),
                                    ("logger.console.quiet", "maybe", "'maybe'", []),
                                    ("logger.console.plain", "yes", "'yes'", []),
                                    ("algo.symmetric", "no", "'no'", []),
                                    ("algo.separable", "0", "0", ["algo=cmaes"]))],
    # what crashed mid-run is refused before anything is built
    *[([f"algo={name}", f"algo.popsize={size}"], [f"algo.popsize={size}", ">= 4", "Fix:"])
      for name in ("cmaes", "sep_cmaes") for size in (1, 2, 3)],
    (["problem.alive_bonus_schedule=[1e308,1]"], ["problem.alive_bonus_schedule=", "Fix:"]),
    (["problem.alive_bonus_schedule=[5,nan]"], ["problem.alive_bonus_schedule=", "Fix:"]),
    # beyond float32 once summed over an episode: every fitness was inf
    (["problem.alive_bonus_schedule=[0,1e40]"], ["problem.alive_bonus_schedule=",
                                                 "a bonus up to 1e+06", "Fix:"]),
    (["problem.decrease_rewards_by=1e40"], ["problem.decrease_rewards_by=1e+40",
                                            "within +-1e+06", "Fix:"]),
    (["problem.decrease_rewards_by=inf"], ["problem.decrease_rewards_by=inf", "finite",
                                           "Fix:"]),
    (["problem.action_noise_stdev=nan"], ["problem.action_noise_stdev=nan", "Fix:"]),
    # interpolations that do not resolve, or resolve to text, name the key
    (["algo.center_learning_rate=${oc.env:NOPE_XYZ}"],
     ["algo.center_learning_rate='${oc.env:NOPE_XYZ}' cannot be resolved", "NOPE_XYZ", "Fix:"]),
    (["network.spec=${network.spec}"], ["network.spec='${network.spec}'", "Recursive", "Fix:"]),
    (["algo.center_learning_rate=${oc.env:HOME}"], ["algo.center_learning_rate=",
                                                    "expected a number", "Fix:"]),
    (["algo=ars", "algo.noise_table_size=abc"], ["algo.noise_table_size='abc'", "integer"]),
    # values that ran wrong, diverged or crashed late
    *[([f"algo.{key}={value}"], [f"algo.{key}={value}", "finite number > 0", "Fix:"])
      for key, value in (("stdev_max", -5), ("stdev_max", 0), ("stdev_min", -1),
                         ("stdev_min", 1e308), ("radius_init", 1e308))],
    *[([f"problem.initial_bounds={bounds}"], [f"problem.initial_bounds={shown}", "Fix:"])
      for bounds, shown in (("[-1e308,1e308]", "[-1e+308, 1e+308]"), ("[-inf,1]", "[-inf, 1]"))],
    (["problem.alive_bonus_schedule=[-5,1]"], ["problem.alive_bonus_schedule=[-5, 1]", "Fix:"]),
    (["problem.episode_length_schedule=[[0,500],[100,1000],[50,200]]"],
     ["problem.episode_length_schedule=", "its steps do not increase", "Fix:"]),
    (["problem.episode_length_schedule=[[0,-5]]"],
     ["problem.episode_length_schedule=[[0, -5]]", "out of range", "Fix:"]),
    (["problem.episode_length_schedule=[[0,abc]]"],
     ["problem.episode_length_schedule=[[0, 'abc']]", "whole numbers", "Fix:"]),
    (["problem.episode_length_schedule=500"],
     ["problem.episode_length_schedule=500", "[steps, length] pairs", "Fix:"]),
    (["problem.alive_bonus_schedule=[1.5,2]"],
     ["problem.alive_bonus_schedule=[1.5, 2]", "whole steps", "Fix:"]),
    # gymnasium's native and async vector envs end every episode together
    (["env=CartPole-v1", "env.backend=gymnasium", "problem.vectorization=native",
      "problem.episode_length_schedule=[[0,10]]"],
     ["problem.vectorization=native with problem.episode_length_schedule",
      "cannot end single episodes", "Fix: problem.vectorization=sync"]),
    # a floor of a normalization the run does not do
    (["problem.observation_min_variance=0"],
     ["problem.observation_min_variance=0 is the variance floor of observation normalization",
      "Fix: problem.observation_normalization=true"]),
    (["problem.observation_normalization=true", "problem.observation_min_variance=-0.5"],
     ["problem.observation_min_variance=-0.5: expected a finite number >= 0"]),
    # another optimizer's settings: how to drop them
    (["algo.optimizer=adam"], ["does not fit optimizer 'adam'",
                               "(algo.optimizer_config=null drops the others)"]),
    # a ray setting on parallel=local ran locally, unread
    (["+parallel.address=auto"], ["parallel.address=auto is a setting of parallel=ray",
                                  "(parallel=local). Fix: parallel=ray to use it"]),
    (["parallel.num_actors=4"], ["parallel.num_actors=4 is a setting of parallel=ray"]),
    # a mapping is written as an override writes it, not as Python's dict
    (["+parallel.actor_config={num_cpus:1,memory:null}"],
     ["parallel.actor_config={num_cpus:1, memory:null} is a setting of parallel=ray"]),
    # refused before the run (it started, then failed in generation 1)
    (["env=Pendulum-v1", "env.backend=gymnasium", "problem.vectorization=native"],
     ["problem.vectorization=native: gymnasium has no vector env of its own for 'Pendulum-v1'",
      "Fix: problem.vectorization=auto"]),
    (["problem.alive_bonus_schedule=[400,700,-1]"],
     ["problem.alive_bonus_schedule=[400, 700, -1]", "a bonus of -1 < 0", "decrease_rewards_by"]),
    (["torch_threads=100000"], ["torch_threads=100000", "in [1, 1024]", "Fix:"]),
    (["env.num_threads=100000"], ["env.num_threads=100000", "in [1, 1024]", "Fix:"]),
    # threading's wait overflowed past ~292 years (OverflowError); a
    # tracker's bound is checked with the config, enabled or not
    *[([f"logger.{name}.timeout_s={value}"], [f"logger.{name}.timeout_s={shown}",
                                              "at most 86400 (a day)", "Fix:"])
      for name, value, shown in (("mlflow", "1e10", "10000000000.0"),
                                 ("tensorboard", "86401", "86401"), ("wandb", "0", "0"))],

    # a value of the wrong type is told what the key takes, as a wrong value of the right type
    (["problem.vectorization=null"], ["problem.vectorization=None", "auto, native, sync, async",
                                      "Fix: problem.vectorization=auto"]),
    (["logger.video_format=5"], ["logger.video_format=5: expected gif or mp4",
                                 "Fix: logger.video_format=gif"]),
    (["objective=5"], ["objective=5: expected one of best_center_eval",
                       "Fix: objective=best_center_eval"]),
    (["problem.device=1"], ["problem.device=1: not a torch device", "Fix: problem.device=cpu"]),
    # a count too large for a float is a count out of range, not an OverflowError
    ([f"seed={10**400}"], [f"seed={10**400}: expected an integer in [0, {2**63 - 1}]", "Fix:"]),
])
def test_config_errors_name_key_value_and_fix_before_any_env(no_problem, tmp_path, overrides,
                                                             expected):
    with pytest.raises(ConfigError) as caught:
        Runner(tiny(*overrides), run_dir=tmp_path / "run")
    for text in expected:
        assert text in str(caught.value)
    assert not (tmp_path / "run").exists()


def test_a_ray_run_resumed_in_this_process_keeps_its_ray_keys(tmp_path):
    """`resume=<ray run> parallel.name=local` passed before ray settings were refused on
    parallel=local; a resume cannot drop them (nor pick another parallel= group)."""
    from neurorun.config.checks import validate_config

    validate_config(tiny("parallel=ray", "parallel.name=local"))  # ray.yaml's num_actors: max
    validate_config(tiny("parallel=ray", "parallel.name=local", "parallel.address=auto",
                         f"resume={tmp_path}"))
    with pytest.raises(ConfigError, match="parallel.address=auto is a setting of parallel=ray"):
        validate_config(tiny("parallel=ray", "parallel.name=local", "parallel.address=auto"))


@pytest.mark.parametrize("name", ["pgpe", "cem", "snes", "xnes", "cmaes", "sep_cmaes", "ars",
                                  "openai_es"])
def test_the_config_check_builds_no_algorithm(monkeypatch, name):
    """The algorithm is built once, for the sized problem: the check before any env reads its
    options by the algorithm's class alone."""
    from neurorun.algorithms import ALGORITHMS, SearchAlgorithm
    from neurorun.config.checks import validate_config

    def refuse(self, *args, **kwargs):
        raise AssertionError("an algorithm was built by the config check")
    monkeypatch.setattr(SearchAlgorithm, "__init__", refuse)
    assert sorted(ALGORITHMS) == sorted(("pgpe", "cem", "snes", "xnes", "cmaes", "sep_cmaes",
                                         "ars", "openai_es"))
    assert validate_config(tiny(f"algo={name}")).algo.name == name


def test_bad_network_string_names_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"network\.spec='Linear\(obs_length'"):
        Runner(tiny("network.spec='Linear(obs_length'"), run_dir=tmp_path)


@pytest.mark.parametrize("overrides", [
    ["network.spec=neurorun.nets:Nope"],
    ["env.id=neurorun.nets:Nope", "problem.episode_length=null"],
])
def test_a_factory_missing_from_its_module_is_a_config_error(overrides, tmp_path):
    """It was an AttributeError, 'the run failed' (exit 1), where a missing module was this."""
    with pytest.raises(ConfigError, match=r"'neurorun.nets:Nope': module 'neurorun.nets' has "
                                          r"no attribute 'Nope'.*check the spelling"):
        Runner(tiny(*overrides), run_dir=tmp_path)


def test_an_env_factory_that_is_not_callable_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"env 'neurorun.problems.options:REFERENCE_INITIAL_"
                                          r"BOUNDS': \(-1e-05, 1e-05\) is not callable"):
        Runner(tiny("env.id=neurorun.problems.options:REFERENCE_INITIAL_BOUNDS",
                    "problem.episode_length=null"), run_dir=tmp_path)


def test_missing_tracker_is_a_config_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "wandb", None)
    with pytest.raises(ConfigError, match=r"pip install neurorun\[wandb\]"):
        Runner(tiny("logger.wandb.enabled=true"), run_dir=tmp_path)


ON_RAY = pytest.mark.extras("ray")  # the config check of parallel=ray asks for ray installed


@pytest.mark.parametrize(("overrides", "expected"), [
    ([], False),
    pytest.param(["parallel=ray"], True, marks=ON_RAY),
    pytest.param(["parallel=ray", "algo=ars"], True, marks=ON_RAY),
    pytest.param(["parallel=ray", "algo=cmaes"], False, marks=ON_RAY),
    pytest.param(["parallel=ray", "algo.distributed=false"], False, marks=ON_RAY),
    pytest.param(["parallel=ray", "algo=sep_cmaes", "algo.distributed=true"], True, marks=ON_RAY)])
def test_distributed_auto_means_on_ray_where_the_algorithm_distributes(overrides, expected):
    from neurorun.algorithms import ALGORITHMS
    from neurorun.config.checks import distributed_mode, validate_config

    config = validate_config(tiny(*overrides))
    assert distributed_mode(config, ALGORITHMS[config.algo.name]) is expected


@pytest.mark.parametrize(("overrides", "expected"), [
    (["algo.distributed=true"], "Fix: add parallel=ray"),
    (["algo=cmaes", "algo.distributed=true", "parallel=ray"],
     "algo .cmaes.: its full D x D covariance"),
])
def test_distributed_mode_is_checked_before_any_actor_starts(tmp_path, monkeypatch, overrides,
                                                             expected):
    import neurorun.loop.build

    def refuse(*args, **kwargs):
        raise AssertionError("the evaluator was built before the config was checked")

    monkeypatch.setattr(neurorun.loop.build, "make_evaluator", refuse)
    monkeypatch.setattr("neurorun.loop.parts.make_evaluator", refuse)
    with pytest.raises(ConfigError, match=expected):
        Runner(tiny(*overrides), run_dir=tmp_path)


def test_a_list_where_the_schema_has_a_mapping_is_a_config_error(tmp_path):
    cfg = tiny()  # as a Python user may hand one over (Hydra refuses it on the command line)
    cfg.env.env_config = [1]
    with pytest.raises(ConfigError, match=r"env.env_config=\[1\]: expected a mapping"):
        run(cfg, run_dir=tmp_path / "run")


# episode counts whose per-episode results cannot fit the memory are
# refused with the largest count that fits, before any env runs (num_episodes=1e11 failed
# mid-run with a MemoryError; eval_episodes=1e12 sat in generation 1 growing)
@pytest.mark.parametrize("key", ["problem.num_episodes", "eval_episodes"])
def test_episode_counts_that_cannot_fit_are_refused_before_any_env(tmp_path, key):
    with pytest.raises(ConfigError, match=rf"^{key}=100000000000: .* GB .*Fix: "
                                          rf"{key}=[1-9][\d,]* or less"):
        Runner(tiny(f"{key}=100000000000"), run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("every", ["eval_every=0", "eval_every=3"])  # 3 > generations=2
def test_eval_episodes_are_not_sized_where_no_center_is_evaluated(tmp_path, every):
    """eval_every=3 with generations=2 evaluates no center, yet its eval_episodes were sized
    and the run refused for memory it would never use."""
    Runner(tiny(every, "generations=2", "target_score=null", "eval_episodes=100000000000"),
           run_dir=tmp_path / "run").run()
    assert (tmp_path / "run" / "checkpoints" / "last.pt").exists()


def test_a_noise_table_is_checked_against_the_real_solution_length_and_popsize(tmp_path):
    """CartPole's linear policy has D = 4 x 2 + 2 = 10 weights and the debug popsize is 10: a
    table of 19 numbers holds 10 windows of 10, one a sample; the check reads the run's
    solution length, not a stand-in's. A table of D numbers was accepted and gave every sample
    the same noise."""
    table = ("algo.noise_source=table", "generations=1")
    Runner(tiny(*table, "algo.noise_table_size=19"), run_dir=tmp_path / "fits").run()
    for size in (10, 18):
        with pytest.raises(ConfigError, match=rf"algo.noise_table_size={size} holds {size - 9} "
                                              r"window\(s\) of the solution length 10, fewer "
                                              r"than the popsize 10.*Fix: algo.noise_table_size "
                                              r">= 19"):
            Runner(tiny(*table, f"algo.noise_table_size={size}"), run_dir=tmp_path / "few")
    with pytest.raises(ConfigError, match=r"algo.noise_table_size=9; expected an integer >= "
                                          r"the solution length 10\. Fix"):
        Runner(tiny(*table, "algo.noise_table_size=9"), run_dir=tmp_path / "short")


def test_a_popsize_max_below_popsize_is_refused(tmp_path):
    """`algo.popsize=10 algo.popsize_max=4` ran, taking 10 a generation."""
    with pytest.raises(ConfigError, match=r"^algo=pgpe: algo.popsize_max=4 is below "
                                          r"algo.popsize=10, which a generation takes at least\. "
                                          r"Fix: algo.popsize_max=10 or more, or null$"):
        Runner(tiny("algo.popsize=10", "algo.popsize_max=4", "algo.num_interactions=100"),
               run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_steps_to_target_without_a_budget_is_warned_of(tmp_path, caplog):
    """Without max_interactions a short miss (-2 x few steps) outranks a late hit."""
    import logging

    from neurorun.config.checks import validate_config

    for budget, said in ((None, 1), (1000, 0)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="neurorun"):
            validate_config(tiny("objective=neg_interactions_to_target",
                                 f"max_interactions={'null' if budget is None else budget}"))
        assert sum("a short miss can outrank a late hit" in r.getMessage()
                   for r in caplog.records) == said


def test_a_noise_table_size_with_seeded_noise_is_said_to_be_ignored(tmp_path, caplog):
    """noise_table_size went unused without a word with noise_source=seeds (a
    sweep over both sources keeps one size: a warning, not a refusal)."""
    import logging

    with caplog.at_level(logging.WARNING, logger="neurorun"):
        run(tiny("algo.noise_source=seeds", "algo.noise_table_size=1000", "generations=1"),
            run_dir=tmp_path / "seeds")
    said = [r.getMessage() for r in caplog.records if "noise_table_size" in r.getMessage()]
    assert said == ["algo.noise_table_size=1000 is ignored: algo.noise_source=seeds draws each "
                    "sample from a seed of its own, with no table. Fix: algo.noise_source=table "
                    "to use a table, or algo.noise_table_size=null"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="neurorun"):
        run(tiny("algo.noise_source=table", "algo.noise_table_size=1000", "generations=1"),
            run_dir=tmp_path / "table")
    assert not [r for r in caplog.records if "noise_table_size" in r.getMessage()]


def test_a_popsize_max_without_an_adaptive_popsize_is_said_to_be_ignored(tmp_path, capfd):
    """algo.popsize_max went unused without a word where algo.num_interactions is null."""
    run(tiny("algo.popsize_max=40", "generations=1"), run_dir=tmp_path / "fixed")
    said = [line for line in capfd.readouterr().err.splitlines() if "popsize_max" in line]
    assert said == ["neurorun: algo.popsize_max=40 is ignored: only an adaptive popsize reads "
                    "it, and algo.num_interactions is null. Fix: algo.num_interactions=<env "
                    "steps a generation takes> to adapt the popsize, or algo.popsize_max=null"]
    run(tiny("algo.popsize_max=40", "algo.num_interactions=100", "generations=1"),
        run_dir=tmp_path / "adaptive")
    assert "popsize_max" not in capfd.readouterr().err
    # room for one round of whole rounds: the popsize never grew, without a word
    run(tiny("algo.popsize=4", "algo.popsize_max=7", "algo.num_interactions=100000",
             "generations=1"), run_dir=tmp_path / "one_round")
    said = [line for line in capfd.readouterr().err.splitlines() if "is ignored" in line]
    assert said == ["neurorun: algo.num_interactions=100000 is ignored: a generation samples "
                    "whole rounds of algo.popsize=4, and algo.popsize_max=7 leaves room for "
                    "one. Fix: algo.popsize_max=8 or more to adapt the popsize, or "
                    "algo.num_interactions=null"]
    assert [int(row["popsize"]) for row in csv.DictReader(
        (tmp_path / "one_round" / "metrics.csv").open())] == [4]  # one round, as said
    from neurorun.config.checks import validate_config

    # a sweep's jobs checked up front say nothing: each job says it as it runs
    validate_config(tiny("algo.popsize_max=40"), machine=False)
    assert "popsize_max" not in capfd.readouterr().err


@pytest.mark.parametrize(("overrides", "said"), [
    (["restart.patience=1", "restart.popsize_factor=50"],
     "neurorun: restart.popsize_factor=50 is ignored: restart.strategy=same restarts at the "
     "same popsize. Fix: restart.strategy=ipop (or bipop) to grow it, or leave "
     "restart.popsize_factor out"),
    (["restart.min_improvement=0.5"],
     "neurorun: restart.min_improvement=0.5 is ignored: restart.patience=null never restarts. "
     "Fix: restart.patience=5 to restart a stalled search, or leave restart.min_improvement "
     "out"),
    (["restart.popsize_factor=50"],  # it advised strategy=ipop, refused without a patience
     "neurorun: restart.popsize_factor=50 is ignored: restart.patience=null never restarts. "
     "Fix: restart.patience=5 to restart a stalled search, or leave restart.popsize_factor "
     "out"),
    (["restart.patience=1", "restart.popsize_factor=50", "restart.strategy=ipop"], None),
    (["restart.patience=1", "restart.min_improvement=0.5"], None),
])
def test_a_restart_setting_the_others_leave_unread_is_said_to_be_ignored(capfd, overrides,
                                                                          said):
    """restart.popsize_factor with strategy=same, and min_improvement without a patience,
    went unused without a word."""
    from neurorun.config.checks import validate_config

    validate_config(tiny("generations=4", *overrides))
    lines = [line for line in capfd.readouterr().err.splitlines() if "is ignored" in line]
    assert lines == ([] if said is None else [said])


@pytest.mark.parametrize(("overrides", "said"), [
    (["algo=snes", "algo.scale_learning_rate=false"],
     "neurorun: algo.scale_learning_rate=false is ignored: it says how a given "
     "algo.stdev_learning_rate is read, and none is given (the default rate is used). Fix: "
     "algo.stdev_learning_rate=<rate> to give one, or leave algo.scale_learning_rate out"),
    (["algo=xnes", "algo.scale_learning_rate=false", "algo.stdev_learning_rate=0.5"], None),
    # a misspelt constant: the network string's own "hidden" is named
    (["network=mlp", "network.network_args.hiddn=8"],
     "neurorun: network.network_args.hiddn=8 is ignored: network.spec does not use it. Fix: "
     "network.network_args.hidden=8 if that is the one meant"),
    (["network=mlp", "network.spec='Linear(obs_length, act_length)'"],
     "neurorun: network.network_args.hidden=16 is ignored: network.spec does not use it. Fix: "
     "use it in network.spec, or drop it with ~network.network_args.hidden"),
    (["network=mlp", "network.spec='Linear(obs_length, act_length)'",
      "~network.network_args.hidden"], None),
    (["network=mlp2"], None),
])
def test_an_algo_or_network_setting_left_unread_is_said_to_be_ignored(capfd, overrides, said):
    """SNES/XNES's scale_learning_rate without a stdev rate, and a network_args key the network
    string does not read (a typo), went unused without a word."""
    from neurorun.config.checks import validate_config

    validate_config(tiny("generations=4", *overrides))
    lines = [line for line in capfd.readouterr().err.splitlines() if "is ignored" in line]
    assert lines == ([] if said is None else [said])


COMPILED = "brax and Playground envs (their compiled evaluation)"


@pytest.mark.parametrize(("overrides", "said"), [
    (["problem.jit=false"], f"problem.jit=false is ignored: it is for {COMPILED}, and env "
                            "CartPole-v1 runs on gymnasium. Fix: problem.jit=true (its default)"),
    (["problem.devices=[0,1]"], f"problem.devices=[0, 1] is ignored: it is for {COMPILED}, "
                                "and env CartPole-v1 runs on gymnasium. Fix: "
                                "problem.devices=auto (its default)"),
    # a preset's value (problem=gymne: sync): the fix names the value, not the key's absence
    pytest.param(["env=envpool::CartPole-v1", "problem=gymne"],
                 "problem.vectorization=sync is ignored: it is for gymnasium's vector envs, and "
                 "env envpool::CartPole-v1 runs on EnvPool. Fix: problem.vectorization=auto "
                 "(its default)", marks=pytest.mark.extras("envpool")),
    pytest.param(["env=brax::inverted_pendulum", "problem.vectorization=async"],
                 "problem.vectorization=async is ignored: it is for gymnasium's vector envs, "
                 "and env brax::inverted_pendulum runs on brax. Fix: "
                 "problem.vectorization=auto (its default)", marks=pytest.mark.extras("jax")),
    (["problem.vectorization=sync"], None),  # read where they apply: nothing said
    pytest.param(["env=brax::inverted_pendulum", "problem.jit=false"], None,
                 marks=pytest.mark.extras("jax")),
])
def test_a_problem_setting_the_env_backend_leaves_unread_is_said_to_be_ignored(capfd, overrides,
                                                                                said):
    """problem.jit and problem.vectorization went unused without a word on a backend that
    does not read them (problem.devices was said, elsewhere, in other words)."""
    from neurorun.config.checks import validate_config

    validate_config(tiny("generations=4", *overrides))
    lines = [line for line in capfd.readouterr().err.splitlines() if "is ignored" in line]
    assert lines == ([] if said is None else [f"neurorun: {said}"])


@pytest.mark.parametrize(("overrides", "said"), [
    (["problem.initial_bounds=[0.5,0.5]", "algo.center_init=0"],
     "neurorun: problem.initial_bounds=[0.5, 0.5] is ignored: algo.center_init sets where the "
     "search starts (restarts too). Fix: problem.initial_bounds=null, or algo.center_init=null "
     "to draw the start from the bounds"),
    (["problem.initial_bounds=[0.5,0.5]"], None),  # the start is drawn from them
    (["algo.center_init=0"], None),
])
def test_initial_bounds_beside_a_center_init_are_said_to_be_ignored(capfd, overrides, said):
    """The run started at center_init without a word about the bounds given."""
    from neurorun.config.checks import validate_config

    validate_config(tiny("generations=4", *overrides))
    lines = [line for line in capfd.readouterr().err.splitlines() if "is ignored" in line]
    assert lines == ([] if said is None else [said])


def test_a_list_for_each_parameter_is_checked_entry_by_entry_before_the_problem_is_sized(
        no_problem):
    """The check needs no solution length: a list passes it whatever its length, and a bad
    entry anywhere in it is refused before any env."""
    from neurorun.config.checks import validate_config

    tens = "[" + ",".join(["0.1"] * 10) + "]"  # CartPole's linear policy: D = 10
    for key in ("center_init", "stdev_max_change", "stdev_min"):
        validate_config(tiny(f"algo.{key}={tens}"))
    for key, bad in (("stdev_min", "[0.1,0.1,-1]"), ("stdev_max_change", "[0.2,1.5]"),
                     ("center_init", "[0,inf]")):
        with pytest.raises(ConfigError, match=rf"^algo=pgpe: algo.{key}=\[.*Fix:"):
            validate_config(tiny(f"algo.{key}={bad}"))


def test_a_list_of_the_wrong_length_is_refused_once_the_problem_is_sized(tmp_path):
    with pytest.raises(ConfigError, match=r"^algo=pgpe: algo.stdev_min=<3 values>: expected one "
                                          r"value, or 10 .*Fix: give one value or 10\.$"):
        Runner(tiny("algo.stdev_min=[0.1,0.1,0.1]"), run_dir=tmp_path / "run")


def test_a_null_that_means_the_default_is_taken(tmp_path):
    """null where the part reads it as its default: no shaping, MLflow's and W&B's names."""
    from neurorun.config.checks import validate_config

    config = validate_config(tiny("problem.decrease_rewards_by=null", "logger.wandb.mode=null",
                                  "logger.mlflow.experiment=null", "logger.wandb.project=null"))
    assert config.problem.decrease_rewards_by is None
    run(tiny("problem.decrease_rewards_by=null", "generations=1"), run_dir=tmp_path / "run")


def test_a_plain_dict_without_an_env_section_runs_with_the_declared_defaults(tmp_path):
    """run() from Python with only what differs from the declared defaults: CartPole-v1, whose
    backend auto chooses is written into the config the run saves."""
    from omegaconf import OmegaConf

    from neurorun.record.layout import saved_config_path

    run({"generations": 1, "logger": {"console": {"quiet": True}},
         "algo": {"name": "snes", "popsize": 4, "stdev_init": 0.1}}, run_dir=tmp_path / "run")
    saved = OmegaConf.load(saved_config_path(tmp_path / "run"))
    assert saved.env.backend == "gymnasium"  # CartPole stays on gymnasium (docs/backends.md)


def test_the_run_entry_prepares_before_this_machine_is_asked(monkeypatch):
    """The host device count is set before the machine's checks, whose GPU check of a jax env
    starts jax (XLA reads the count once)."""
    from neurorun.config import checks

    calls = []
    monkeypatch.setattr(checks, "check_machine", lambda config: calls.append("machine"))
    checks.validate_config(tiny(), prepare=lambda config: calls.append(("prepare", config.seed)))
    assert calls == [("prepare", 0), "machine"]


def test_a_key_read_alone_names_the_key_that_does_not_resolve():
    """What the command reads before the whole config (resume, env.id, algo.name)."""
    from omegaconf import OmegaConf

    from neurorun.config.checks import read_key

    cfg = OmegaConf.create({"resume": "${oc.env:NOPE_XYZ}", "env": {"id": "CartPole-v1"}})
    assert read_key(cfg, "env.id") == "CartPole-v1" and read_key(cfg, "algo.name") is None
    with pytest.raises(ConfigError, match=r"^resume='\$\{oc.env:NOPE_XYZ\}' cannot be "
                                          r"resolved .*Fix: give resume a value"):
        read_key(cfg, "resume")
