"""Common episode seeds for a mirrored pair: do they make PGPE's step on Humanoid-v5 repeatable?

    python benchmarks/bench_pair_seeds.py RUN_FOLDER [--rounds 3] [--directions 230]

From a run's last checkpoint (its center and observation statistics; a PGPE or ARS run on
``Humanoid-v5``), ``--directions`` noise directions ``e_k`` at the stdev ``--stdev`` (the
preset's 0.0075) are drawn once. Each round evaluates the mirrored pairs ``center ± stdev e_k``
with the preset's reward shift (5 a step) twice, on one new base seed:

- *own seeds*: the 2k solutions in one call, so each member of a pair plays its own episode
  seed (how neurorun evaluates a generation);
- *common seeds*: the ``+`` members in one call and the ``-`` members in another on the same
  base seed, so both members of pair k play the same episode seed (the same start state).

Per mode, the return differences ``d_k = f(+e_k) - f(-e_k)`` of the rounds are compared: their
correlation across rounds and the cosine between the rounds' steps ``sum_k d_k e_k`` (1: the
step does not depend on the episodes' seeds; 0: it is all the episodes' noise). The
observation statistics are the checkpoint's in every call. Writes
results/pair_seeds.json.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import statistics
from pathlib import Path

import numpy as np
import torch
from harness import RESULTS, write_result

from neurorun.problems import make_problem
from neurorun.tools.loading import load_policy

ENV = "envpool::Humanoid-v5"
SHIFT = 5.0  # the preset's reward shift (env/Humanoid-v5.yaml)


def repeatability(d: np.ndarray, directions: np.ndarray) -> dict[str, float]:
    """Mean over pairs of rounds of corr(d) and of the cosine between the steps d @ e."""
    steps = d @ directions
    corr, cos = [], []
    for i, j in itertools.combinations(range(len(d)), 2):
        corr.append(float(np.corrcoef(d[i], d[j])[0, 1]))
        cos.append(float(steps[i] @ steps[j] / np.linalg.norm(steps[i]) / np.linalg.norm(steps[j])))
    return {"corr_d": round(statistics.mean(corr), 3), "corr_d_min": round(min(corr), 3),
            "corr_d_max": round(max(corr), 3), "cos_step": round(statistics.mean(cos), 3),
            "stdev_d": round(float(d.std()), 1)}


def checkpoint_episodes(run: str) -> int:
    """The training episodes behind the run's last checkpoint: metrics.csv's count at the
    generation its checkpoints/last.json names."""
    generation = json.loads((Path(run) / "checkpoints" / "last.json").read_text())["generation"]
    with open(Path(run) / "metrics.csv", newline="") as file:
        counts = {int(row["generation"]): int(float(row["total_episode_count"]))
                  for row in csv.DictReader(file)}
    return counts[int(generation)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a run folder of Humanoid-v5 (its checkpoints/last.pt)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--directions", type=int, default=230)
    parser.add_argument("--stdev", type=float, default=0.0075)
    args = parser.parse_args()
    torch.set_num_threads(1)
    loaded = load_policy(args.run, checkpoint="last")
    problem = make_problem(ENV, loaded.architecture, network_args=loaded.network_args or None,
                           env_config=loaded.env_config, observation_normalization=True,
                           decrease_rewards_by=SHIFT, seed=0)
    center = loaded.solution.double()
    generator = torch.Generator().manual_seed(1)
    directions = torch.randn(args.directions, center.numel(), generator=generator,
                             dtype=torch.float64)
    plus = (center + args.stdev * directions).float()
    minus = (center - args.stdev * directions).float()
    mirrored = torch.stack([plus, minus], 1).reshape(2 * args.directions, -1)

    def fitness(params: torch.Tensor, seed: int) -> np.ndarray:
        problem.set_obs_stats(loaded.obs_stats)
        return problem.evaluate(params, seed=seed).double().numpy()

    own, common, means = [], [], []
    for round_ in range(args.rounds):
        seed = 1000 * (round_ + 1)
        both = fitness(mirrored, seed)
        own.append(both[0::2] - both[1::2])
        up, down = fitness(plus, seed), fitness(minus, seed)
        common.append(up - down)
        means.append(float(both.mean()))
        print(f"round {round_}: mean shaped return {means[-1]:.1f}", flush=True)
    e = directions.numpy()
    result = {"run": Path(args.run).resolve().name, "env": ENV, "directions": args.directions,
              "stdev": args.stdev, "rounds": args.rounds,
              "checkpoint_episodes": checkpoint_episodes(args.run),
              "mean_shaped_return": round(statistics.mean(means), 1),
              "own_seeds": repeatability(np.stack(own), e),
              "common_seeds": repeatability(np.stack(common), e),
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    print(result, flush=True)
    write_result(RESULTS / "pair_seeds.json", **result)
    problem.close()


TABLES = [("pair_seeds.json", "Common episode seeds for mirrored pairs (Humanoid-v5)")]


def table(report: dict) -> list[str]:
    lines = ["| episode seeds | corr(d) across rounds, mean (min–max) | cosine of the steps "
             "| stdev of d |", "|---|---|---|---|"]
    for mode, name in (("own_seeds", "each member its own"), ("common_seeds", "common to a pair")):
        r = report[mode]
        lines.append(f"| {name} | {r['corr_d']:.2f} ({r['corr_d_min']:.2f}–{r['corr_d_max']:.2f})"
                     f" | {r['cos_step']:.2f} | {r['stdev_d']:.1f} |")
    return lines + ["", f"d = f(+e) − f(−e) of {report['directions']} mirrored pairs at stdev "
                    f"{report['stdev']}, {report['rounds']} rounds of new episode seeds, from "
                    f"run {report['run']} after {report['checkpoint_episodes']:,} episodes "
                    f"({report['env']}, reward shift {SHIFT:g})."]


if __name__ == "__main__":
    main()
