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

Host path: on CPU, a chain of only ``Linear``, ``Tanh``, ``ReLU`` and ``Identity`` runs in numpy
(``runs_on_host``). Between the steps of a Python simulator a torch op costs several times what
it costs in a tight loop (measured: one small ``baddbmm``, 10 us alone, added 40 us per
CartPole vector step; numpy ops added about a third of that), and for humanoid-sized layers
numpy's stacked matmul reads the weights about twice as fast as ``baddbmm``. Layers with more
than 4 outputs keep a contiguous (P, in, out) copy of their weights for it, made in
``set_parameters``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurorun.nets.catalog import acts_row_wise
from neurorun.nets.chain import Chain, is_recurrent
from neurorun.nets.recurrent import Recurrent

Layout = dict[str, tuple[int, tuple[int, ...]]]  # parameter name -> (offset, shape)
HostFunction = Callable[[np.ndarray], np.ndarray]

# row-wise layers with a numpy counterpart that agrees with torch to float rounding
_NUMPY_ROW_WISE: dict[type[nn.Module], HostFunction] = {
    nn.Tanh: np.tanh,
    nn.ReLU: lambda x: np.maximum(x, 0),
    nn.Identity: lambda x: x,
}


def _layout(module: nn.Module) -> tuple[Layout, int]:
    layout, offset = {}, 0
    for name, parameter in module.named_parameters():
        layout[name] = (offset, tuple(parameter.shape))
        offset += parameter.numel()
    return layout, offset


def _members(module: nn.Module, prefix: str = "") -> list[tuple[str, nn.Module]]:
    if type(module) is nn.Sequential or isinstance(module, Chain):
        found = []
        for name, child in module.named_children():
            found += _members(child, f"{prefix}{name}.")
        return found
    return [(prefix, module)]


