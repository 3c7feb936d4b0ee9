"""The ask/tell contract, parametrized over every registered algorithm."""

import io
from importlib import resources
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from neurorun.algorithms import ALGORITHMS, make_algorithm
from neurorun.algorithms.adaptive import run_rounds
from neurorun.algorithms.noise import weighted_sums

from .conftest import sphere

NAMES = sorted(ALGORITHMS)


def test_every_registered_algorithm_is_an_algo_option_of_its_own_name():
    """`algo=<name>` picks the packaged conf/algo/<name>.yaml, whose `name` is the registry's
    key: a registered algorithm without its config could not be chosen, nor one misnamed."""
    folder = resources.files("neurorun.conf").joinpath("algo")
    configs = {Path(entry.name).stem: OmegaConf.create(entry.read_text()).name
               for entry in folder.iterdir() if entry.name.endswith(".yaml")}
    assert configs == {name: name for name in ALGORITHMS}
    assert all(cls.name == name for name, cls in ALGORITHMS.items())


def test_readme_lists_exactly_the_registered_algorithms():
    """README's first paragraph names the algorithms: one name per row of the table, no
    other (a new row without its name there, or a name left after its row went, fails)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    listed = " ".join(readme.split("\n\n")[1].split())  # the first paragraph, on one line
    names = listed.split("evolution strategies — ", 1)[1].split(" — ", 1)[0]
    head, last = names.rsplit(" and ", 1)
    assert sorted([*head.split(", "), last]) == sorted(cls.title for cls in ALGORITHMS.values())


@pytest.mark.parametrize("name", NAMES)
def test_ask_shape_dtype_and_status(name, build):
    algo = build(name, dtype=torch.float64, popsize=6)
    samples = algo.ask()
    assert samples.shape == (6, 5) and samples.dtype == torch.float64
    assert algo.center.shape == (5,)
    status = algo.tell(sphere(samples))
    assert status["popsize"] == 6 and status["generation"] == 1
    assert status["mean_eval"] == pytest.approx(float(sphere(samples).mean()))
    assert status["stdev_mean"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_adaptive_popsize_takes_fitness_of_all_pending(name, build):
    algo = build(name, popsize=4, num_interactions=100, popsize_max=12)
    adaptive = algo.options.adaptive
    assert (adaptive.num_interactions, adaptive.popsize_max) == (100, 12)
    batches = [algo.ask(), algo.ask(), algo.ask(4)]
    fitness = sphere(torch.cat(batches))
    with pytest.raises(ValueError, match="fitness has 8 values; expected 12"):
        algo.tell(fitness[:8])
    algo.tell(fitness)  # the refused tell left the pending samples in place
    assert algo.status["popsize"] == 12
    assert algo.status["mean_eval"] == pytest.approx(float(fitness.mean()))


@pytest.mark.parametrize(("adaptive", "expected_firsts"), [
    ({}, [0]),  # no adaptive popsize: one round
    ({"num_interactions": 45}, [0, 4, 8]),  # 20, 41, 60 >= 45 steps
    ({"num_interactions": 41}, [0, 4]),  # 41 steps are enough
    ({"num_interactions": 1000, "popsize_max": 8}, [0, 4]),  # 8 samples reach popsize_max
    ({"num_interactions": 1000, "popsize_max": 11}, [0, 4]),  # a third round would make 12
])
def test_rounds_go_on_until_enough_steps_or_popsize_max(adaptive, expected_firsts, build):
    algo = build("pgpe", popsize=4, **adaptive)
    steps = iter([20, 21, 19, 30])
    firsts = []

    def evaluate_round(first):
        firsts.append(first)
        return 4, next(steps)

    run_rounds(algo, evaluate_round)
    assert firsts == expected_firsts


def _run(algo, generations):
    for _ in range(generations):
        algo.tell(sphere(algo.ask()))
    return algo.ask()


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_continues_bit_for_bit(name, build):
    original = build(name, seed=7)
    pending = _run(original, 3)  # saved mid-generation: the pending samples travel too
    buffer = io.BytesIO()
    torch.save(original.state_dict(), buffer)
    original.tell(sphere(pending))
    continued = _run(original, 3)
    restored = build(name, seed=123)
    buffer.seek(0)
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    restored.tell(sphere(pending))
    assert torch.equal(_run(restored, 3), continued)
    assert torch.equal(restored.center, original.center)
    assert restored.status == original.status


@pytest.mark.parametrize("name", NAMES)
def test_the_state_holds_the_record_the_algorithms_declare(name, build):
    from neurorun.algorithms.record import AlgorithmRecord

    assert set(build(name, popsize=6).state_dict()) == set(AlgorithmRecord.__annotations__)


def _tensors(state, path=""):
    """Every tensor in a nested state dict, by its path."""
    if torch.is_tensor(state):
        return {path: state}
    items = state.items() if isinstance(state, dict) else enumerate(state) if isinstance(
        state, list | tuple) else ()
    return {k: v for key, item in items for k, v in _tensors(item, f"{path}/{key}").items()}


@pytest.mark.parametrize(("name", "options"), [(name, {}) for name in NAMES] + [
    ("pgpe", {"stdev_min": 0.5, "stdev_max": 1.2}), ("snes", {"stdev_max": 1.1})])
def test_a_state_taken_before_generations_is_not_changed_by_them(name, options, build):
    """The runner keeps the last finished generation's state without copying it (to save it
    if the next generation fails), so generations must never write into its tensors."""
    algo = build(name, seed=3, **options)
    algo.tell(sphere(_run(algo, 2)))
    state = algo.state_dict()
    before = {path: tensor.clone() for path, tensor in _tensors(state).items()}
    algo.tell(sphere(_run(algo, 4)))
    after = _tensors(state)
    assert after.keys() == before.keys() and len(before) >= 3
    for path, tensor in before.items():
        assert torch.equal(after[path], tensor), f"{name}: {path} was written in place"


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_run_and_min_equals_max_of_negated(name, build):
    maximizer = build(name, seed=3)
    minimizer = build(name, seed=3, objective_sense="min")
    for _ in range(3):
        maximizer.tell(-sphere(maximizer.ask()))
        minimizer.tell(sphere(minimizer.ask()))
    assert torch.equal(maximizer.center, minimizer.center)


@pytest.mark.parametrize("name", NAMES)
def test_nan_fitness_is_refused(name, build):
    algo = build(name)
    fitness = sphere(algo.ask())
    fitness[2] = float("nan")
    with pytest.raises(ValueError, match=r"NaN at indices \[2\].*Fix"):
        algo.tell(fitness)


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"ars"}))  # ARS: fixed `noise`
def test_radius_init_means_stdev_over_sqrt_d(name, build):
    algo = build(name, solution_length=16, stdev_init=None, radius_init=2.0)
    assert algo.status["stdev_mean"] == pytest.approx(0.5)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_option_suggests_the_closest(name, build):
    with pytest.raises(ValueError, match=r"stdev_inti=0.5 \(did you mean 'stdev_init'\?\)"):
        build(name, stdev_inti=0.5)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cuts", [[], [4], [2, 8]])
def test_the_update_from_sums_of_any_split_equals_tell(name, cuts, build):
    """What distributed mode does: regenerate each share's noise from (draw, first index),
    weigh the whole generation, add the shares' weighted sums, update (a popsize of 10 cut
    at ``cuts``: one, two or three actors)."""
    local, split = build(name, seed=5, popsize=10), build(name, seed=5, popsize=10)
    samples = local.ask()
    fitness = sphere(samples)
    local.tell(fitness)
    draw = split.begin_generation()
    bounds = list(zip([0, *cuts], [*cuts, 10], strict=True))
    noise = [split.noise_rows(draw, first, stop - first) for first, stop in bounds]
    assert torch.equal(torch.cat([split.samples(n) for n in noise]), samples)
    norms = torch.cat([n.square().sum(1) for n in noise]) if split.NEEDS_NORMS else None
    weights, shaped = split.generation_weights(fitness, norms, 10)
    parts = [weighted_sums(n, {k: w[first:stop] for k, w in weights.items()}, split.SUMS,
                           mirrored=split.mirrored)
             for n, (first, stop) in zip(noise, bounds, strict=True)]
    split.conclude({k: sum(p[k] for p in parts) for k in parts[0]}, weights, shaped, fitness)
    torch.testing.assert_close(split.center, local.center, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(split.stdev, local.stdev, rtol=1e-5, atol=1e-6)
    assert split.generation == local.generation == 1


def test_only_full_cmaes_is_not_distributable():
    assert [name for name, cls in ALGORITHMS.items() if not cls.distributable] == ["cmaes"]


def test_unknown_algorithm_suggests_a_name():
    with pytest.raises(ValueError, match=r"'pgep' is unknown.*'pgpe'"):
        make_algorithm("pgep", solution_length=3)


def test_tell_before_ask_is_refused(build):
    with pytest.raises(ValueError, match="call ask"):
        build("snes").tell(torch.zeros(3))


def test_an_adaptive_generation_that_cannot_make_its_interactions_ends_and_says_so(
        build, caplog, monkeypatch):
    """`algo.num_interactions=1e9` without popsize_max: at most ROUNDS_MAX rounds (said once
    by the algorithm), and a generation still sampling says how far it got."""
    from neurorun.algorithms import adaptive

    algo = build("pgpe", popsize=4, num_interactions=10**9)
    monkeypatch.setattr(adaptive, "PROGRESS_S", 0.0)  # every round says how far it got
    rounds = []

    def evaluate_round(first):
        rounds.append(first)
        assert len(rounds) <= 5000, "the rounds went on"
        return 4, 10  # 4 samples, 10 steps: 10**9 steps are never made

    with caplog.at_level("INFO", logger="neurorun"):
        adaptive.run_rounds(algo, evaluate_round)
        adaptive.run_rounds(algo, evaluate_round)  # capped again, unsaid
    assert rounds == [4 * k for k in range(adaptive.ROUNDS_MAX)] * 2
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert said == ["generation 1 ends after 1000 rounds of popsize 4 (4,000 samples) with "
                    "10,000 of algo.num_interactions=1000000000 interactions, as every "
                    "generation will: without algo.popsize_max a generation takes at most 1000 "
                    "rounds. Fix: a smaller algo.num_interactions, or algo.popsize_max=<the most "
                    "samples a generation may take>"]
    progress = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert progress[0] == ("generation 1, adaptive popsize: 4 samples so far, 10 of "
                           "algo.num_interactions=1000000000 interactions (at most 4,000 "
                           "samples)")
    assert len(progress) == 2 * (adaptive.ROUNDS_MAX - 1)  # each round but the last, each time
