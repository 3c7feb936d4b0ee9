"""Which layers a network string may name, and which the population fast path runs row-wise."""

from __future__ import annotations

from torch import nn

from neurorun.nets.layers import Apply, Bin, Clip, Round, Slice
from neurorun.nets.recurrent import GRU, LSTM, RNN

# Parameter-free torch.nn layers that act elementwise (the same on (n,) as on each row of (B, n)).
ELEMENTWISE_TORCH = (
    "CELU", "ELU", "GELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "Identity",
    "LeakyReLU", "LogSigmoid", "Mish", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softplus",
    "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold",
)  # fmt: skip
OTHER_TORCH = ("Linear", "LayerNorm", "PReLU", "Softmax", "LogSoftmax")

LAYERS: dict[str, type[nn.Module]] = {
    **{name: getattr(nn, name) for name in ELEMENTWISE_TORCH + OTHER_TORCH},
    **{cls.__name__: cls for cls in (Clip, Bin, Slice, Round, Apply, RNN, LSTM, GRU)},
}

_NOISE = (
    "it zeroes random units at every call, which makes each fitness evaluation noisy and the "
    "evolved policy irreproducible; evolution strategies need no such regularizer. Remove it"
)
_BATCH_STATS = (
    "it computes statistics over the batch, which would mix the observations of different "
    "policies in the population. Use observation_normalization=true or LayerNorm instead"
)
REFUSED: dict[str, str] = {
    **{name: _NOISE for name in ("Dropout", "Dropout1d", "AlphaDropout", "FeatureAlphaDropout")},
    **{name: _BATCH_STATS for name in ("BatchNorm1d", "BatchNorm2d", "LazyBatchNorm1d")},
    **{name: _BATCH_STATS for name in ("BatchNorm3d", "SyncBatchNorm")},
}

ROW_WISE: tuple[type[nn.Module], ...] = (
    *(getattr(nn, name) for name in ELEMENTWISE_TORCH),
    Clip, Bin, Slice, Round, Apply,
)  # fmt: skip


def acts_row_wise(module: nn.Module) -> bool:
    """True for parameter-free layers whose output row i depends on input row i only."""
    if isinstance(module, ROW_WISE):
        return True
    if isinstance(module, (nn.Softmax, nn.LogSoftmax)):
        return module.dim in (None, -1)
    return False


def dim_error(module: nn.Module) -> str | None:
    """Why the ``dim`` of a Softmax or LogSoftmax does not fit its input, or None. A layer's
    input is one vector (an observation's features: the population's and the envs' batches
    are added around it), so only dim -1 or 0 (or None, the last) exists; another failed as
    the first observation came ("the run failed: IndexError")."""
    if not isinstance(module, (nn.Softmax, nn.LogSoftmax)) or module.dim in (None, 0, -1):
        return None
    return (f"dim={module.dim} is out of range: a layer's input is one vector (an "
            "observation's features), so dim is -1 (or 0)")