def _map_state(function: Any, state: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return type(state)(_map_state(function, s) for s in state)
    return function(state)


class _Step:
    """One member of the chain; ``bind`` makes its parameter views for a population."""

    recurrent = False

    def __init__(self, member: nn.Module, prefix: str, layout: Layout) -> None:
        self.member = member
        self.names = [name for name, _ in member.named_parameters()]
        self.slots = [layout[prefix + name] for name in self.names]
        self.views: list[Tensor] = []

    def bind(self, params: Tensor) -> None:
        rows = params.shape[0]
        self.views = [
            params[:, offset : offset + _numel(shape)].view(rows, *shape)
            for offset, shape in self.slots
        ]

    def __call__(self, x: Tensor, state: Any = None) -> Any:
        return self.member(x)

    def host(self) -> HostFunction | None:
        """The step on numpy arrays (after ``bind`` on CPU params), or None if it has none."""
        return None


class _RowWiseStep(_Step):
    """A parameter-free layer; its ``forward`` is called directly where it has no hooks,
    which skips ``nn.Module.__call__``'s hook bookkeeping (microseconds per call)."""

    def bind(self, params: Tensor) -> None:
        member, module = self.member, nn.modules.module
        hooked = (member._forward_hooks or member._forward_pre_hooks
                  or module._global_forward_hooks or module._global_forward_pre_hooks)
        self.forward = member if hooked else member.forward

    def __call__(self, x: Tensor, state: Any = None) -> Any:
        return self.forward(x)

    def host(self) -> HostFunction | None:
        return None if self.forward is self.member else _NUMPY_ROW_WISE.get(type(self.member))


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


class _LinearStep(_Step):
    """``y[p] = x[p] @ W[p].T + b[p]``: one ``baddbmm`` of (P, 1, in) rows (torch), or the
    host path's numpy product. Views are made in ``bind``, not per call."""

    def bind(self, params: Tensor) -> None:
        super().bind(params)
        self.weight_t = self.views[0].transpose(1, 2)  # (P, in, out)
        self.bias_row = self.views[1].unsqueeze(1) if len(self.views) > 1 else None  # (P, 1, out)

    def __call__(self, x: Tensor, state: Any = None) -> Tensor:
        if self.bias_row is None:
            return torch.bmm(x.unsqueeze(1), self.weight_t).squeeze(1)
        return torch.baddbmm(self.bias_row, x.unsqueeze(1), self.weight_t).squeeze(1)

    def host(self) -> HostFunction:
        weight = self.views[0].numpy()  # (P, out, in), a view of params
        bias = self.views[1].numpy() if len(self.views) > 1 else None
        if weight.shape[1] <= 4:  # few outputs (action layers): einsum was fastest, no copy

            def product(x: np.ndarray) -> np.ndarray:
                return np.einsum("pi,poi->po", x, weight)
        else:  # stacked matmul was fastest on a contiguous (P, in, out) copy
            weight_t = np.ascontiguousarray(weight.transpose(0, 2, 1))

            def product(x: np.ndarray) -> np.ndarray:
                return np.matmul(x[:, None, :], weight_t)[:, 0]

        if bias is None:
            return product

        def affine(x: np.ndarray) -> np.ndarray:
            y = product(x)
            y += bias  # y is a new array: add in place
            return y

        return affine


class _LayerNormStep(_Step):
    def bind(self, params: Tensor) -> None:
        super().bind(params)
        named = dict(zip(self.names, self.views, strict=True))
        self.weight, self.bias = named.get("weight"), named.get("bias")

    def __call__(self, x: Tensor, state: Any = None) -> Tensor:
        y = F.layer_norm(x, self.member.normalized_shape, None, None, self.member.eps)
        if self.weight is not None:
            y = y * self.weight
        return y if self.bias is None else y + self.bias


class _RecurrentStep(_Step):
    recurrent = True

    def bind(self, params: Tensor) -> None:
        super().bind(params)
        named = dict(zip(self.names, self.views, strict=True))
        self.weights = tuple(named.get(n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def __call__(self, x: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        if state is None:
            state = self.member.zero_state(x)
        return self.member.step(x, state, self.weights)


class _VmapStep(_Step):
    """Any other module: ``functional_call`` on each row's parameters, vectorized by vmap."""

    def __init__(self, member: nn.Module, prefix: str, layout: Layout) -> None:
        super().__init__(member, prefix, layout)
        self.recurrent = is_recurrent(member)
        self.template = member
        # A parameter shared by two modules needs its view under both names (torch.func cannot
        # tie weights under vmap); a module used twice has one slot and must be set once.
        canonical = {id(p): name for name, p in member.named_parameters()}
        self.aliases: dict[str, str] = {}
        slots = set()
        for name, p in member.named_parameters(remove_duplicate=False):
            owner, _, attribute = name.rpartition(".")
            slot = (id(member.get_submodule(owner)), attribute)
            if slot not in slots:
                slots.add(slot)
                self.aliases[name] = canonical[id(p)]

    def bind(self, params: Tensor) -> None:
        super().bind(params)
        buffers = list(self.template.buffers())
        if buffers and (buffers[0].device, buffers[0].dtype) != (params.device, params.dtype):
            self.member = copy.deepcopy(self.template).to(params.device, params.dtype)
        views = dict(zip(self.names, self.views, strict=True))
        self.params = {name: views[target] for name, target in self.aliases.items()}

    def __call__(self, x: Tensor, state: Any = None) -> Any:
        from torch.func import functional_call, vmap  # imports torch._dynamo: slow, so lazily

        buffers = dict(self.member.named_buffers())

        def one(p: dict[str, Tensor], xi: Tensor, hi: Any = None) -> Any:
            args = (xi, hi) if self.recurrent else (xi,)
            return functional_call(self.member, (p, buffers), args, tie_weights=False)

        if not self.recurrent:
            return vmap(one)(self.params, x)
        return vmap(one, in_dims=(0, 0, None if state is None else 0))(self.params, x, state)


def _make_step(member: nn.Module, prefix: str, layout: Layout) -> _Step:
    if type(member) is nn.Linear:
        return _LinearStep(member, prefix, layout)
    if type(member) is nn.LayerNorm:
        return _LayerNormStep(member, prefix, layout)
    if isinstance(member, Recurrent):
        return _RecurrentStep(member, prefix, layout)
    if acts_row_wise(member) and not any(True for _ in member.parameters()):
        return _RowWiseStep(member, prefix, layout)
    return _VmapStep(member, prefix, layout)


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
        layout, self.solution_length = _layout(module)
        tied = len(list(module.named_parameters(remove_duplicate=False))) != len(layout)
        if tied:  # a parameter shared by two members: the whole module goes through vmap
            self._steps: list[_Step] = [_VmapStep(module, "", layout)]
        else:
            self._steps = [_make_step(m, prefix, layout) for prefix, m in _members(module)]
        self.is_recurrent = any(step.recurrent for step in self._steps)
        self._params: Tensor | None = None
        self._states: list[Any] = []
        self._host: list[HostFunction] | None = None  # the host path, where there is one

    @property
    def num_policies(self) -> int:
        """P, the number of rows given to the last ``set_parameters`` (0 before)."""
        return 0 if self._params is None else self._params.shape[0]

    def set_parameters(self, params: Tensor) -> None:
        """Use ``params (P, D)`` from now on, one row per policy; zeroes all hidden state."""
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
            functions = [step.host() for step in self._steps]
            self._host = None if None in functions else functions
            self._host_dtype = self._params[:0].numpy().dtype

    @property
    def runs_on_host(self) -> bool:
        """Whether calls run in numpy (the host path; see the module docstring)."""
        return self._host is not None

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
            x = x.astype(self._host_dtype, copy=False)
            for function in self._host:
                x = function(x)
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

        self._states = [_map_state(zero_rows, state) for state in self._states]
