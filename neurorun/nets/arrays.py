"""A network as pure functions on arrays: one code for numpy and for jax.numpy.

``ArrayPolicy(module)`` turns each member of a network (``Chain``/``nn.Sequential`` flattened)
into a function of its parameter rows and a batch of inputs, written against the array API
that numpy and jax.numpy share (``Ops`` names the namespace and the few functions where they
differ). The same functions serve two paths:

* the host path of :class:`~neurorun.nets.batched.BatchedPolicy` (numpy, on CPU envs that
  speak numpy), and
* the compiled evaluation of jax envs (:mod:`neurorun.problems.jax.rollout`), where the
  whole rollout is one ``jax.jit`` program.

Every layer of the network language has a form here; a user's own module (any other class,
a module with forward hooks, tied parameters) has none and raises :class:`NoArrayFormError`, which
names the layer. Row ``p`` of every output uses parameter vector ``p`` (the order of
:mod:`neurorun.nets.vectors`). Recurrent layers take and return their state explicitly; their
formulas are :mod:`neurorun.nets.cells`, which the torch modules run too.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import nn

from neurorun.nets.cells import Activations, gru_cell, lstm_cell, rnn_cell
from neurorun.nets.expression import parse_expression
from neurorun.nets.layers import Apply, Bin, Clip, Round, Slice
from neurorun.nets.recurrent import GRU, LSTM, RNN
from neurorun.nets.steps import chain_members, parameter_layout

Array = Any  # a numpy or jax array
Named = dict[str, Array]  # a layer's parameter rows by name, e.g. weight (P, out, in)


class NoArrayFormError(ValueError):
    """A layer the array path cannot evaluate (a user's own module, a hooked layer)."""


@dataclass(frozen=True)
class Ops:
    """An array namespace and what numpy and jax.numpy spell differently."""

    name: str  # "numpy" or "jax"
    xp: Any
    erf: Callable[[Array], Array] | None  # None: not available (numpy has no erf)
    # cond(pred, if_true, if_false, operand): jax.lax.cond's branch (a traced predicate runs
    # one branch or the other), or Python's if
    cond: Callable[[Any, Callable[[Any], Any], Callable[[Any], Any], Any], Any]


def _python_cond(pred: Any, if_true: Callable[[Any], Any], if_false: Callable[[Any], Any],
                 operand: Any) -> Any:
    return if_true(operand) if pred else if_false(operand)


@functools.cache
def numpy_ops() -> Ops:
    return Ops("numpy", np, None, _python_cond)


@functools.cache
def jax_ops() -> Ops:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special

    return Ops("jax", jnp, jax.scipy.special.erf, jax.lax.cond)


def sigmoid(ops: Ops, x: Array) -> Array:
    """``1 / (1 + exp(-x))`` without overflow for large ``|x|``."""
    xp = ops.xp
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def softplus(ops: Ops, x: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """torch's softplus: ``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    xp = ops.xp
    z = beta * x
    return xp.where(z > threshold, x, xp.log1p(xp.exp(xp.minimum(z, threshold))) / beta)


def _expm1_negative(ops: Ops, x: Array) -> Array:
    return ops.xp.expm1(ops.xp.minimum(x, 0))


_SELU_ALPHA = 1.6732632423543772848170429916717  # torch.nn.SELU's constants
_SELU_SCALE = 1.0507009873554804934193349852946


def _gelu(ops: Ops, m: nn.GELU, x: Array) -> Array:
    xp = ops.xp
    if m.approximate == "tanh":
        return 0.5 * x * (1 + xp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + ops.erf(x / math.sqrt(2)))


def _softmax(ops: Ops, x: Array) -> Array:
    xp = ops.xp
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def _log_softmax(ops: Ops, x: Array) -> Array:
    xp = ops.xp
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


# parameter-free layers: (ops, module, x) -> y, on the last dimension of x
_ROW_WISE: dict[type[nn.Module], Callable[[Ops, Any, Array], Array]] = {
    nn.Identity: lambda o, m, x: x,
    nn.Tanh: lambda o, m, x: o.xp.tanh(x),
    nn.ReLU: lambda o, m, x: o.xp.maximum(x, 0),
    nn.ReLU6: lambda o, m, x: o.xp.clip(x, 0, 6),
    nn.ELU: lambda o, m, x: o.xp.where(x > 0, x, m.alpha * _expm1_negative(o, x)),
    nn.CELU: lambda o, m, x: o.xp.maximum(x, 0) + m.alpha * _expm1_negative(o, x / m.alpha),
    nn.SELU: lambda o, m, x: _SELU_SCALE * o.xp.where(
        x > 0, x, _SELU_ALPHA * _expm1_negative(o, x)),
    nn.GELU: _gelu,
    nn.Hardshrink: lambda o, m, x: o.xp.where(o.xp.abs(x) > m.lambd, x, 0),
    nn.Hardsigmoid: lambda o, m, x: o.xp.clip(x / 6 + 0.5, 0, 1),
    nn.Hardswish: lambda o, m, x: x * o.xp.clip(x + 3, 0, 6) / 6,
    nn.Hardtanh: lambda o, m, x: o.xp.clip(x, m.min_val, m.max_val),
    nn.LeakyReLU: lambda o, m, x: o.xp.where(x > 0, x, x * m.negative_slope),
    nn.LogSigmoid: lambda o, m, x: -softplus(o, -x),
    nn.Mish: lambda o, m, x: x * o.xp.tanh(softplus(o, x)),
    nn.Sigmoid: lambda o, m, x: sigmoid(o, x),
    nn.SiLU: lambda o, m, x: x * sigmoid(o, x),
    nn.Softplus: lambda o, m, x: softplus(o, x, m.beta, m.threshold),
    nn.Softshrink: lambda o, m, x: o.xp.where(
        x > m.lambd, x - m.lambd, o.xp.where(x < -m.lambd, x + m.lambd, 0)),
    nn.Softsign: lambda o, m, x: x / (1 + o.xp.abs(x)),
    nn.Tanhshrink: lambda o, m, x: x - o.xp.tanh(x),
    nn.Threshold: lambda o, m, x: o.xp.where(x > m.threshold, x, m.value),
    nn.Softmax: lambda o, m, x: _softmax(o, x),
    nn.LogSoftmax: lambda o, m, x: _log_softmax(o, x),
    Clip: lambda o, m, x: o.xp.clip(x, m.lo, m.hi),
    Bin: lambda o, m, x: (m.hi + m.lo) / 2 + (m.hi - m.lo) / 2 * o.xp.sign(x - (m.hi + m.lo) / 2),
    Slice: lambda o, m, x: x[..., m.start : m.stop],
    Round: lambda o, m, x: o.xp.round(x, m.ndigits),
}


@functools.cache
def _apply_forward(compiled: Callable[..., Array]) -> Callable[..., Array]:
    """An Apply expression's forward step: `x / 0` or `log(-1)` give inf and nan, which the
    rollout reports as non-finite fitness, not as numpy's RuntimeWarning on every step."""
    def forward(o: Ops, w: Any, x: Array) -> Array:
        with np.errstate(all="ignore"):
            return compiled(expression_functions(o), x)

    return forward


def expression_functions(ops: Ops) -> dict[str, Callable[..., Array]]:
    """The functions of ``Apply`` expressions (:data:`neurorun.nets.expression.FUNCTIONS`)
    on ``ops``'s arrays."""
    xp = ops.xp

    def clamp(x: Array, min: Any = None, max: Any = None) -> Array:  # noqa: A002 (torch's names)
        if min is not None:
            x = xp.maximum(x, min)
        return x if max is None else xp.minimum(x, max)

    return {"abs": xp.abs, "clamp": clamp, "cos": xp.cos, "exp": xp.exp, "log": xp.log,
            "maximum": xp.maximum, "minimum": xp.minimum, "relu": lambda x: xp.maximum(x, 0),
            "round": lambda x, decimals=0: xp.round(x, decimals),
            "sigmoid": lambda x: sigmoid(ops, x), "sign": xp.sign, "sin": xp.sin,
            "sqrt": xp.sqrt, "square": xp.square, "tanh": xp.tanh}


# ----- layers with parameters: (ops, named rows, x) -> y -----

def linear(ops: Ops, w: Named, x: Array, weight: str = "weight", bias: str = "bias") -> Array:
    """``y[p] = W[p] x[p] + b[p]`` with ``W (P, out, in)``; a host copy ``W.T`` is used where
    ``prepare`` made one (numpy's stacked matmul reads a contiguous (P, in, out) fastest)."""
    transposed = w.get(weight + "_t")
    if transposed is not None:
        y = ops.xp.matmul(x[:, None, :], transposed)[:, 0]
    else:
        y = ops.xp.einsum("pi,poi->po", x, w[weight])
    b = w.get(bias)
    return y if b is None else y + b


def _layer_norm(ops: Ops, m: nn.LayerNorm, w: Named, x: Array) -> Array:
    xp = ops.xp
    mean = xp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = xp.mean(centered * centered, axis=-1, keepdims=True)
    y = centered / xp.sqrt(variance + m.eps)
    if "weight" in w:
        y = y * w["weight"]
    return y + w["bias"] if "bias" in w else y


def _prelu(ops: Ops, w: Named, x: Array) -> Array:
    return ops.xp.where(x >= 0, x, w["weight"] * x)


# ----- recurrent cells: (ops, named rows, x, state tuple) -> (y, state tuple) -----

@functools.cache
def cell_activations(ops: Ops) -> Activations:
    """The activations :mod:`neurorun.nets.cells` applies, on ``ops``'s arrays."""
    return Activations(sigmoid=functools.partial(sigmoid, ops), tanh=ops.xp.tanh,
                       relu=lambda x: ops.xp.maximum(x, 0))


def _pre_activations(ops: Ops, w: Named, x: Array, h: Array) -> tuple[Array, Array]:
    return linear(ops, w, x, "weight_ih", "bias_ih"), linear(ops, w, h, "weight_hh", "bias_hh")


def _rnn(ops: Ops, m: RNN, w: Named, x: Array, state: tuple) -> tuple[Array, tuple]:
    h = rnn_cell(cell_activations(ops), *_pre_activations(ops, w, x, state[0]), m.nonlinearity)
    return h, (h,)


def _lstm(ops: Ops, m: LSTM, w: Named, x: Array, state: tuple) -> tuple[Array, tuple]:
    h, c = lstm_cell(cell_activations(ops), *_pre_activations(ops, w, x, state[0]), state[1])
    return h, (h, c)


def _gru(ops: Ops, m: GRU, w: Named, x: Array, state: tuple) -> tuple[Array, tuple]:
    h = gru_cell(cell_activations(ops), *_pre_activations(ops, w, x, state[0]), state[0])
    return h, (h,)


_CELLS = {RNN: (_rnn, 1), LSTM: (_lstm, 2), GRU: (_gru, 1)}  # cell function, state arrays


@dataclass
class ArrayLayer:
    """One member of a network on arrays.

    Attributes:
        name: the member's class name (for messages).
        slots: parameter name -> (offset, shape) in the flat parameter vector.
        forward: ``(ops, named rows, x) -> y`` (stateless members).
        cell: ``(ops, named rows, x, state) -> (y, state)`` (recurrent members).
        state_sizes: the width of each state array of a recurrent member (LSTM: h and c).
        needs_erf: whether it calls ``Ops.erf`` (numpy has none).
    """

    name: str
    slots: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)
    forward: Callable[[Ops, Named, Array], Array] | None = None
    cell: Callable[[Ops, Named, Array, tuple], tuple[Array, tuple]] | None = None
    state_sizes: tuple[int, ...] = ()
    needs_erf: bool = False


def _has_hooks(member: nn.Module) -> bool:
    module = nn.modules.module
    return bool(member._forward_hooks or member._forward_pre_hooks
                or module._global_forward_hooks or module._global_forward_pre_hooks)


def array_layer(member: nn.Module, prefix: str,
                layout: dict[str, tuple[int, tuple[int, ...]]]) -> ArrayLayer:
    """The array form of one chain member, or NoArrayFormError naming it."""
    name = type(member).__name__
    if _has_hooks(member):
        raise NoArrayFormError(f"layer {name} has forward hooks, which run only in torch")
    slots = {n: layout[prefix + n] for n, _ in member.named_parameters()}
    kind = type(member)
    if kind in _ROW_WISE and not slots:
        if kind in (nn.Softmax, nn.LogSoftmax) and member.dim not in (None, -1):
            raise NoArrayFormError(f"{name}(dim={member.dim}) mixes rows; only dim=-1 is row-wise")
        function = _ROW_WISE[kind]
        return ArrayLayer(name, slots, forward=lambda o, w, x: function(o, member, x),
                          needs_erf=kind is nn.GELU and member.approximate != "tanh")
    if kind is Apply:
        return ArrayLayer(name, slots, forward=_apply_forward(parse_expression(member.expression)))
    if kind is nn.Linear:
        return ArrayLayer(name, slots, forward=lambda o, w, x: linear(o, w, x))
    if kind is nn.LayerNorm:
        if len(member.normalized_shape) != 1:
            raise NoArrayFormError(f"LayerNorm{tuple(member.normalized_shape)}: only the last "
                              "dimension can be normalized row by row")
        return ArrayLayer(name, slots, forward=lambda o, w, x: _layer_norm(o, member, w, x))
    if kind is nn.PReLU:
        return ArrayLayer(name, slots, forward=_prelu)
    if kind in _CELLS:
        cell, count = _CELLS[kind]
        return ArrayLayer(name, slots, cell=lambda o, w, x, s: cell(o, member, w, x, s),
                          state_sizes=(member.hidden_size,) * count)
    raise NoArrayFormError(f"layer {name} is not part of the network language (a user's own module "
                      "runs only in torch)")


class ArrayPolicy:
    """A network (a template module) evaluated on parameter rows with numpy or jax.numpy.

    Raises:
        NoArrayFormError: a member has no array form; the message names it.
    """

    def __init__(self, module: nn.Module) -> None:
        layout, self.solution_length = parameter_layout(module)
        if len(list(module.named_parameters(remove_duplicate=False))) != len(layout):
            raise NoArrayFormError("the network shares parameters between layers, which only torch "
                              "ties")
        self.layers = [array_layer(member, prefix, layout)
                       for prefix, member in chain_members(module)]
        self.state_sizes = tuple(s for layer in self.layers for s in layer.state_sizes)
        self.is_recurrent = bool(self.state_sizes)

    def runs_on(self, ops: Ops) -> bool:
        """Whether every layer has the functions it needs in ``ops``."""
        return ops.erf is not None or not any(layer.needs_erf for layer in self.layers)

    def rows(self, params: Array, ops: Ops | None = None) -> list[Named]:
        """Each layer's parameter rows as views of ``params (P, D)``; with numpy ``ops``, also
        the contiguous transposed weight copies that numpy's products read fastest."""
        rows = params.shape[0]
        named = [{n: params[:, o:o + math.prod(s)].reshape(rows, *s)
                  for n, (o, s) in layer.slots.items()} for layer in self.layers]
        if ops is not None and ops.name == "numpy":
            for layer, weights in zip(self.layers, named, strict=True):
                if layer.name == "Linear" and weights["weight"].shape[1] > 4:
                    weights["weight_t"] = np.ascontiguousarray(weights["weight"].transpose(0, 2, 1))
        return named

    def refresh(self, named: list[Named], rows: np.ndarray) -> None:
        """Rows ``rows`` of the parameters changed in place: update the host copies."""
        for weights in named:
            if "weight_t" in weights:
                weights["weight_t"][rows] = weights["weight"][rows].transpose(0, 2, 1)

    def zero_state(self, ops: Ops, rows: int, dtype: Any) -> tuple[Array, ...]:
        """The recurrent state of ``rows`` policies at an episode's start (one array per
        state of each recurrent layer, in order)."""
        return tuple(ops.xp.zeros((rows, size), dtype=dtype) for size in self.state_sizes)

    def __call__(self, ops: Ops, named: list[Named], x: Array,
                 state: tuple[Array, ...] = ()) -> tuple[Array, tuple[Array, ...]]:
        """``(y, next state)`` for inputs ``x (P, in)``."""
        next_state: list[Array] = []
        position = 0
        for layer, weights in zip(self.layers, named, strict=True):
            if layer.cell is None:
                x = layer.forward(ops, weights, x)
                continue
            count = len(layer.state_sizes)
            x, new = layer.cell(ops, weights, x, state[position:position + count])
            next_state.extend(new)
            position += count
        return x, tuple(next_state)
