"""Optimizers that turn an ascent gradient of the center into a step.

ClipUp (Toklu et al. 2020): normalized gradient times the learning rate, heavy-ball momentum,
and the velocity clipped to `max_speed`; optionally the learning rate and `max_speed` shrink
by `speed_decay` each step, `max_speed` to no less than `min_speed` (a center that nears its
optimum then stops overshooting it). Adam (Kingma & Ba 2015). SGD with momentum.
Each declares what it saves: its settings (``SETTINGS``) and what its steps change (``STATE``),
so `state_dict()` makes a resumed run bit-identical.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch

from neurorun.algorithms.options import require_positive
from neurorun.common.values import is_number


class Optimizer:
    """Base class: `step(gradient) -> ascent step` plus its state. `state_dict` holds
    ``SETTINGS`` (lr, ...) and ``STATE``; `load_state_dict` restores only what steps change
    (``STATE``): the settings are the config's, so a resume's override of one takes effect."""

    SETTINGS: tuple[str, ...] = ()  # saved for the record (a run's state.pt shows them)
    STATE: tuple[str, ...] = ()  # what steps change: saved and restored

    def __init__(self, length: int, device: torch.device, dtype: torch.dtype):
        self._zeros = lambda: torch.zeros(length, device=device, dtype=dtype)

    @staticmethod
    def check(**settings: Any) -> None:
        """Raise a ValueError for settings (every keyword of the constructor but the first
        three, defaults filled in) this optimizer refuses."""

    def step(self, gradient: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        # references: step() assigns new tensors (as the algorithms' state_dicts assume)
        return {key: getattr(self, key) for key in (*self.SETTINGS, *self.STATE)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key in self.STATE:
            value, current = state[key], getattr(self, key)
            setattr(self, key, value.to(current) if torch.is_tensor(current) else value)


class ClipUp(Optimizer):
    # the decay's settings, newer than the state's layout, are not saved (the config gives
    # every setting on resume anyway: see Optimizer)
    SETTINGS = ("lr", "max_speed", "momentum")
    STATE = ("velocity", "steps")

    def __init__(self, length, device, dtype, *, lr: float, max_speed: float | None = None,
                 momentum: float = 0.9, speed_decay: float = 1.0, min_speed: float = 0.0):
        super().__init__(length, device, dtype)
        self.lr = float(lr)
        self.max_speed = _max_speed(lr, max_speed)
        self.momentum = float(momentum)
        self.speed_decay, self.min_speed = float(speed_decay), float(min_speed)
        self.velocity = self._zeros()
        self.steps = 0  # steps taken (by this attempt: a restart starts anew): the exponent

    @staticmethod
    def check(*, lr: float, max_speed: float | None, momentum: float, speed_decay: float,
              min_speed: float) -> None:
        max_speed = _max_speed(lr, max_speed)
        require_positive("max_speed", max_speed)
        _check_fraction("momentum", momentum)
        if not 0 < speed_decay <= 1:
            raise ValueError(f"speed_decay={speed_decay!r}; expected a factor in (0, 1]. "
                             "Fix: 0 < speed_decay <= 1 (1: no decay).")
        if not 0 <= min_speed <= max_speed:
            raise ValueError(f"min_speed={min_speed!r}; expected 0 <= min_speed <= max_speed "
                             f"({max_speed}). Fix: a floor below the speed it decays from.")

    def scale(self) -> float:
        """This step's factor on lr and max_speed: speed_decay ** steps, floored at
        min_speed / max_speed."""
        return max(self.speed_decay**self.steps, self.min_speed / self.max_speed)

    def step(self, gradient: torch.Tensor) -> torch.Tensor:
        scale = self.scale()
        max_speed = self.max_speed * scale
        norm = torch.linalg.vector_norm(gradient)
        direction = gradient / norm if float(norm) > 0 else torch.zeros_like(gradient)
        velocity = self.momentum * self.velocity + self.lr * scale * direction
        speed = float(torch.linalg.vector_norm(velocity))
        if speed > max_speed:
            velocity = velocity * (max_speed / speed)
        self.velocity = velocity
        self.steps += 1
        return velocity.clone()


class Adam(Optimizer):
    SETTINGS = ("lr", "beta1", "beta2", "epsilon")
    STATE = ("m", "v", "t")

    def __init__(self, length, device, dtype, *, lr: float, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-8):
        super().__init__(length, device, dtype)
        self.lr, self.beta1, self.beta2, self.epsilon = float(lr), beta1, beta2, epsilon
        self.m, self.v, self.t = self._zeros(), self._zeros(), 0

    @staticmethod
    def check(*, lr: float, beta1: float, beta2: float, epsilon: float) -> None:
        _check_fraction("beta1", beta1)
        _check_fraction("beta2", beta2)
        require_positive("epsilon", epsilon)  # 0: 0/0 where the gradient is 0

    def step(self, gradient: torch.Tensor) -> torch.Tensor:
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * gradient
        self.v = self.beta2 * self.v + (1 - self.beta2) * gradient.square()
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        return self.lr * m_hat / (v_hat.sqrt() + self.epsilon)


class SGD(Optimizer):
    SETTINGS = ("lr", "momentum")
    STATE = ("velocity",)

    def __init__(self, length, device, dtype, *, lr: float, momentum: float = 0.9):
        super().__init__(length, device, dtype)
        self.lr, self.momentum = float(lr), float(momentum)
        self.velocity = self._zeros()

    @staticmethod
    def check(*, lr: float, momentum: float) -> None:
        _check_fraction("momentum", momentum)

    def step(self, gradient: torch.Tensor) -> torch.Tensor:
        self.velocity = self.momentum * self.velocity + gradient
        return self.lr * self.velocity


OPTIMIZERS: dict[str, type[Optimizer]] = {"clipup": ClipUp, "adam": Adam, "sgd": SGD}


def optimizer_settings(name: str, config: Mapping[str, Any] | None, *,
                       lr: float) -> tuple[type[Optimizer], dict[str, Any]]:
    """The optimizer class ``name`` names and its checked settings (``config`` with ``lr`` and
    the defaults of the rest), for a center of any length.

    Raises:
        ValueError: an unknown optimizer, or a setting it does not take or refuses.
    """
    if name not in OPTIMIZERS:
        raise ValueError(
            f"optimizer={name!r}; expected one of {sorted(OPTIMIZERS)} or null. "
            "Fix: pick one of those (null means plain steps of center_learning_rate)."
        )
    signature = inspect.signature(OPTIMIZERS[name])
    for key, value in dict(config or {}).items():  # a number (or null where that is a default)
        setting = signature.parameters.get(key)
        if setting is None or (value is None and setting.default is None):
            continue  # another optimizer's setting is said below
        if not is_number(value):
            raise ValueError(f"optimizer_config.{key}={value!r}; expected a number. Fix: "
                             f"algo.optimizer_config.{key}=<a number>, or leave it out.")
    try:
        bound = signature.bind(0, None, None, lr=lr, **dict(config or {}))
    except TypeError as error:
        raise ValueError(
            f"optimizer_config={dict(config or {})!r} does not fit optimizer {name!r}: {error}. "
            "Fix: use only that optimizer's settings (algo.optimizer_config=null drops the "
            "others)."
        ) from None
    bound.apply_defaults()
    settings = {key: value for key, value in bound.arguments.items()
                if key not in ("length", "device", "dtype")}
    OPTIMIZERS[name].check(**settings)
    return OPTIMIZERS[name], settings


def make_optimizer(name: str | None, config: Mapping[str, Any] | None, *, lr: float,
                   length: int, device: torch.device, dtype: torch.dtype) -> Optimizer | None:
    """The named optimizer for a (length,) center, or None for plain `lr * gradient` steps."""
    if name is None:
        return None
    optimizer, settings = optimizer_settings(name, config, lr=lr)
    return optimizer(length, device, dtype, **settings)


def _max_speed(lr: float, max_speed: float | None) -> float:
    """ClipUp's speed limit: as given, or 2 x lr (the ClipUp paper's rule)."""
    return 2.0 * float(lr) if max_speed is None else float(max_speed)


def _check_fraction(name: str, value: float) -> None:
    if not 0 <= value < 1:
        raise ValueError(f"{name}={value!r}; expected a value in [0, 1). Fix: set 0 <= {name} < 1.")
