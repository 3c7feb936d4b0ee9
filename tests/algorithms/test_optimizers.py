"""Optimizer steps against hand arithmetic and torch.optim."""

import math
import re

import numpy as np
import pytest
import torch

from neurorun.algorithms.optimizers import SGD, Adam, ClipUp, make_optimizer

CPU = torch.device("cpu")


def _clipup(**kwargs):
    return ClipUp(2, CPU, torch.float64, **kwargs)


def test_clipup_steps_by_hand():
    opt = _clipup(lr=0.1)  # max_speed defaults to 2 * lr = 0.2, momentum 0.9
    assert opt.max_speed == pytest.approx(0.2)
    step1 = opt.step(torch.tensor([3.0, 4.0], dtype=torch.float64))
    np.testing.assert_allclose(step1, [0.06, 0.08])  # 0.1 * [3, 4] / 5
    step2 = opt.step(torch.tensor([0.0, 2.0], dtype=torch.float64))
    np.testing.assert_allclose(step2, [0.054, 0.172])  # 0.9 * [0.06, 0.08] + [0, 0.1]
    step3 = opt.step(torch.tensor([0.0, 2.0], dtype=torch.float64))
    unclipped = [0.9 * 0.054, 0.9 * 0.172 + 0.1]  # norm 0.2594 > 0.2: scaled to 0.2
    norm = math.hypot(*unclipped)
    np.testing.assert_allclose(step3, [0.2 * u / norm for u in unclipped])
    assert float(torch.linalg.vector_norm(opt.velocity)) == pytest.approx(0.2)


def test_clipup_zero_gradient_only_decays_velocity():
    opt = _clipup(lr=0.1, max_speed=1.0, momentum=0.5)
    opt.step(torch.tensor([1.0, 0.0], dtype=torch.float64))
    np.testing.assert_allclose(opt.step(torch.zeros(2, dtype=torch.float64)), [0.05, 0.0])


def test_clipup_speed_decay_shrinks_lr_and_max_speed_to_the_floor():
    # momentum 0 makes each step lr * scale * direction, clipped at max_speed * scale; the
    # scale is 0.5 ** t floored at min_speed / max_speed = 0.2
    opt = _clipup(lr=1.0, max_speed=0.8, momentum=0.0, speed_decay=0.5, min_speed=0.16)
    grad = torch.tensor([0.0, 3.0], dtype=torch.float64)
    speeds = [float(opt.step(grad)[1]) for _ in range(5)]
    np.testing.assert_allclose(speeds, [0.8, 0.4, 0.2, 0.16, 0.16])  # lr clipped at 0.8 x scale
    opt = _clipup(lr=0.1, max_speed=1.0, momentum=0.0, speed_decay=0.5)  # unclipped: lr x scale
    np.testing.assert_allclose([float(opt.step(grad)[1]) for _ in range(3)], [0.1, 0.05, 0.025])


def test_clipup_decay_continues_across_a_saved_state():
    grads = [torch.tensor([1.0, float(k)], dtype=torch.float64) for k in range(6)]
    whole = _clipup(lr=0.1, speed_decay=0.9, min_speed=0.05)
    expected = [whole.step(g) for g in grads]
    first = _clipup(lr=0.1, speed_decay=0.9, min_speed=0.05)
    for g in grads[:3]:
        first.step(g)
    resumed = _clipup(lr=0.1, speed_decay=0.9, min_speed=0.05)
    resumed.load_state_dict(first.state_dict())
    assert resumed.steps == 3
    for g, step in zip(grads[3:], expected[3:], strict=True):
        np.testing.assert_allclose(resumed.step(g), step, rtol=0, atol=0)


@pytest.mark.parametrize(("config", "message"), [
    ({"speed_decay": 0.0}, r"speed_decay=0.0; expected a factor in \(0, 1\].*Fix"),
    ({"speed_decay": 1.5}, r"speed_decay=1.5.*Fix"),
    ({"max_speed": 0.2, "min_speed": 0.3}, r"min_speed=0.3; expected 0 <= min_speed <= max_speed"),
])
def test_clipup_refuses_a_decay_outside_its_range(config, message):
    with pytest.raises(ValueError, match=message):
        make_optimizer("clipup", config, lr=0.1, length=2, device=CPU, dtype=torch.float32)


