"""`neurorun-export`: a saved policy as one self-contained ONNX or TorchScript file.

    neurorun-export runs/CartPole-v1/pgpe/<run> --out policy.onnx     # needs neurorun[export]
    neurorun-export policy.pt --out policy.pt --format torchscript  # torch.jit.load, no neurorun

The file maps raw observations to the env's actions as the run's test episodes do (observation
normalization with the run's statistics, the network, clipping to a Box's bounds or argmax +
start for Discrete), for a batch of any size, and holds in its metadata what it is: inputs and
outputs, env, spaces, the run's center score, the statistics (docs/checkpoints.md, "Exporting
a policy"). Before it is written, the file runs on a sample batch of observations and must
give the torch policy's actions; it is then written to a temporary file and renamed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

import neurorun
from neurorun.common import jsonio
from neurorun.common.extras import require
from neurorun.common.jsonio import finite_or_null
from neurorun.envs import env_spaces
from neurorun.problems.export import EnvPolicy
from neurorun.record.checkpoint import SETTING_KEYS
from neurorun.tools.common import (
    ToolError,
    add_policy_options,
    check_out,
    out_format,
    run_tool,
    write_output,
)
from neurorun.tools.evaluate import recorded_center_eval
from neurorun.tools.export_formats import (
    FORMATS,
    ExportedPolicy,
    ExportError,
    Format,
    export_policy,
    outputs_and_state,
)
from neurorun.tools.loading import LoadedPolicy, load_policy

SAMPLE_SIZE = 16  # observations the file is traced and checked on before it is written


def export(path: str, out: str | Path, *, fmt: str = "onnx", force: bool = False,
           checkpoint: str | None = None, trust_pickle: bool = False,
           trust_code: bool = False) -> dict[str, Any]:
    """Write the policy at ``path`` to ``out`` in ``fmt`` ("onnx" or "torchscript"); returns
    the metadata written into the file."""
    form = FORMATS[fmt]
    if not str(out):
        raise ToolError(f"--out '' names no file; pass --out policy{form.suffixes[0]}")
    out = Path(out)
    _check_out(out, form, force)
    if form.extra is not None:
        require(form.extra, f"--format {fmt}")
    loaded = load_policy(path, checkpoint=checkpoint, trust_pickle=trust_pickle,
                         trust_code=trust_code)
    if out.resolve() in (loaded.source.resolve(), loaded.source.with_suffix(".json").resolve()):
        raise ToolError(f"--out {str(out)!r} is the checkpoint being exported; pass another "
                        "--out")
    policy = _env_policy(loaded)

    obs_space, _, act_space = env_spaces(loaded.env, **loaded.env_config)
    obs = torch.from_numpy(sample_observations(policy, obs_space))
    _check_outputs(policy, obs, loaded)

    written: dict[str, Any] = {}

    def metadata(module: ExportedPolicy, inputs: dict[str, torch.Tensor]) -> str:
        written.update(describe(loaded, policy, obs_space, act_space, module, inputs))
        return jsonio.dumps(written, exact=SETTING_KEYS)

    try:
        data = export_policy(form, policy, obs, metadata)
    except ExportError as error:
        raise ToolError(f"{str(loaded.source)!r}: {error}; nothing written") from error
    write_output(out, lambda temporary: temporary.write_bytes(data), f"{fmt} policy")
    return written


def _check_out(out: Path, form: Format, force: bool) -> None:
    """One line before any work: a wrong suffix, then ``check_out``'s rules."""
    if out_format(out) not in form.suffixes:
        other = next(name for name in FORMATS if name != form.name)
        raise ToolError(f"--out {str(out)!r}: --format {form.name} writes a "
                        f"{' or '.join(form.suffixes)} file; pass --out policy{form.suffixes[0]}"
                        f" (or --format {other})")
    check_out(out, f"{form.name} policy", force)


def _env_policy(loaded: LoadedPolicy) -> EnvPolicy:
    """The loaded policy, with finite statistics where the run normalized observations."""
    policy = loaded.policy
    if not isinstance(policy, EnvPolicy):
        raise ToolError(f"{str(loaded.source)!r}: its policy is a {type(policy).__name__}, not "
                        "neurorun's EnvPolicy; export the run's best.pt (+ .json) instead")
    if (loaded.obs_stats is None) != (policy.obs_mean is None):
        raise ToolError(f"{str(loaded.source)!r}: the policy's observation statistics are "
                        "missing (or the file's are): use an intact copy of the checkpoint "
                        "the run wrote")
    for name in ("obs_mean", "obs_stdev"):
        values = getattr(policy, name)
        if values is not None and not bool(torch.isfinite(values).all()):
            raise ToolError(f"{str(loaded.source)!r}: the policy's {name} holds non-finite "
                            "values; use an intact copy of the checkpoint the run wrote")
    return policy.eval()


