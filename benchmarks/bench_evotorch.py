"""neurorun against EvoTorch 0.6.1 on the same PGPE runs (``make bench``).

    python benchmarks/bench_evotorch.py [--full] [--cases CartPole-v1:50,...]

Creates benchmarks/.venv-evotorch when it is missing (``python3 -m venv``, then one pip
command with ``torch==2.13.0 evotorch==0.6.1 gymnasium[classic-control,box2d,mujoco]``, so
pip cannot pick another torch) and runs benchmarks/evotorch_side.py there as a server. Case
by case, alternating sides (load changes on a shared machine hit both), the same work runs
on both:

- PGPE + ClipUp with equal popsize, center lr 0.1125, stdev lr 0.1, radius 2.25, max_speed
  0.15, stdev_max_change 0.2, centered ranking, symmetric sampling;
- the network ``Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)``, one episode
  per solution, no observation normalization (off on both sides), the same episode cut;
- EvoTorch as GymNE (one episode at a time) and VecGymNE (the population stepped together);
  neurorun through ``neurorun.loop.runner.run`` with ``parallel=local`` (no center evaluation,
  no checkpoints until the end, console quiet: only what a generation needs), on the backend
  ``env.backend=auto`` picks (EnvPool for the ids tested equal to gymnasium's, with one
  thread: ``neurorun_backend`` in the results);
- with 2 ray actors: EvoTorch VecGymNE ``num_actors=2`` vs neurorun ``parallel=ray``.

Per side: seconds per generation and env steps/s (interactions: steps of envs still
evaluating, autoreset steps not counted; both libraries count this way), over the timed
generations after ``WARMUP`` untimed ones; each case runs ``--rounds`` times, alternating
the sides, and each side's best round counts (other processes may load the machine).
``ratio`` = neurorun steps/s / EvoTorch steps/s.
The two sides learn along different random paths, so their episodes (and seconds per
generation) differ a little; steps/s is the like-for-like figure. Torch runs one thread on
both sides (``--threads``): with 2 threads on a loaded 2-core machine both libraries' batched
ops slow down several-fold and the figures become noise. EvoTorch's brax path (jax < 0.6)
is not installed: no brax case.
Writes benchmarks/results/evotorch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import write_result

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-evotorch"
SIDE = HERE / "evotorch_side.py"
RESULTS = HERE / "results" / "evotorch.json"
PACKAGES = ["torch==2.13.0", "evotorch==0.6.1", "gymnasium[classic-control,box2d,mujoco]"]
NETWORK = "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)"
WARMUP = 1
PGPE = {"center_learning_rate": 0.1125, "stdev_learning_rate": 0.1, "radius_init": 2.25,
        "optimizer": "clipup", "optimizer_config": {"max_speed": 0.15},
        "ranking_method": "centered", "stdev_max_change": 0.2, "symmetric": True}


@dataclass(frozen=True)
class Case:
    env: str
    popsize: int
    generations: int  # timed generations per side
    episode_length: int | None = None
    num_actors: int = 0  # 0: one process; 2: neurorun parallel=ray vs VecGymNE num_actors=2
    observation_normalization: bool = False

    @property
    def modes(self) -> tuple[str, ...]:
        return ("vecgymne",) if self.num_actors else ("gymne", "vecgymne")


QUICK = [Case("CartPole-v1", 50, 12), Case("CartPole-v1", 256, 5), Case("Pendulum-v1", 64, 4),
         Case("LunarLanderContinuous-v3", 64, 4), Case("HalfCheetah-v5", 64, 3, 200),
         Case("Hopper-v5", 64, 3, 200), Case("CartPole-v1", 256, 6, num_actors=2)]
FULL = [Case("Pendulum-v1", 256, 4), Case("LunarLanderContinuous-v3", 256, 4),
        Case("HalfCheetah-v5", 64, 3), Case("CartPole-v1", 256, 8, observation_normalization=True),
        Case("Humanoid-v5", 64, 3, 200), Case("BipedalWalker-v3", 64, 3, 400),
        Case("Walker2d-v5", 64, 3, 200), Case("Ant-v5", 64, 3, 200),
        Case("HalfCheetah-v5", 256, 2, 200, num_actors=2)]


def ensure_venv() -> Path:
    """The EvoTorch venv's python, creating the venv when it is missing or broken."""
    python = VENV / "bin" / "python"
    check = [str(python), "-c", "import evotorch, gymnasium, mujoco, Box2D"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {VENV} ({', '.join(PACKAGES)}) ...", flush=True)
    subprocess.run(["python3", "-m", "venv", str(VENV)], check=True)
    # One pip command: torch's pin binds evotorch's torch requirement to the local CPU wheel.
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    subprocess.run(check, check=True)
    return python


class EvoTorchSide:
    """benchmarks/evotorch_side.py in the EvoTorch venv: one JSON case in, one result out."""

    def __init__(self, python: Path, threads: int, huge_pages: bool = False):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        # EvoTorch as its users run it: without the huge pages that `import neurorun` turns on
        # in this process (huge_pages=True: with them, to show what they do for EvoTorch)
        env.pop("THP_MEM_ALLOC_ENABLE", None)
        if huge_pages:
            env["THP_MEM_ALLOC_ENABLE"] = "1"
        self.process = subprocess.Popen(
            [str(python), str(SIDE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, cwd=tempfile.gettempdir(), env=env)
        self.versions = json.loads(self._line(""))

    def _line(self, prefix: str) -> str:
        for line in self.process.stdout:  # EvoTorch logs to stdout too: skip other lines
            if line.startswith(prefix) and (prefix or line.startswith("{")):
                return line[len(prefix):]
        raise RuntimeError("evotorch_side.py ended early; run it by hand to see why")

    def run(self, case: Case, mode: str) -> dict[str, Any]:
        return self.request({"mode": mode, "env": case.env, "network": NETWORK,
                             "popsize": case.popsize, "generations": case.generations,
                             "warmup": WARMUP, "episode_length": case.episode_length,
                             "num_episodes": 1,
                             "observation_normalization": case.observation_normalization,
                             "num_actors": case.num_actors, "pgpe": PGPE})

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """One case (see evotorch_side.py for its keys) and its result."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self._line("RESULT "))

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _overrides(case: Case) -> list[str]:
    length = "null" if case.episode_length is None else case.episode_length
    overrides = [
        f"env={case.env}", "algo=pgpe", f"algo.popsize={case.popsize}",
        f"algo.center_learning_rate={PGPE['center_learning_rate']}",
        f"algo.stdev_learning_rate={PGPE['stdev_learning_rate']}",
        f"algo.radius_init={PGPE['radius_init']}",
        f"algo.optimizer_config.max_speed={PGPE['optimizer_config']['max_speed']}",
        f"algo.stdev_max_change={PGPE['stdev_max_change']}", "algo.ranking_method=centered",
        "network=mlp", "network.network_args.hidden=16", f"problem.episode_length={length}",
        "problem.num_episodes=1",
        f"problem.observation_normalization={str(case.observation_normalization).lower()}",
        f"generations={WARMUP + case.generations}", "eval_every=0", "target_score=null",
        "checkpoint_every=0", "logger.console.quiet=true", "seed=0"]
    if _backend(case) == "envpool" and not case.num_actors:  # one thread, like the other side
        overrides.append("env.num_threads=1")
    if case.num_actors:
        overrides += ["parallel=ray", f"parallel.num_actors={case.num_actors}",
                      f"parallel.num_cpus={case.num_actors}"]
    return overrides


def _backend(case: Case) -> str:
    """The backend neurorun's `env.backend=auto` picks for the case's env."""
    from neurorun.envs import resolve_backend

    return "envpool" if resolve_backend(case.env).startswith("envpool::") else "gymnasium"


def run_neurorun(case: Case) -> dict[str, Any]:
    """The same PGPE run through neurorun's runner; times between generation ends."""
    from neurorun.cli.app import compose_config
    from neurorun.loop.callbacks import Callbacks
    from neurorun.loop.runner import run

    class Timer(Callbacks):
        def __init__(self) -> None:
            self.last = 0.0
            self.seconds: list[float] = []
            self.interactions: list[int] = []
            self.mean_eval = float("nan")

        def on_run_start(self, runner: Any) -> None:
            self.last = time.perf_counter()

        def on_generation_end(self, runner: Any, generation: int, status: dict) -> None:
            now = time.perf_counter()
            if generation > WARMUP:
                self.seconds.append(now - self.last)
                self.interactions.append(int(status["interactions"]))
            self.last, self.mean_eval = now, float(status["mean_eval"])

    timer = Timer()
    with tempfile.TemporaryDirectory(prefix="bench_evotorch_") as folder:
        run(compose_config(_overrides(case)), run_dir=folder, callbacks=timer)
    # network spec check: mlp with hidden 16 is the same string as NETWORK
    return {"seconds": timer.seconds, "interactions": timer.interactions,
            "mean_eval": timer.mean_eval}


def _rates(raw: dict[str, Any]) -> dict[str, Any]:
    if "error" in raw:
        return raw
    seconds, steps = sum(raw["seconds"]), sum(raw["interactions"])
    return {"s_per_generation": round(seconds / len(raw["seconds"]), 4),
            "steps_per_s": round(steps / seconds), "interactions": steps,
            "mean_eval_last": round(raw["mean_eval"], 2)}


def _best(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the most steps/s (others were slowed by load), with all rounds' rates."""
    ok = [r for r in rounds if "error" not in r]
    if not ok:
        return rounds[0]
    best = max(ok, key=lambda r: r["steps_per_s"])
    return {**best, "steps_per_s_rounds": [r["steps_per_s"] for r in ok]}


def bench_case(case: Case, side: EvoTorchSide, rounds: int) -> dict[str, Any]:
    """Rounds alternate the sides; each side's best round is reported."""
    result: dict[str, Any] = {**asdict(case), "network": NETWORK, "rounds": rounds,
                              "neurorun_backend": _backend(case)}
    measured: dict[str, list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for mode in case.modes:
            measured.setdefault(f"evotorch_{mode}", []).append(_rates(side.run(case, mode)))
        measured.setdefault("neurorun", []).append(_rates(run_neurorun(case)))
    result.update({key: _best(values) for key, values in measured.items()})
    ours = result["neurorun"]["steps_per_s"]
    for mode in case.modes:
        theirs = result[f"evotorch_{mode}"].get("steps_per_s")
        result[f"ratio_{mode}"] = round(ours / theirs, 2) if theirs else None
    return result


def _select(cases: list[Case], wanted: str | None) -> list[Case]:
    if not wanted:
        return cases
    keys = set(wanted.split(","))
    return [c for c in cases if f"{c.env}:{c.popsize}" in keys]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add bigger populations, "
                        "full HalfCheetah episodes, observation normalization and Humanoid")
    parser.add_argument("--cases", help="only these, as env:popsize,env:popsize")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds per case, alternating the sides; the best one counts")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads on both sides (1: stable when the machine is shared)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)  # here; the EvoTorch side gets OMP_NUM_THREADS
    side = EvoTorchSide(ensure_venv(), args.threads)
    results = []
    try:
        for case in _select(QUICK + (FULL if args.full else []), args.cases):
            result = bench_case(case, side, args.rounds)
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        side.close()
    return write_result(args.out, evotorch_side=side.versions, full=args.full,
                        torch_threads=args.threads, cases=results)


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("evotorch.json",
     "Against EvoTorch 0.6.1: the same PGPE runs (× = neurorun steps/s ÷ EvoTorch's)"),
]


def _case(r: dict) -> str:
    cut = f", {r['episode_length']} steps" if r.get("episode_length") else ""
    norm = ", obs norm" if r.get("observation_normalization") else ""
    actors = f", {r['num_actors']} ray actors" if r.get("num_actors") else ""
    backend = ", EnvPool" if r.get("neurorun_backend") == "envpool" else ""
    return f"{r['env']}{cut}{norm}{actors}{backend}"


def table(report: dict) -> list[str]:
    lines = ["| env | popsize | neurorun s/gen | neurorun steps/s | EvoTorch GymNE s/gen | "
             "GymNE steps/s | EvoTorch VecGymNE s/gen | VecGymNE steps/s | "
             "× GymNE | × VecGymNE |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        ours = r["neurorun"]
        cells = []
        for mode in ("gymne", "vecgymne"):
            theirs = r.get(f"evotorch_{mode}")
            cells += (["–", "–"] if theirs is None else
                      [f"error: {theirs['error']}", "–"] if "error" in theirs else
                      [str(theirs["s_per_generation"]), f"{theirs['steps_per_s']:,}"])
        ratios = [f"**{r[k]}×**" if r.get(k) is not None else "–"
                  for k in ("ratio_gymne", "ratio_vecgymne")]
        lines.append(f"| {_case(r)} | {r['popsize']} | {ours['s_per_generation']} | "
                     f"{ours['steps_per_s']:,} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return lines


if __name__ == "__main__":
    main()