def _torch_ascent(optimizer_cls, gradients, **kwargs):
    """Steps torch.optim takes when minimizing -gradient (our optimizers ascend)."""
    param = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    optimizer = optimizer_cls([param], **kwargs)
    steps, before = [], param.detach().clone()
    for gradient in gradients:
        param.grad = -gradient
        optimizer.step()
        steps.append(param.detach() - before)
        before = param.detach().clone()
    return steps


@pytest.mark.parametrize(
    ("ours", "theirs", "kwargs"),
    [(Adam, torch.optim.Adam, {"lr": 0.01}), (SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9})],
)
def test_adam_and_sgd_match_torch_optim(ours, theirs, kwargs):
    gen = torch.Generator().manual_seed(0)
    gradients = [torch.randn(3, generator=gen, dtype=torch.float64) for _ in range(5)]
    opt = ours(3, CPU, torch.float64, **kwargs)
    for ours_step, torch_step in zip(
        [opt.step(g) for g in gradients], _torch_ascent(theirs, gradients, **kwargs), strict=True
    ):
        np.testing.assert_allclose(ours_step, torch_step, rtol=1e-10, atol=1e-12)


def test_make_optimizer_none_and_errors():
    assert make_optimizer(None, None, lr=0.1, length=2, device=CPU, dtype=torch.float32) is None
    with pytest.raises(ValueError, match=r"optimizer='rmsprop'.*Fix"):
        make_optimizer("rmsprop", None, lr=0.1, length=2, device=CPU, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"optimizer_config=\{'speed': 1\}.*Fix"):
        make_optimizer("clipup", {"speed": 1}, lr=0.1, length=2, device=CPU, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"momentum=1.5.*Fix"):
        make_optimizer("sgd", {"momentum": 1.5}, lr=0.1, length=2, device=CPU, dtype=torch.float32)
    for epsilon in (0, -1.0):  # 0: 0/0 on a zero gradient; below 0: steps turned around
        with pytest.raises(ValueError, match=rf"epsilon={epsilon}; expected a finite number > 0"):
            make_optimizer("adam", {"epsilon": epsilon}, lr=0.1, length=2, device=CPU,
                           dtype=torch.float32)


@pytest.mark.parametrize(("name", "config"), [("clipup", {"max_speed": "abc"}),
                                              ("clipup", {"momentum": None}),
                                              ("adam", {"beta1": True}),
                                              ("sgd", {"momentum": [0.9]})])
def test_a_setting_that_is_not_a_number_is_named(name, config):
    """`algo.optimizer_config.max_speed=abc` was "could not convert string to float"."""
    (key, value), = config.items()
    with pytest.raises(ValueError, match=rf"^optimizer_config.{key}={re.escape(repr(value))}; "
                                         rf"expected a number. Fix: algo.optimizer_config.{key}="):
        make_optimizer(name, config, lr=0.1, length=2, device=CPU, dtype=torch.float32)


def test_null_stays_where_it_is_the_default():
    clipup = make_optimizer("clipup", {"max_speed": None}, lr=0.1, length=2, device=CPU,
                            dtype=torch.float32)
    assert clipup.max_speed == pytest.approx(0.2)  # 2 x lr


@pytest.mark.parametrize(("kind", "settings", "saved"), [
    (ClipUp, {"speed_decay": 0.9, "min_speed": 0.01},
     ["lr", "max_speed", "momentum", "velocity", "steps"]),  # no decay settings (see ClipUp)
    (Adam, {}, ["lr", "beta1", "beta2", "epsilon", "m", "v", "t"]),
    (SGD, {}, ["lr", "momentum", "velocity"]),
], ids=["clipup", "adam", "sgd"])
def test_an_optimizer_saves_the_keys_it_declares(kind, settings, saved):
    """What is saved is declared (SETTINGS, STATE), not implied by an attribute's name: an
    attribute set later is not saved (a resumed state.pt would then have to hold it)."""
    optimizer = kind(2, CPU, torch.float32, lr=0.1, **settings)
    optimizer.scratch = torch.zeros(2)
    assert [*optimizer.SETTINGS, *optimizer.STATE] == saved
    assert list(optimizer.state_dict()) == saved
