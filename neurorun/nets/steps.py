"""The per-member torch steps of ``BatchedPolicy``: each layer of a chain, batched over rows.

See :mod:`neurorun.nets.batched` for how a chain is split into steps; the numpy (host) path
runs :mod:`neurorun.nets.arrays` instead.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurorun.nets.catalog import acts_row_wise
from neurorun.nets.chain import Chain, is_recurrent
from neurorun.nets.recurrent import Recurrent

Layout = dict[str, tuple[int, tuple[int, ...]]]  # parameter name -> (offset, shape)


def parameter_layout(module: nn.Module) -> tuple[Layout, int]:
    layout, offset = {}, 0
    for name, parameter in module.named_parameters():
        layout[name] = (offset, tuple(parameter.shape))
        offset += parameter.numel()
    return layout, offset


def chain_members(module: nn.Module, prefix: str = "") -> list[tuple[str, nn.Module]]:
    if type(module) is nn.Sequential or isinstance(module, Chain):
        found = []
        for name, child in module.named_children():
            found += chain_members(child, f"{prefix}{name}.")
        return found
    return [(prefix, module)]


def map_state(function: Any, state: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return type(state)(map_state(function, s) for s in state)
    return function(state)


class Step:
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


class _RowWiseStep(Step):
    """A parameter-free layer; its ``forward`` is called directly where it has no hooks,
    which skips ``nn.Module.__call__``'s hook bookkeeping (microseconds per call)."""

    def bind(self, params: Tensor) -> None:
        member, module = self.member, nn.modules.module
        hooked = (member._forward_hooks or member._forward_pre_hooks
                  or module._global_forward_hooks or module._global_forward_pre_hooks)
        self.forward = member if hooked else member.forward

    def __call__(self, x: Tensor, state: Any = None) -> Any:
        return self.forward(x)


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


class _LinearStep(Step):
    """``y[p] = x[p] @ W[p].T + b[p]``: one ``baddbmm`` of (P, 1, in) rows. Views are made in
    ``bind``, not per call."""

    def bind(self, params: Tensor) -> None:
        super().bind(params)
        self.weight_t = self.views[0].transpose(1, 2)  # (P, in, out)
        self.bias_row = self.views[1].unsqueeze(1) if len(self.views) > 1 else None  # (P, 1, out)

    def __call__(self, x: Tensor, state: Any = None) -> Tensor:
        if self.bias_row is None:
            return torch.bmm(x.unsqueeze(1), self.weight_t).squeeze(1)
        return torch.baddbmm(self.bias_row, x.unsqueeze(1), self.weight_t).squeeze(1)


class _LayerNormStep(Step):
    def bind(self, params: Tensor) -> None:
        super().bind(params)
        named = dict(zip(self.names, self.views, strict=True))
        self.weight, self.bias = named.get("weight"), named.get("bias")

    def __call__(self, x: Tensor, state: Any = None) -> Tensor:
        y = F.layer_norm(x, self.member.normalized_shape, None, None, self.member.eps)
        if self.weight is not None:
            y = y * self.weight
        return y if self.bias is None else y + self.bias


class _RecurrentStep(Step):
    recurrent = True

    def bind(self, params: Tensor) -> None:
        super().bind(params)
        named = dict(zip(self.names, self.views, strict=True))
        self.weights = tuple(named.get(n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def __call__(self, x: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        if state is None:
            state = self.member.zero_state(x)
        return self.member.step(x, state, self.weights)


class VmapStep(Step):
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


def make_step(member: nn.Module, prefix: str, layout: Layout) -> Step:
    if type(member) is nn.Linear:
        return _LinearStep(member, prefix, layout)
    if type(member) is nn.LayerNorm:
        return _LayerNormStep(member, prefix, layout)
    if isinstance(member, Recurrent):
        return _RecurrentStep(member, prefix, layout)
    if acts_row_wise(member) and not any(True for _ in member.parameters()):
        return _RowWiseStep(member, prefix, layout)
    return VmapStep(member, prefix, layout)
