"""The console's hints for a bare `neurorun env=<id>`: the env's note and the tuned preset
with how long one of its generations takes at the run's speed."""

from neurorun.cli.app import compose_config
from neurorun.cli.hints import PACE_GENERATION, PresetPace, preset_hint, preset_steps
from tests.cli.test_cli import neurorun


def test_a_preset_generation_is_counted_from_its_own_settings():
    # experiment=brax_humanoid samples until a generation made algo.num_interactions steps
    assert preset_steps(compose_config(["experiment=brax_humanoid"])) == (3_000_000, "at least")
    # a fixed popsize with an episode length: popsize x episodes x length at most (20 x 2 x 1000)
    cartpole = compose_config(["experiment=playground_cartpole_balance",
                               "problem.episode_length=1000", "problem.num_episodes=2"])
    assert preset_steps(cartpole) == (40_000, "at most")
    # the env's own time limit is not in the config: nothing to say
    assert preset_steps(compose_config(["experiment=hopper"])) is None


def test_the_pace_line_comes_once_with_the_preset_generation_time(capsys):
    pace = PresetPace("brax_humanoid", 3_000_000, "at least")
    for generation in (1, PACE_GENERATION, PACE_GENERATION + 1):
        pace.on_generation_end(None, generation, {"steps_per_s": 1500.0})
    lines = capsys.readouterr().err.splitlines()
    # 3,000,000 / 1,500 = 2,000 s = 33 min
    assert lines == ["neurorun: a generation of experiment=brax_humanoid makes at least "
                     "3,000,000 env steps: about 33 min each at this run's 1,500 steps/s"]
    # a preset generation shorter than a minute here needs no warning
    PresetPace("hopper", 30_000, "at most").on_generation_end(None, PACE_GENERATION,
                                                                {"steps_per_s": 1500.0})
    assert capsys.readouterr().err == ""


def test_no_other_recipe_is_named_for_an_algorithm_tuned_for_the_env(capsys):
    def compose(name):
        return compose_config([f"experiment={name}"])

    def algo(*overrides):  # the algo section of a bare run
        return compose_config(list(overrides)).algo

    # the headline: PGPE on brax humanoid runs env_algo/brax_humanoid/pgpe.yaml, the measured
    # settings; experiment=brax_humanoid is EvoTorch's PGPE recipe for a GPU: not named
    assert preset_hint("brax::humanoid", algo("algo=pgpe", "env=brax::humanoid"),
                       compose) is None
    assert capsys.readouterr().err == ""
    # an algorithm without settings for the env is pointed to the preset, with its pace
    pace = preset_hint("brax::humanoid", algo("algo=cmaes", "env=brax::humanoid"), compose)
    assert (pace.preset, pace.steps, pace.bound) == ("brax_humanoid", 3_000_000, "at least")
    assert "`neurorun experiment=brax_humanoid`" in capsys.readouterr().err
    # Walker2d's PGPE settings are tuned, but its preset is another algorithm (ARS): named
    preset_hint("Walker2d-v5", algo("env=Walker2d-v5"), compose)
    assert "Walker2d-v5 has a tuned preset: `neurorun experiment=walker2d`" in (
        capsys.readouterr().err)
    # Ant's env preset runs ARS with the settings experiment=ant runs (its budget differs): named
    preset_hint("Ant-v5", algo("env=Ant-v5"), compose)
    assert "Ant-v5 has a tuned preset: `neurorun experiment=ant`" in capsys.readouterr().err


def test_an_env_note_is_printed_once_as_the_run_starts(tmp_path):
    result = neurorun("debug=default", "env.note=survival pays 5 per step", "hydra.run.dir=run",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("neurorun: survival pays 5 per step\n") == 1
    # the brax humanoid preset says what its score means
    assert "5 per step" in compose_config(["env=brax::humanoid"]).env.note
