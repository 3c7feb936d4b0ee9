"""OpenAI-ES (Salimans et al. 2017): one update worked out by hand, convergence, bad input."""

import pytest
import torch

from neurorun.algorithms import make_algorithm

from .conftest import evaluations_to_target, rosenbrock, sphere


def _es(**options):
    settings = {"solution_length": 3, "popsize": 4, "stdev_init": 0.5, "center_learning_rate": 0.1,
                "l2coeff": 0.01, "center_init": [1.0, -2.0, 0.5], "seed": 0,
                "dtype": torch.float64}
    return make_algorithm("openai_es", **{**settings, **options})


def _hand_gradient(samples, center, sigma, l2coeff):
    """Fitness (4, 1, 2, 3): centered ranks 0.5, -0.5, -1/6, 1/6 on rows c + s e0, c - s e0,
    c + s e1, c - s e1, so sum_i F_i e_i = 0.5 e0 + 0.5 e0 - e1 / 6 - e1 / 6 = e0 - e1 / 3."""
    e0 = (samples[0] - center) / sigma
    e1 = (samples[2] - center) / sigma
    return (e0 - e1 / 3) / (4 * sigma) - l2coeff * center


FITNESS = torch.tensor([4.0, 1.0, 2.0, 3.0])


def test_one_plain_step_by_hand():
    algo = _es(optimizer=None)
    center = algo.center.clone()
    samples = algo.ask()
    assert torch.allclose(samples[1], 2 * center - samples[0])  # mirrored pairs
    algo.tell(FITNESS)
    expected = center + 0.1 * _hand_gradient(samples, center, 0.5, 0.01)
    assert torch.allclose(algo.center, expected)
    assert torch.equal(algo.stdev, torch.full((3,), 0.5, dtype=torch.float64))  # sigma is fixed


def test_first_adam_step_is_the_learning_rate_times_the_gradient_sign():
    algo = _es()  # Adam: m_hat = g, v_hat = g^2 at t = 1, so the step is lr * g / (|g| + eps)
    center = algo.center.clone()
    samples = algo.ask()
    algo.tell(FITNESS)
    gradient = _hand_gradient(samples, center, 0.5, 0.01)
    assert torch.allclose(algo.center, center + 0.1 * torch.sign(gradient), atol=1e-6)


def test_weight_decay_alone_when_every_pair_returns_the_same():
    algo = _es(optimizer=None, l2coeff=0.5, ranking_method="raw")
    algo.ask()
    algo.tell(torch.ones(4))  # f(c + s e) = f(c - s e): the pair's terms cancel, decay is left
    # center + lr * (-l2coeff * center) = center * (1 - 0.1 * 0.5)
    assert torch.allclose(algo.center, torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) * 0.95)


def test_converges_on_the_sphere():
    algo = make_algorithm("openai_es", solution_length=10, popsize=20, stdev_init=0.1,
                          center_learning_rate=0.05, l2coeff=0.0, center_init=1.0,
                          objective_sense="min", seed=0)
    assert evaluations_to_target(algo, sphere, target=1e-2, max_generations=2_000) is not None


def test_converges_on_rosenbrock():
    algo = make_algorithm("openai_es", solution_length=2, popsize=20, stdev_init=0.02,
                          center_learning_rate=0.01, l2coeff=0.0, objective_sense="min", seed=0,
                          dtype=torch.float64)
    assert evaluations_to_target(algo, rosenbrock, target=1e-2, max_generations=20_000) is not None


@pytest.mark.parametrize(("options", "message"), [
    ({"popsize": 5}, r"popsize=5 with symmetric=true.*even.*Fix"),
    ({"l2coeff": -1.0}, r"l2coeff=-1.0.*>= 0.*Fix"),
    ({"center_learning_rate": 0.0}, r"center_learning_rate=0.0.*Fix"),
    ({"stdev_learning_rate": 0.1}, r"unknown option.*stdev_learning_rate.*Fix"),
])
def test_bad_settings_name_the_key_and_the_fix(options, message):
    with pytest.raises(ValueError, match=message):
        _es(**options)
