"""User-defined policy modules for the tests (imported by ``pkg.module:Name`` specs)."""

from __future__ import annotations

import torch
from torch import nn


class ResidualPolicy(nn.Module):
    """A module the fast path does not know: a skip connection and a custom forward."""

    def __init__(self, obs_length: int, act_length: int, hidden: int = 8) -> None:
        super().__init__()
        self.inp = nn.Linear(obs_length, hidden)
        self.mid = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, act_length)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.tanh(self.inp(x))
        return self.out(z + torch.relu(self.mid(z)))


class LeakyMemory(nn.Module):
    """A user recurrent module: ``forward(x, h=None) -> (y, h)`` with a decaying memory."""

    def __init__(self, obs_length: int, act_length: int) -> None:
        super().__init__()
        self.read = nn.Linear(obs_length, act_length)
        self.decay = nn.Parameter(torch.full((act_length,), 0.5))

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None):
        h = torch.zeros_like(self.decay) if h is None else h
        h_next = self.decay * h + torch.tanh(self.read(x))
        return h_next * 2, h_next


def space_factory(obs_space, act_length: int, scale: float = 1.0) -> nn.Module:
    """A factory that asks for the observation space instead of its length."""
    layer = nn.Linear(obs_space.shape[0], act_length)
    with torch.no_grad():
        layer.weight.fill_(scale)
    return layer


def not_a_module(obs_length: int) -> int:
    return obs_length
