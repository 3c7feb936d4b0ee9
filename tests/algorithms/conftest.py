"""Shared builders for the algorithm tests."""

import pytest
import torch

from neurorun.algorithms import make_algorithm

# Options each algorithm needs beyond the common ones (these have no defaults for them).
REQUIRED = {
    "pgpe": {"popsize": 10, "center_learning_rate": 0.1, "stdev_learning_rate": 0.1},
    "cem": {"popsize": 10, "parenthood_ratio": 0.5},
    "ars": {"popsize": 10, "step_size": 0.1, "noise": 1.0},
    "openai_es": {"popsize": 10, "center_learning_rate": 0.1},
}
FIXED_NOISE = {"ars"}  # explores with `noise`, so it takes no stdev_init


def sphere(x: torch.Tensor) -> torch.Tensor:
    return x.square().sum(dim=-1)


def rosenbrock(x: torch.Tensor) -> torch.Tensor:
    return (100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2).sum(dim=-1)


@pytest.fixture(autouse=True)
def one_thread():
    """Small-matrix work is fastest on one thread; spare threads spin under CI load (40x)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def build():
    """build(name, **options): an algorithm on a 5-D problem, stdev 1, seed 0."""

    def _build(name, **options):
        stdev = {} if name in FIXED_NOISE else {"stdev_init": 1.0}
        settings = {"solution_length": 5, **stdev, "seed": 0, **REQUIRED.get(name, {}),
                    **options}
        return make_algorithm(name, **settings)

    return _build


def evaluations_to_target(algo, fn, *, target=1e-6, max_generations=5_000):
    """Evaluations until fn(center) < target (None if never), minimizing fn."""
    evaluations = 0
    for _ in range(max_generations):
        samples = algo.ask()
        algo.tell(fn(samples))
        evaluations += len(samples)
        if float(fn(algo.center)) < target:
            return evaluations
    return None
