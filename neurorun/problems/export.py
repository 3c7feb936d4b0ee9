"""A policy that takes raw observations: obs normalization and action clipping inside.

This is what ``Problem.to_policy`` returns and what the policy pickle holds; it lives in an
importable module so that a fresh process with neurorun installed can unpickle it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from neurorun.problems.running_norm import normalization_affine


class EnvPolicy(nn.Module):
    """``net`` between observation normalization and action post-processing.

    Args:
        net: the policy network (normalized observations in, raw outputs out). A recurrent
            net is called as ``net(x, h) -> (y, h_next)``.
        obs_mean, obs_stdev: normalization ``(obs - mean) / stdev``; None: none.
        act_low, act_high: clip bounds of a Box action space; None: no clipping.
        discrete_start: for a Discrete action space, its ``start``; ``act`` returns
            ``argmax + start``. None for Box action spaces.
        obs_shape: the env's observation shape; ``act`` flattens observations of that shape
            (the network sees flat vectors).
    """

    def __init__(self, net: nn.Module, *, obs_mean: Tensor | None = None,
                 obs_stdev: Tensor | None = None, act_low: Tensor | None = None,
                 act_high: Tensor | None = None, discrete_start: int | None = None,
                 obs_shape: tuple[int, ...] | None = None):
        super().__init__()
        self.net = net
        self.register_buffer("obs_mean", obs_mean)
        self.register_buffer("obs_stdev", obs_stdev)
        self.register_buffer("act_low", act_low)
        self.register_buffer("act_high", act_high)
        self.discrete_start = discrete_start
        self.obs_shape = tuple(obs_shape) if obs_shape is not None else None
        self._hidden: Any = None

    def forward(self, obs: Tensor, hidden: Any = None) -> Any:
        """Outputs for raw observations; ``(outputs, hidden)`` for a recurrent net."""
        x = obs
        if self.obs_mean is not None:  # as the rollouts compute it
            scale, shift = normalization_affine(self.obs_mean, self.obs_stdev)
            x = x * scale + shift
        out = self.net(x) if hidden is None else self.net(x, hidden)
        if isinstance(out, tuple):
            return self._clip(out[0]), out[1]
        return self._clip(out)

    def _clip(self, y: Tensor) -> Tensor:
        if self.act_low is None:
            return y
        return torch.clamp(y, self.act_low, self.act_high)

    @torch.no_grad()
    def act(self, obs: Any) -> Any:
        """An action ready for ``env.step``: an int for Discrete, a float32 array for Box.

        A recurrent net keeps its hidden state between calls; ``reset()`` clears it.
        """
        reference = next(iter(self.net.parameters()), None)
        x = torch.as_tensor(np.asarray(obs), dtype=torch.float32)
        if self.obs_shape is not None and len(self.obs_shape) > 1:
            x = x.reshape(*x.shape[: x.dim() - len(self.obs_shape)], -1)
        if reference is not None:
            x = x.to(reference.device, reference.dtype)
        out = self.forward(x, self._hidden)
        if isinstance(out, tuple):
            out, self._hidden = out
        if self.discrete_start is not None:
            choice = out.argmax(dim=-1).cpu().numpy() + self.discrete_start
            return int(choice) if choice.ndim == 0 else choice
        return out.cpu().numpy().astype(np.float32)

    def reset(self) -> None:
        """Forget the hidden state of a recurrent net (call at the start of an episode)."""
        self._hidden = None
