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

    def actions(self, obs: Tensor, hidden: Any = None) -> tuple[Tensor, Any]:
        """Env actions for raw observations ``(..., *obs_shape)``, as tensors: ``(...,
        act_length)`` clipped floats, or ``(...)`` int64 choices ``argmax + start`` for
        Discrete; and the net's next hidden state (None for a feed-forward net). What ``act``
        returns, and what ``neurorun-export`` writes into a file.

        An observation holding a NaN or an infinity, which a run's rollout never feeds a policy
        (it zeroes the row and fails the episode), gives NaN actions (Discrete: ``start``) and
        leaves a recurrent state as it was: the net computes on zeros there, so every runtime
        of an exported file agrees (NaN passes differently through their layers)."""
        if self.obs_shape is not None and len(self.obs_shape) > 1:
            obs = obs.flatten(-len(self.obs_shape))
        finite = torch.isfinite(obs).all(-1, keepdim=True)  # (..., 1)
        out = self.forward(torch.where(finite, obs, 0.0), hidden)
        out, new = out if isinstance(out, tuple) else (out, None)
        if new is not None:
            new = _kept(finite, new, hidden)
        if self.discrete_start is None:
            return torch.where(finite, out, torch.nan), new
        return torch.where(finite[..., 0], _argmax(out), 0) + self.discrete_start, new

    @torch.no_grad()
    def act(self, obs: Any) -> Any:
        """An action ready for ``env.step``: an int for Discrete, a float32 array for Box.

        A recurrent net keeps its hidden state between calls; ``reset()`` clears it.
        """
        reference = next(iter(self.net.parameters()), None)
        x = torch.as_tensor(np.asarray(obs), dtype=torch.float32)
        if reference is not None:
            x = x.to(reference.device, reference.dtype)
        out, self._hidden = self.actions(x, self._hidden)
        if self.discrete_start is not None:
            choice = out.cpu().numpy()
            return int(choice) if choice.ndim == 0 else choice
        return out.cpu().numpy().astype(np.float32)

    def reset(self) -> None:
        """Forget the hidden state of a recurrent net (call at the start of an episode)."""
        self._hidden = None


def _kept(finite: Tensor, new: Any, old: Any) -> Any:
    """The state ``new`` where ``finite``, else ``old`` (None: zeros); tuples leaf by leaf."""
    if isinstance(new, Tensor):
        return torch.where(finite, new, 0.0 if old is None else old)
    return tuple(_kept(finite, part, None if old is None else old[index])
                 for index, part in enumerate(new))


def _argmax(scores: Tensor) -> Tensor:
    """``scores.argmax(-1)``, a NaN counting as the largest score (the first NaN wins), as
    torch's and numpy's argmax (so the run's actions) take it; written out because ONNX's
    ArgMax passes NaN over, and an exported policy must choose as the run did."""
    nan = torch.isnan(scores)
    return torch.where(nan.any(-1), nan.float().argmax(-1), scores.argmax(-1))
