"""Time one ask + tell per algorithm at policy scale (D = 100,000, popsize 1,000, one core).

    python benchmarks/bench_algorithms.py [--dim 100000] [--popsize 1000] [--repeats 5]
                                          [--rounds 5] [--no-evotorch]

Writes benchmarks/results/algorithms.json: per algorithm the median ms of ask, tell and both.
Full-covariance algorithms (xnes, cmaes) refuse D = 100,000; they are timed at --full-dim.
Then PGPE against EvoTorch 0.6.1's PGPE (benchmarks/.venv-evotorch, as bench_evotorch.py
makes it) on the same work: one step = ask, the stand-in fitness, tell; same popsize, learning
rates, stdev_init, ClipUp, mirrored sampling. Rounds alternate the sides; each round's figure
is the median of --repeats steps after an untimed one; ``pgpe_vs_evotorch`` gives each side's
ms (median, min, max over rounds) and the per-round ratio neurorun / EvoTorch. EvoTorch runs
as installed and again with torch's transparent huge pages (``THP_MEM_ALLOC_ENABLE=1``, which
``import neurorun`` sets): ``ratio_huge_pages``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch
from harness import ratios, spread, write_result

from neurorun.algorithms import ALGORITHMS, make_algorithm

RESULTS = Path(__file__).parent / "results" / "algorithms.json"
FULL_COVARIANCE = {"xnes", "cmaes"}
SETTINGS = {
    "pgpe": {"center_learning_rate": 0.1, "stdev_learning_rate": 0.1},
    "cem": {"parenthood_ratio": 0.1},
    "ars": {"stdev_init": None, "step_size": 0.02, "noise": 0.1},  # ARS explores with its noise
    "openai_es": {"center_learning_rate": 0.01},
}


def time_algorithm(name: str, dim: int, popsize: int, repeats: int) -> dict[str, float]:
    options = {"stdev_init": 0.1, **SETTINGS.get(name, {})}
    algo = make_algorithm(name, solution_length=dim, popsize=popsize, seed=0, **options)
    ask_ms, tell_ms = [], []
    for _ in range(repeats + 1):  # the first round warms up allocations
        start = time.perf_counter()
        samples = algo.ask()
        asked = time.perf_counter()
        algo.tell(samples[:, :8].square().sum(dim=1))  # cheap stand-in fitness
        ask_ms.append(1e3 * (asked - start))
        tell_ms.append(1e3 * (time.perf_counter() - asked))
        del samples
    ask, tell = statistics.median(ask_ms[1:]), statistics.median(tell_ms[1:])
    return {"dim": dim, "popsize": popsize, "ask_ms": round(ask, 2), "tell_ms": round(tell, 2),
            "ask_tell_ms": round(ask + tell, 2)}


def pgpe_step_ms(dim: int, popsize: int, repeats: int) -> float:
    """neurorun's side of the EvoTorch comparison: median ms of one ask + tell."""
    return time_algorithm("pgpe", dim, popsize, repeats)["ask_tell_ms"]


def against_evotorch(dim: int, popsize: int, repeats: int, rounds: int) -> dict:
    """PGPE step ms, neurorun and EvoTorch alternating, per round; their spreads and ratios.
    EvoTorch runs as installed, and again with torch's huge pages on (what neurorun turns on)."""
    from bench_evotorch import EvoTorchSide, ensure_venv

    python = ensure_venv()
    sides = {"evotorch": EvoTorchSide(python, threads=1),
             "evotorch_huge_pages": EvoTorchSide(python, threads=1, huge_pages=True)}
    case = {"mode": "ask_tell", "dim": dim, "popsize": popsize, "repeats": repeats,
            "pgpe": {"stdev_init": 0.1, **SETTINGS["pgpe"]}}
    times: dict[str, list[float]] = {"neurorun": [], **{name: [] for name in sides}}
    try:
        for _ in range(rounds):
            times["neurorun"].append(pgpe_step_ms(dim, popsize, repeats))
            for name, side in sides.items():
                result = side.request(case)
                if "error" in result:
                    raise RuntimeError(f"EvoTorch side: {result['error']}")
                times[name].append(1e3 * statistics.median(result["seconds"]))
    finally:
        for side in sides.values():
            side.close()
    return {"dim": dim, "popsize": popsize, "rounds": rounds,
            "evotorch": sides["evotorch"].versions,
            **{f"{name}_ms": spread(values) for name, values in times.items()},
            "ratio": ratios(times["neurorun"], times["evotorch"]),
            "ratio_huge_pages": ratios(times["neurorun"], times["evotorch_huge_pages"])}


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=100_000)
    parser.add_argument("--popsize", type=int, default=1_000)
    parser.add_argument("--full-dim", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-evotorch", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = {}
    for name in ALGORITHMS:
        dim = args.full_dim if name in FULL_COVARIANCE else args.dim
        results[name] = time_algorithm(name, dim, args.popsize, args.repeats)
        print(f"{name:10s} D={dim:>7d} popsize={args.popsize}: " + ", ".join(
            f"{key} {value}" for key, value in results[name].items() if key.endswith("ms")))
    versus = None
    if not args.no_evotorch:
        versus = against_evotorch(args.dim, args.popsize, args.repeats, args.rounds)
        print(f"pgpe vs EvoTorch: {versus['neurorun_ms']} ms vs {versus['evotorch_ms']} ms "
              f"({versus['evotorch_huge_pages_ms']} with huge pages), ratio {versus['ratio']} "
              f"({versus['ratio_huge_pages']})")
    write_result(args.output, threads=1, processor=platform.processor(), results=results,
                 pgpe_vs_evotorch=versus)
    return results


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("algorithms.json",
     "One ask + tell (one CPU thread)"),
]


def table(report: dict) -> list[str]:
    lines = ["| algorithm | D | popsize | ask ms | tell ms | ask+tell ms |",
             "|---|---|---|---|---|---|"]
    for name, r in report["results"].items():
        lines.append(f"| {name} | {r['dim']:,} | {r['popsize']:,} | {r['ask_ms']} | "
                     f"{r['tell_ms']} | {r['ask_tell_ms']} |")
    versus = report.get("pgpe_vs_evotorch")
    if versus:
        def shown(figures: dict) -> str:
            return f"{figures['median']} ({figures['min']}–{figures['max']})"

        lines += ["", f"PGPE step (ask, stand-in fitness, tell) at D = {versus['dim']:,}, popsize "
                  f"{versus['popsize']:,}, against EvoTorch {versus['evotorch']['evotorch']} in "
                  f"the same run, {versus['rounds']} alternating rounds, ms median (min–max): "
                  f"neurorun {shown(versus['neurorun_ms'])}, EvoTorch "
                  f"{shown(versus['evotorch_ms'])} (with torch's huge pages, which neurorun "
                  f"turns on: {shown(versus['evotorch_huge_pages_ms'])}); neurorun ÷ EvoTorch "
                  f"{shown(versus['ratio'])} ({shown(versus['ratio_huge_pages'])})."]
    return lines


if __name__ == "__main__":
    main()
