"""``Chain``: the module that ``a >> b >> c`` builds, threading hidden state through members."""

from __future__ import annotations

import inspect
from typing import Any

from torch import Tensor, nn

from neurorun.nets.recurrent import Recurrent


def is_recurrent(module: nn.Module) -> bool:
    """True when ``module.forward`` takes a hidden state: ``forward(x, h=None) -> (y, h)``.

    That is one of neurorun's recurrent layers, a :class:`Chain` holding one, or a user module
    whose ``forward`` declares a parameter named ``h``.
    """
    if isinstance(module, Recurrent):
        return True
    if isinstance(module, Chain):
        return module.is_recurrent
    try:
        return "h" in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


class Chain(nn.Sequential):
    """Members applied in order, like ``nn.Sequential``.

    When a member is recurrent, the chain is too: ``forward(x, h=None)`` returns ``(y, h_next)``
    where ``h`` is a tuple holding one state per recurrent member, in order (``None`` = zeros).
    Without recurrent members ``forward(x)`` returns ``y`` alone.
    """

    @property
    def recurrent_flags(self) -> list[bool]:
        return [is_recurrent(member) for member in self]

    @property
    def is_recurrent(self) -> bool:
        return any(self.recurrent_flags)

    def forward(self, x: Tensor, h: tuple[Any, ...] | None = None) -> Any:
        if not self.is_recurrent:
            for member in self:
                x = member(x)
            return x
        flags = self.recurrent_flags
        states = iter(h if h is not None else [None] * sum(flags))
        next_states = []
        for member, recurrent in zip(self, flags, strict=True):
            if recurrent:
                x, state = member(x, next(states))
                next_states.append(state)
            else:
                x = member(x)
        return x, tuple(next_states)
