"""Batched policy forward vs a Python loop over single modules (humanoid-sized policies).

Run ``python benchmarks/bench_nets.py`` (or ``make bench``); writes benchmarks/results/nets.json.
Targets from the issue: batched >= 20x faster than the loop, one batched step under 2 ms.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from harness import write_result

from neurorun.nets import BatchedPolicy, parameter_count, parse_network, vector_to_module

NETWORK = "Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)"
RESULTS = Path(__file__).resolve().parent / "results" / "nets.json"


def _times_ms(function: Callable[[], object], repeats: int, sync: Callable[[], None]) -> list:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def measure(popsize: int = 1000, obs_length: int = 244, act_length: int = 17,
            device: str = "cpu", repeats: int = 200) -> dict:
    """Milliseconds (median and best) of one batched forward and of the loop over the modules."""
    torch.manual_seed(0)
    module = parse_network(NETWORK, obs_length=obs_length, act_length=act_length)
    params = 0.1 * torch.randn(popsize, parameter_count(module), device=device)
    obs = torch.randn(popsize, obs_length, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    policy = BatchedPolicy(module)
    set_ms = statistics.median(_times_ms(lambda: policy.set_parameters(params), 20, sync))
    for _ in range(10):
        policy(obs)
    batched = _times_ms(lambda: policy(obs), repeats, sync)

    singles = [vector_to_module(module, row) for row in params]

    def loop() -> None:
        with torch.no_grad():
            for single, row in zip(singles, obs, strict=True):
                single(row)

    loop()
    looped = _times_ms(loop, max(3, repeats // 20), sync)
    batched_ms, loop_ms = statistics.median(batched), statistics.median(looped)
    return {
        "network": NETWORK, "popsize": popsize, "obs_length": obs_length,
        "act_length": act_length, "solution_length": parameter_count(module), "device": device,
        "dtype": "float32", "threads": torch.get_num_threads(), "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "batched_step_ms": round(batched_ms, 4), "loop_ms": round(loop_ms, 3),
        "batched_step_ms_min": round(min(batched), 4), "loop_ms_min": round(min(looped), 3),
        "speedup": round(loop_ms / batched_ms, 2), "set_parameters_ms": round(set_ms, 4),
        "targets": {"speedup_min": 20, "batched_step_ms_max": 2.0},
        "meets_targets": loop_ms / batched_ms >= 20 and batched_ms < 2.0,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--popsize", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = measure(popsize=args.popsize, device=args.device, repeats=args.repeats)
    write_result(args.output, **result)
    print(json.dumps(result, indent=2))
    return result


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("nets.json",
     "Batched policy forward (CPU)"),
]


def table(r: dict) -> list[str]:
    return [
        "| policies | network | batched step ms | loop over modules ms | speedup |",
        "|---|---|---|---|---|",
        f"| {r['popsize']:,} | `{r['network']}` ({r['obs_length']} → {r['act_length']}) | "
        f"{r['batched_step_ms']} | {r['loop_ms']} | {r['speedup']}× |",
    ]


if __name__ == "__main__":
    main()