def sample_observations(policy: EnvPolicy, space: spaces.Box, count: int = SAMPLE_SIZE,
                        seed: int = 0) -> np.ndarray:
    """``(count, *shape)`` float32 observations, seeded: the run's mean and spread (else 0 and
    1) in each feature, within the space's bounds."""
    shape = tuple(space.shape)
    center, spread = np.zeros(shape), np.ones(shape)
    if policy.obs_mean is not None:
        center = policy.obs_mean.double().numpy().reshape(shape)
        spread = policy.obs_stdev.double().numpy().reshape(shape)
    drawn = center + spread * np.random.default_rng(seed).standard_normal((count, *shape))
    return np.clip(drawn, space.low, space.high).astype(np.float32)


def _check_outputs(policy: EnvPolicy, obs: torch.Tensor, loaded: LoadedPolicy) -> None:
    """ToolError when the policy's outputs on ``obs`` are not finite (an exported file would
    act on NaN)."""
    out, _ = outputs_and_state(policy, obs)
    bad = ~torch.isfinite(out).all(-1)
    if bad.any():
        raise ToolError(f"{str(loaded.source)!r}: the policy's outputs are not finite on "
                        f"{int(bad.sum())} of {len(obs)} sample observations (row "
                        f"{int(bad.nonzero()[0, 0])}: {out[bad][0].tolist()}); nothing written."
                        " Fix the network (e.g. an Apply with log or sqrt of negative values)")


def describe(loaded: LoadedPolicy, policy: EnvPolicy, obs_space: spaces.Box,
             act_space: spaces.Space, module: ExportedPolicy,
             inputs: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The metadata an exported file holds (docs/checkpoints.md lists its keys)."""
    discrete = isinstance(act_space, spaces.Discrete)
    with torch.no_grad():
        action = module(*inputs.values())
    action = action[0] if isinstance(action, tuple) else action
    states = [{"name": name, "shape": ["batch", *t.shape[1:]], "dtype": "float32",
               "initial": 0.0} for name, t in inputs.items() if name != "obs"]
    score = recorded_center_eval(loaded.source)
    return {
        "neurorun_version": neurorun.__version__,
        "env": loaded.env,
        "env_config": loaded.env_config,
        "episode_length": loaded.episode_length,
        "observation_space": space_json(obs_space),
        "action_space": space_json(act_space),
        "center_score": finite_or_null(score),
        "architecture": loaded.architecture,
        "network_args": loaded.network_args,
        "observation_normalization": None if policy.obs_mean is None else {
            "mean": policy.obs_mean.tolist(), "stdev": policy.obs_stdev.tolist()},
        "inputs": [{"name": "obs", "shape": ["batch", *obs_space.shape], "dtype": "float32"},
                   *states],
        "outputs": [{"name": "action", "shape": ["batch", *action.shape[1:]],
                     "dtype": "int64" if discrete else "float32"},
                    *({**state, "name": state["name"].replace("_in_", "_out_")}
                      for state in states)],
        "source": str(loaded.source),
    }


def space_json(space: spaces.Space) -> dict[str, Any]:
    """A Box or Discrete space as JSON; a bound is one number when every value shares it,
    null where unbounded."""
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
            "low": _bound(space.low), "high": _bound(space.high)}


def _bound(values: np.ndarray) -> Any:
    flat = finite_or_null([float(v) for v in np.asarray(values).reshape(-1)])
    return flat[0] if len(set(flat)) == 1 else flat


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="neurorun-export",
        description="Write a saved policy as one ONNX or TorchScript file: raw observations "
                    "in, the env's actions out.")
    result.add_argument("path", help="a run folder, a policy .pkl or a weights-only .pt")
    result.add_argument("--out", required=True,
                        help="the file to write: .onnx, or .pt with --format torchscript")
    result.add_argument("--format", choices=tuple(FORMATS), default="onnx",
                        help="onnx (needs neurorun[export]) or torchscript (default: onnx)")
    result.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_policy_options(result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        metadata = export(args.path, args.out, fmt=args.format, force=args.force,
                          checkpoint=args.checkpoint, trust_pickle=args.trust_pickle,
                          trust_code=args.trust_code)
        shown = ", ".join(f"{item['name']} {tuple(item['shape'])} {item['dtype']}"
                          for item in metadata["inputs"] + metadata["outputs"])
        print(f"wrote {args.out} ({args.format}): {shown}")

    return run_tool("neurorun-export", body)


if __name__ == "__main__":
    sys.exit(main())
