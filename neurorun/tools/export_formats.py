"""What `neurorun-export` writes: the module an exported file holds, and the two formats.

`ExportedPolicy` is neurorun's own policy, `EnvPolicy.actions` (observation normalization, the
network, clipping to a Box's bounds or argmax + start for Discrete), with a recurrent net's
state as flat tensors: ``obs (B, *obs_shape)`` and one ``state_in_<k>`` per state tensor in,
``action`` and one ``state_out_<k>`` each out. ONNX is written by torch.onnx's TorchScript-based
exporter (``dynamo=False``: it needs neither onnxscript nor torch.export), TorchScript by
``torch.jit.trace``; both write the batch dimension of every input and output as dynamic.
"""

from __future__ import annotations

import contextlib
import copy
import io
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from neurorun.common.errors import one_line
from neurorun.common.streams import native_output
from neurorun.nets.chain import Chain, is_recurrent
from neurorun.problems.export import EnvPolicy

METADATA_KEY = "neurorun"  # ONNX metadata_props key; TorchScript: the extra file "neurorun.json"
METADATA_FILE = "neurorun.json"
ONNX_OPSET = 17  # onnxruntime 1.14 (2023) and later, and most other runtimes, run it
TOLERANCE = 1e-5  # |file's output - torch's| allowed, absolute and relative (float32 rounding)
PROBE_SCALE = 1000  # each layer is checked on its sample inputs scaled up to ±this


class ExportError(Exception):
    """The policy cannot be written in the format: the message names the layer and the fix."""


def flatten_state(state: Any) -> list[Tensor]:
    """The tensors of a recurrent state (nested tuples of tensors), in order; [] for None."""
    if state is None:
        return []
    if isinstance(state, Tensor):
        return [state]
    if isinstance(state, (tuple, list)):
        return [leaf for part in state for leaf in flatten_state(part)]
    raise ExportError(f"the network's recurrent state holds a {type(state).__name__}; only "
                      "tensors in tuples can be exported")


def _unflatten(like: Any, leaves: Iterator[Tensor]) -> Any:
    if isinstance(like, Tensor):
        return next(leaves)
    return tuple(_unflatten(part, leaves) for part in like)


def per_observation(policy: EnvPolicy) -> EnvPolicy:
    """A copy of ``policy`` for batches: a Softmax or LogSoftmax over dim 0, an observation's
    own axis (a layer sees one observation), acts on the last axis (dim 0 is the batch's)."""
    result = copy.deepcopy(policy)
    for module in result.modules():
        if isinstance(module, (nn.Softmax, nn.LogSoftmax)) and module.dim == 0:
            module.dim = -1
    return result.eval()


class ExportedPolicy(nn.Module):
    """``forward(obs, *state_in) -> action`` (``(action, *state_out)`` for a recurrent net).

    Args:
        policy: the policy on raw observations.
        state: a state the net returned, which gives the layout of ``state_in`` (None for a
            feed-forward net).
    """

    def __init__(self, policy: EnvPolicy, state: Any = None) -> None:
        super().__init__()
        self.policy = per_observation(policy)
        self.layout = state

    def forward(self, obs: Tensor, *state: Tensor) -> Any:
        hidden = None if self.layout is None else _unflatten(self.layout, iter(state))
        action, hidden = self.policy.actions(obs, hidden)
        if self.layout is None:
            return action
        return (action, *flatten_state(hidden))


def members(net: nn.Module) -> list[nn.Module]:
    """The layers of a network, in the order of its network string."""
    return list(net) if isinstance(net, Chain) else [net]


class _Alone(nn.Module):
    """One layer on its own (a recurrent one from a zero state), checked before the policy."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor) -> Tensor:
        return self.layer(x)[0] if is_recurrent(self.layer) else self.layer(x)


def layer_inputs(policy: EnvPolicy, obs: Tensor) -> list[tuple[nn.Module, Tensor]]:
    """Each layer of ``policy``'s network with the input it gets from ``obs`` (zero state)."""
    seen: dict[nn.Module, Tensor] = {}

    def keep(layer: nn.Module, args: tuple[Any, ...]) -> None:  # None: the input unchanged
        seen.setdefault(layer, args[0])

    hooks = [layer.register_forward_pre_hook(keep) for layer in members(policy.net)]
    try:
        with torch.no_grad():
            policy.actions(obs)
    finally:
        for hook in hooks:
            hook.remove()
    return [(layer, seen[layer]) for layer in members(policy.net) if layer in seen]


@dataclass(frozen=True)
class Format:
    """One file format: its suffixes, the extra it needs, how a module becomes its bytes and
    how those bytes run (numpy arrays in, out)."""

    name: str
    suffixes: tuple[str, ...]
    extra: str | None  # the neurorun extra that writes and runs it
    to_bytes: Callable[[nn.Module, dict[str, Tensor], list[str], str], bytes]
    run: Callable[[bytes, dict[str, np.ndarray]], list[np.ndarray]]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Deprecation warnings off: the exporters chosen on purpose (TorchScript, and the ONNX
    exporter that needs no onnxscript) say on every call that torch.export is newer."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        yield


