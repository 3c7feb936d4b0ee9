"""``BatchedPolicy``: a whole population of one network evaluated in a single call.

The template module fixes the architecture; ``set_parameters(params)`` with ``params (P, D)``
makes row i of every later call use parameter vector i (the order of
:mod:`neurorun.nets.vectors`). The chain is split into members (``Chain``/``nn.Sequential``
are flattened), and each member becomes one step:

* ``Linear``: ``torch.baddbmm`` with weights viewed out of ``params`` (no copy);
* ``RNN``/``LSTM``/``GRU``: the layer's own step function on weight views (``bmm``), with one
  hidden state per row kept here, zeroed by ``reset(mask)``;
* ``LayerNorm``: normalization, then per-row scale and shift;
* parameter-free row-wise layers (activations, ``Clip``, ``Slice``, ...): called on ``(P, n)``;
* anything else: ``torch.func.functional_call`` under ``torch.func.vmap``.

The views are made once per ``set_parameters``; a call only runs the steps.

Host path: on CPU, a feed-forward network of the network language runs in numpy
through :mod:`neurorun.nets.arrays`, the code the compiled jax evaluation
runs too. Between the steps of a Python simulator a torch op costs several times what it costs
in a tight loop, numpy's ops less, and for humanoid-sized layers numpy's stacked matmul reads
the weights faster than ``baddbmm`` (docs/benchmarks.md). Layers with more than 4 outputs
keep a contiguous (P, in, out) copy of their weights for it, made in ``set_parameters``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from neurorun.common.errors import one_line
from neurorun.nets.arrays import ArrayPolicy, NoArrayFormError, numpy_ops
from neurorun.nets.chain import is_recurrent
from neurorun.nets.steps import (
    Step,
    VmapStep,
    chain_members,
    make_step,
    map_state,
    parameter_layout,
)


class NetworkSizeError(ValueError):
    """A network whose widths do not fit its env's observations and actions: ``what`` is
    wrong, and the ``fix`` for a network string."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(f"{what}. Fix: {fix}")
        self.what = what


