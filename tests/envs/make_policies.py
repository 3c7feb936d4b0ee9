"""Trains the fixed policies of the EnvPool/gymnasium equivalence tests (not a test).

    .venv/bin/python -m tests.envs.make_policies [--seconds 45] [--ids Hopper-v5 ...]

For every id of ``EQUIVALENT_IDS`` and both backends, a short run (PGPE, SNES where
``SETTINGS`` says; linear policy, obs normalization) on that backend; the best center is
saved, weights only, as ``tests/envs/data/<id>__<backend>.pt`` with its obs statistics. The
tests then evaluate each policy on both backends.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from neurorun.cli.app import compose_config
from neurorun.envs.envpool_env import EQUIVALENT_IDS
from neurorun.loop.runner import run

DATA = Path(__file__).parent / "data"
# where PGPE's defaults learn too little in the time (HalfCheetah stayed near 0): SNES
SETTINGS = {"HalfCheetah-v5": ["algo=snes", "algo.radius_init=null", "algo.stdev_init=0.5"]}


def train(env_id: str, backend: str, seconds: float) -> dict:
    threads = ["env.num_threads=1"] if backend == "envpool" else []
    overrides = [f"env={env_id}", f"env.backend={backend}", *threads,
                 "network=linear", "problem.observation_normalization=true", "algo=pgpe",
                 "algo.popsize=40", *SETTINGS.get(env_id, []), f"max_time={seconds}",
                 "generations=null", "target_score=null", "eval_every=1", "checkpoint_every=0",
                 "logger.console.quiet=true", "seed=0"]
    with tempfile.TemporaryDirectory() as folder:
        result = run(compose_config(overrides), run_dir=folder)
        weights = torch.load(Path(folder) / "checkpoints" / "best.pt", weights_only=True)
    return {"solution": weights["solution"], "obs_mean": weights["obs_mean"],
            "obs_stdev": weights["obs_stdev"], "score": result["best_center_eval"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--ids", nargs="*", default=list(EQUIVALENT_IDS))
    parser.add_argument("--backends", nargs="*", default=["envpool", "gymnasium"])
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    for env_id in args.ids:
        for backend in args.backends:
            saved = train(env_id, backend, args.seconds)
            torch.save(saved, DATA / f"{env_id}__{backend}.pt")
            print(f"{env_id} {backend}: center_eval {saved['score']}", flush=True)


if __name__ == "__main__":
    main()
