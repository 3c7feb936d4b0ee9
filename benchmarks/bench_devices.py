"""The compiled evaluation on 1 and 2 (or more) jax devices, side by side in one process.

    python benchmarks/bench_devices.py [--rounds 3] [--devices 1,2,4] [--cases ...]

On a CPU the script gives jax one host device per core (as the ``neurorun`` command does);
with GPUs it uses them. Per case (env, network, popsize; at most ``MAX_SLOTS`` env slots in
all, split over the devices), one Problem per device count evaluates the same populations
with the same seeds, round by round in turn: ``rate_<k>`` is counted interactions per second
of ``Problem.evaluate`` on k devices, ``counted_fraction_<k>`` its interactions over the env
steps its batches took (idle slots included), ``speedup_<k>`` the ratio to one device in the
same round, with the min-max spread over rounds; ``fitness_rel_diff_<k>`` the median relative
difference of the solutions' fitness from one device's (a simulator may round apart at another
batch size, and a long episode carries it along). Writes benchmarks/results/jax_devices.json
(GPU: jax_devices_gpu.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from neurorun.problems.devices import host_device_flags  # noqa: E402 (before jax starts)

_flags, _said = host_device_flags("auto", os.environ)
if _flags is not None:
    os.environ["XLA_FLAGS"] = _flags

import jax  # noqa: E402
import torch  # noqa: E402
from harness import RESULTS, ratios, seconds, spread, spread_text, write_result  # noqa: E402

from neurorun.problems import make_problem  # noqa: E402

NETWORKS = {"linear": "Linear(obs_length, act_length)",
            "mlp64": "Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)"}
EPISODE_LENGTH = 1000
MAX_SLOTS = 256  # env slots in all on a CPU (popsize 1,024: 4 pairs per slot)
CPU_CASES = [(env, net, popsize) for env in ("playground::CheetahRun", "brax::ant")
             for net in NETWORKS for popsize in (256, 1024)] + [
    ("brax::humanoid", "linear", 256)]
GPU_CASES = [(env, net, popsize) for env in ("playground::CheetahRun", "brax::ant",
                                             "brax::humanoid") for net in NETWORKS
             for popsize in (1024, 4096, 16384)]


def case(spec: str, network: str, popsize: int, counts: list[int], rounds: int,
         on_cpu: bool) -> dict[str, Any]:
    slots = min(popsize, MAX_SLOTS) if on_cpu else popsize
    problems = {k: make_problem(env=spec, network=NETWORKS[network], seed=0, devices=k,
                                episode_length=EPISODE_LENGTH, max_num_envs=slots)
                for k in counts}
    generator = torch.Generator().manual_seed(0)
    length = problems[counts[0]].solution_length
    first_s = {k: seconds(lambda p=p: p.evaluate(0.1 * torch.randn(popsize, length), seed=0))[0]
               for k, p in problems.items()}
    rates: dict[int, list[float]] = {k: [] for k in counts}
    counted: dict[int, list[float]] = {k: [] for k in counts}
    differ: dict[int, list[float]] = {k: [] for k in counts}
    for round_ in range(1, rounds + 1):
        params = 0.1 * torch.randn(popsize, length, generator=generator)
        fitness = {}
        for k, problem in problems.items():
            elapsed, fitness[k] = seconds(
                lambda p=problem, x=params, s=round_: p.evaluate(x, seed=s))
            stats = problem.last_stats
            rates[k].append(stats.num_interactions / elapsed)
            counted[k].append(stats.num_interactions / stats.num_simulated_steps)
        for k in counts[1:]:  # a simulator rounds apart at another batch size (chaos)
            base = fitness[counts[0]]
            differ[k].append(float(((fitness[k] - base).abs()
                                    / base.abs().clamp(min=1.0)).median()))
    result: dict[str, Any] = {"env": spec, "network": network, "popsize": popsize,
                              "slots": slots}
    for k in counts:
        result[f"rate_{k}"] = spread(rates[k], 1)
        result[f"counted_fraction_{k}"] = spread(counted[k], 3)
        result[f"first_call_s_{k}"] = round(first_s[k], 1)
        if k != counts[0]:
            result[f"speedup_{k}"] = ratios(rates[k], rates[counts[0]])
            result[f"fitness_rel_diff_{k}"] = spread(differ[k], 6)
    for problem in problems.values():
        problem.close()
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--devices", default=None,
                        help="device counts to compare (default: 1, 2, 4, ... up to all)")
    parser.add_argument("--cases", default=None,
                        help="env/network/popsize,... e.g. brax::ant/mlp64/1024")
    args = parser.parse_args(argv)
    counts = ([int(k) for k in args.devices.split(",")] if args.devices else
              [2 ** i for i in range(len(jax.devices()).bit_length())])
    on_cpu = jax.default_backend() == "cpu"
    cases = CPU_CASES if on_cpu else GPU_CASES
    if args.cases:
        cases = [(env, network, int(popsize)) for env, network, popsize in
                 (case.rsplit("/", 2) for case in args.cases.split(","))]
    name = "jax_devices.json" if on_cpu else "jax_devices_gpu.json"
    print(_said, flush=True)
    results: list[dict[str, Any]] = []
    report: dict = {}
    for spec, network, popsize in cases:
        results.append(case(spec, network, popsize, counts, args.rounds, on_cpu))
        print(json.dumps(results[-1]), flush=True)
        report = write_result(RESULTS / name, jax=jax.__version__,
                              jax_backend=jax.default_backend(), devices=len(jax.devices()),
                              host_devices=_said, rounds=args.rounds,
                              episode_length=EPISODE_LENGTH, results=results)
    return report


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("jax_devices.json",
     "The compiled evaluation on several jax devices (CPU: one host device per core)"),
]


def table(report: dict) -> list[str]:
    counts = sorted(int(k.split("_")[1]) for k in report["results"][0] if k.startswith("rate_"))
    lines = [f"{report['host_devices']}; counted steps per second of `Problem.evaluate`, "
             f"median (min–max) over {report['rounds']} rounds, device counts side by side "
             "in each round; ÷ 1: the ratio to one device in the same round; fitness "
             "difference: the median relative difference of the solutions' fitness from one "
             "device's (a simulator rounds apart at another batch size).", "",
             "| env | network | popsize → slots | "
             + " | ".join(f"{k} device(s)" for k in counts) + " | "
             + " | ".join(f"{k} ÷ 1 | fitness difference {k}" for k in counts[1:])
             + " | counted ÷ simulated |",
             "|---|---|---|" + "---|" * (len(counts) + 2 * (len(counts) - 1) + 1)]
    for r in report["results"]:
        cells = [f"{r[f'rate_{k}']['median']:,.0f}" for k in counts]
        cells += [f"{spread_text(r[f'speedup_{k}'])} | {r[f'fitness_rel_diff_{k}']['median']:.3g}"
                  for k in counts[1:]]
        lines.append(f"| {r['env']} | {r['network']} | {r['popsize']:,} → {r['slots']:,} | "
                     + " | ".join(cells)
                     + f" | {spread_text(r[f'counted_fraction_{counts[-1]}'])} |")
    return lines


if __name__ == "__main__":
    main()