class BatchedPolicy:
    """Evaluate P parameter vectors of one architecture on P observations at once.

    Args:
        module: the template; its architecture is used, its parameter values are not.

    Attributes:
        is_recurrent: whether the policy carries hidden state between calls.
        solution_length: D, the length of one parameter vector.
    """

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        layout, self.solution_length = parameter_layout(module)
        tied = len(list(module.named_parameters(remove_duplicate=False))) != len(layout)
        if tied:  # a parameter shared by two members: the whole module goes through vmap
            self._steps: list[Step] = [VmapStep(module, "", layout)]
        else:
            self._steps = [make_step(m, prefix, layout) for prefix, m in chain_members(module)]
        self.is_recurrent = any(step.recurrent for step in self._steps)
        self._params: Tensor | None = None
        self._states: list[Any] = []
        self._host: list[dict[str, np.ndarray]] | None = None  # host path's rows, where used

    def set_parameters(self, params: Tensor) -> None:
        """Use ``params (P, D)`` from now on, one row per policy; zeroes all hidden state.

        ``params`` is used in place, not copied: ``update_rows`` writes into it."""
        if params.dim() != 2 or params.shape[1] != self.solution_length:
            raise ValueError(
                f"params of shape {tuple(params.shape)} do not fit this policy: expected "
                f"(P, {self.solution_length}), one parameter vector per row"
            )
        self._params = params.detach()
        for step in self._steps:
            step.bind(self._params)
        self._states = [None] * sum(step.recurrent for step in self._steps)
        self._host = None
        if self._params.device.type == "cpu" and not self.is_recurrent:
            self._array = self._host_form()
            if self._array is not None:
                self._host = self._array.rows(self._params.numpy(), numpy_ops())
                self._host_dtype = self._params[:0].numpy().dtype

    def _host_form(self) -> ArrayPolicy | None:
        """The numpy form of the network, where every layer has one (hooks are checked at
        every ``set_parameters``: they may be added at any time)."""
        try:
            form = ArrayPolicy(self.module)
        except NoArrayFormError:
            return None
        return form if form.runs_on(numpy_ops()) else None

    def check_env_sizes(self, obs_length: int, act_length: int, spec: str) -> None:
        """NetworkSizeError unless the network takes observations of ``obs_length`` and gives
        actions of ``act_length`` (a forward pass on zeros, before any env of ``spec`` steps)."""
        self.set_parameters(torch.zeros(1, self.solution_length))  # evaluations reset them
        try:
            out = self(torch.zeros(1, obs_length))
        except (RuntimeError, ValueError) as error:
            raise self._inner_mismatch(obs_length) or NetworkSizeError(
                f"the network cannot take {spec}'s observations of {obs_length} numbers "
                f"({one_line(error, first_line=True)})",
                "start it with obs_length inputs, e.g. Linear(obs_length, ...)") from None
        width = int(np.prod(out.shape[1:]))
        if width != act_length:
            raise NetworkSizeError(
                f"the network gives {width} numbers per step, but {spec} takes actions of "
                f"{act_length}", "end it with act_length outputs, e.g. Linear(..., act_length)")

    def _inner_mismatch(self, obs_length: int) -> NetworkSizeError | None:
        """The layer past the first with weights that cannot take what the layer before gives
        (zeros of ``obs_length`` in, layer by layer); None where the observations are what
        does not fit (no layer with weights before the failing one), or where the walk
        cannot go on (a layer that fails otherwise)."""
        x: Any = torch.zeros(1, obs_length)
        weighted = False  # a layer with weights came before: it set the width
        for index, (_, layer) in enumerate(chain_members(self.module)):
            try:
                with torch.no_grad():
                    out = layer(x)
                if is_recurrent(layer):  # (output, hidden state)
                    out = out[0]
            except (RuntimeError, ValueError):
                if not weighted:
                    return None
                return NetworkSizeError(
                    f"layer {index + 1} of the network, {layer}, cannot take the "
                    f"{x.shape[-1]} numbers layer {index} gives",
                    "give each layer the previous one's output width as its input width")
            except Exception:  # a user layer's own error: the forward pass above says it
                return None
            if not isinstance(out, Tensor):
                return None
            weighted = weighted or any(True for _ in layer.parameters())
            x = out
        return None

    def update_rows(self, rows: np.ndarray, values: Tensor) -> None:
        """Give policies ``rows`` (indices) the vectors ``values (len(rows), D)`` and zero their
        hidden state; the other rows keep theirs."""
        if self._params is None:
            raise RuntimeError("call set_parameters(params) before update_rows")
        self._params[torch.from_numpy(rows)] = values.to(self._params.dtype)
        if self._host is not None:
            self._array.refresh(self._host, rows)
        if self.is_recurrent:
            mask = np.zeros(self._params.shape[0], dtype=bool)
            mask[rows] = True
            self.reset(torch.from_numpy(mask))

    def __call__(self, obs: Tensor | np.ndarray) -> Tensor | np.ndarray:
        """Actions ``(P, act_length)`` for observations ``(P, obs_length)``, row by row.

        A numpy array in gives a numpy array out (the rollout keeps CPU envs' arrays in numpy).
        Runs without autograd; a caller that calls once per env step should disable grad
        around its whole loop, which spares a grad-mode switch per call.
        """
        params = self._params
        if params is None:
            raise RuntimeError("call set_parameters(params) before evaluating the policy")
        if obs.shape[0] != params.shape[0]:
            raise ValueError(f"obs has {obs.shape[0]} rows but the policy holds "
                             f"{params.shape[0]} parameter vectors; expected equal")
        as_array = isinstance(obs, np.ndarray)
        if self._host is not None and (as_array or obs.device.type == "cpu"):
            x = obs if as_array else (obs.detach() if obs.requires_grad else obs).numpy()
            x, _ = self._array(numpy_ops(), self._host, x.astype(self._host_dtype, copy=False))
            return x if as_array else torch.from_numpy(x)
        if as_array:
            return self(torch.from_numpy(obs)).numpy()
        if torch.is_grad_enabled():
            with torch.no_grad():
                return self._forward(obs.to(device=params.device, dtype=params.dtype))
        return self._forward(obs.to(device=params.device, dtype=params.dtype))

    def _forward(self, x: Tensor) -> Tensor:
        if not self.is_recurrent:
            for step in self._steps:
                x = step(x)
            return x
        states = iter(range(len(self._states)))
        for step in self._steps:
            if step.recurrent:
                index = next(states)
                x, self._states[index] = step(x, self._states[index])
            else:
                x = step(x)
        return x

    def reset(self, mask: Tensor | None = None) -> None:
        """Zero the hidden state of the rows where ``mask (P,)`` is True (all rows if None)."""
        if mask is None:
            self._states = [None] * len(self._states)
            return
        mask = torch.as_tensor(mask, dtype=torch.bool)

        def zero_rows(state: Tensor) -> Tensor:
            rows = mask.to(state.device).view(-1, *[1] * (state.dim() - 1))
            return torch.where(rows, torch.zeros((), dtype=state.dtype, device=state.device),
                               state)

        self._states = [map_state(zero_rows, state) for state in self._states]