def _onnx_bytes(module: nn.Module, inputs: dict[str, Tensor], outputs: list[str],
                metadata: str) -> bytes:
    import onnx

    buffer = io.BytesIO()
    # torch's TorchScript-based exporter prints its graph to stdout, from C++, when a layer has
    # no ONNX form (its log switch is always on): the error raised says what matters
    with _quiet(), native_output(1):
        torch.onnx.export(module, tuple(inputs.values()), buffer, dynamo=False,
                          input_names=list(inputs), output_names=outputs,
                          dynamic_axes={name: {0: "batch"} for name in [*inputs, *outputs]},
                          opset_version=ONNX_OPSET)
    model = onnx.load_from_string(buffer.getvalue())
    onnx.helper.set_model_props(model, {METADATA_KEY: metadata})
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _run_onnx(data: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _torchscript_bytes(module: nn.Module, inputs: dict[str, Tensor], outputs: list[str],
                       metadata: str) -> bytes:
    buffer = io.BytesIO()
    with _quiet():
        traced = torch.jit.trace(module, tuple(inputs.values()), check_trace=False)
        torch.jit.save(traced, buffer, _extra_files={METADATA_FILE: metadata})
    return buffer.getvalue()


def _run_torchscript(data: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    with _quiet():
        module = torch.jit.load(io.BytesIO(data))
    with torch.no_grad():
        out = module(*(torch.from_numpy(array) for array in feeds.values()))
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


FORMATS: dict[str, Format] = {
    "onnx": Format("onnx", (".onnx",), "export", _onnx_bytes, _run_onnx),
    "torchscript": Format("torchscript", (".pt", ".pth"), None, _torchscript_bytes,
                          _run_torchscript),
}


def export_policy(fmt: Format, policy: EnvPolicy, obs: Tensor,
                  metadata: Callable[[ExportedPolicy, dict[str, Tensor]], str]) -> bytes:
    """``policy`` written in ``fmt``, traced on the observations ``obs (N, *obs_shape)``.

    Each layer is first written alone and checked on the inputs ``obs`` gives it, scaled up
    to ±PROBE_SCALE times; the file is then checked on ``obs`` from a zero state, and from the
    state that step leaves.

    Args:
        metadata: the text the file holds, from the module and its inputs (name: example).

    Raises:
        ExportError: a layer the format cannot hold, or holds inexactly (named), or a file
            that does not give the torch policy's actions.
    """
    _, state = outputs_and_state(policy, obs)
    module = ExportedPolicy(policy, state)
    for index, (layer, x) in enumerate(layer_inputs(module.policy, obs)):
        check_layer(fmt, f"layer {index + 1} of the network, {layer!r},", layer, x)
    leaves = flatten_state(state)
    inputs = {"obs": obs, **{f"state_in_{k}": torch.zeros_like(leaf)
                             for k, leaf in enumerate(leaves)}}
    outputs = ["action", *(f"state_out_{k}" for k in range(len(leaves)))]
    try:
        with torch.no_grad():
            data = fmt.to_bytes(module, inputs, outputs, metadata(module, inputs))
    except Exception as error:
        raise ExportError(f"torch cannot write the policy as {fmt.name}: "
                          f"{one_line(error, with_type=True, first_line=True)}") from error
    for feeds in (inputs, dict(zip(inputs, [obs, *leaves], strict=True))):
        check_same(fmt, data, module, feeds, "the policy")
    return data


def outputs_and_state(policy: EnvPolicy, obs: Tensor) -> tuple[Tensor, Any]:
    """The policy's outputs (before an argmax) for ``obs (N, *obs_shape)`` from a zero state,
    and the state the net leaves (None: feed-forward)."""
    with torch.no_grad():
        out = policy(obs.reshape(len(obs), -1))  # the rows `actions` flattens
    return out if isinstance(out, tuple) else (out, None)


def check_layer(fmt: Format, name: str, layer: nn.Module, x: Tensor) -> None:
    """ExportError naming the layer (``name``) unless ``fmt`` holds it alone and gives its
    outputs on ``x (N, in)`` scaled by ±1 to ±PROBE_SCALE (a layer written wrongly for some
    range, such as torch.onnx's floor division of negative numbers, is caught there)."""
    alone = _Alone(layer)
    scales = (1, -1, 10, -10, PROBE_SCALE, -PROBE_SCALE)
    probes = torch.cat([x * scale for scale in scales])
    fix = "use another layer" + ("" if fmt.name == "torchscript" else " or --format torchscript")
    try:
        with torch.no_grad():
            data = fmt.to_bytes(alone, {"obs": probes}, ["y"], "")
    except Exception as error:
        raise ExportError(f"{name} has no {fmt.name} export "
                          f"({one_line(error, with_type=True, first_line=True)}); {fix}") from error
    # rounding grows with the inputs: each probe is allowed TOLERANCE times its scale
    scale = np.repeat(np.abs(scales), len(x))[:, None]
    check_same(fmt, data, alone, {"obs": probes}, name, f"; {fix}", scale)


def check_same(fmt: Format, data: bytes, module: nn.Module, feeds: dict[str, Tensor],
               name: str, fix: str = "; please report it, with the network",
               scale: np.ndarray | float = 1.0) -> None:
    """ExportError unless the file ``data`` gives ``module``'s outputs for ``feeds``: within
    TOLERANCE times (``scale`` + the output), NaN where NaN, integers equal."""
    with torch.no_grad():
        expected = module(*feeds.values())
    expected = [t.numpy() for t in (expected if isinstance(expected, tuple) else (expected,))]
    got = fmt.run(data, {key: t.numpy() for key, t in feeds.items()})
    for want, have in zip(expected, got, strict=True):
        if want.dtype.kind == "i":
            differ = int(np.sum(want != have))
            shown = f"in {differ} of {want.size} choices"
        else:
            with np.errstate(invalid="ignore"):  # inf - inf: equal infinities compare below
                gap = np.abs(have.astype(float) - want)
                differ = int(np.sum(~((gap <= TOLERANCE * (scale + np.abs(want)))
                                      | (have == want) | (np.isnan(have) & np.isnan(want)))))
            shown = f"by up to {np.nanmax(gap, initial=0):.3g}, or in where NaN is"
        if differ:
            raise ExportError(f"{name} is not written exactly as {fmt.name}: its outputs differ "
                              f"from torch's ({shown}) on inputs from sample observations{fix}")

