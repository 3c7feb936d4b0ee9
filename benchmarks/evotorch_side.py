"""The EvoTorch 0.6.1 half of bench_evotorch.py; runs inside benchmarks/.venv-evotorch.

    benchmarks/.venv-evotorch/bin/python benchmarks/evotorch_side.py

A small server: reads one JSON case per stdin line, runs PGPE on it with EvoTorch and writes
one JSON line starting with ``RESULT`` to stdout. A case names ``mode`` (``gymne``:
GymNE, one episode at a time; ``vecgymne``: VecGymNE, the population stepped together),
``env``, ``network``, ``popsize``, ``generations`` (timed), ``warmup`` (untimed generations
first), ``episode_length``, ``num_episodes``, ``observation_normalization``, ``num_actors``
and ``pgpe`` (PGPE's keyword options). Mode ``threshold`` (bench_locomotion.py) runs GymNE
until the center scores ``threshold`` or ``max_time`` seconds pass, with
``decrease_rewards_by`` in training and the center evaluated every generation on
``eval_episodes`` episodes of the env's own return (EvoTorch's ``GymNE.run``, no shift, stats
frozen); it returns the curve (seconds, interactions, episodes, center score per generation).
Mode ``ask_tell`` (bench_algorithms.py) times PGPE's steps on a stand-in fitness.
Interactions are EvoTorch's own counter, which counts
the steps of envs that are still evaluating (no autoreset steps), like neurorun's.
This file imports nothing from neurorun: neurorun is not installed in that venv.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import torch


def _problem(case: dict[str, Any]) -> Any:
    from evotorch.neuroevolution import GymNE, VecGymNE

    common = {"network": case["network"], "num_episodes": case["num_episodes"],
              "observation_normalization": case["observation_normalization"]}
    if case.get("num_actors"):
        common["num_actors"] = case["num_actors"]
    length = case.get("episode_length")
    if case["mode"] == "gymne":
        return GymNE(env=case["env"], episode_length=length, **common)
    # VecGymNE has no episode_length; gymnasium.make's max_episode_steps cuts the same way.
    env_config = {} if length is None else {"max_episode_steps": length}
    return VecGymNE(env=case["env"], env_config=env_config, device="cpu", **common)


def run_to_threshold(case: dict[str, Any]) -> dict[str, Any]:
    """PGPE on GymNE until the center reaches ``threshold`` or ``max_time`` runs out."""
    from evotorch.algorithms import PGPE
    from evotorch.neuroevolution import GymNE

    torch.manual_seed(case["seed"])
    problem = GymNE(env=case["env"], network=case["network"], num_episodes=1,
                    observation_normalization=case["observation_normalization"],
                    decrease_rewards_by=case["decrease_rewards_by"],
                    episode_length=case.get("episode_length"))
    searcher = PGPE(problem, popsize=case["popsize"], **case["pgpe"])
    curve: list[dict[str, float]] = []  # seconds include the center evaluations, as neurorun's
    started = time.perf_counter()
    while True:
        searcher.step()
        center = searcher.status["center"]
        score = float(problem.run(center, num_episodes=case["eval_episodes"],
                                  decrease_rewards_by=0.0)["cumulative_reward"])
        seconds = time.perf_counter() - started
        curve.append({"seconds": round(seconds, 2), "interactions": problem.interaction_count,
                      "episodes": problem.episode_count, "center_eval": round(score, 1)})
        if score >= case["threshold"] or seconds >= case["max_time"]:
            return {"solved": score >= case["threshold"], "curve": curve}


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Seconds per generation and interactions per second over the timed generations."""
    from evotorch.algorithms import PGPE

    torch.manual_seed(case.get("seed", 0))
    problem = _problem(case)
    searcher = PGPE(problem, popsize=case["popsize"], **case["pgpe"])
    for _ in range(case["warmup"]):
        searcher.step()
    seconds, interactions = [], []
    for _ in range(case["generations"]):
        before = problem.interaction_count if not case.get("num_actors") else _count(searcher)
        started = time.perf_counter()
        searcher.step()
        seconds.append(time.perf_counter() - started)
        after = problem.interaction_count if not case.get("num_actors") else _count(searcher)
        interactions.append(after - before)
    if case.get("num_actors"):
        import ray

        problem.kill_actors()
        ray.shutdown()  # the neurorun side starts its own ray next
    return {"seconds": seconds, "interactions": interactions,
            "mean_eval": float(searcher.status["mean_eval"])}


def ask_tell(case: dict[str, Any]) -> dict[str, Any]:
    """Mode ``ask_tell`` (bench_algorithms.py): seconds of ``repeats`` PGPE steps (ask, the
    stand-in fitness sum(x[:8]^2), tell) at ``dim`` x ``popsize``, after one untimed step."""
    from evotorch import Problem
    from evotorch.algorithms import PGPE

    problem = Problem("max", lambda x: x[:, :8].square().sum(dim=1), vectorized=True,
                      solution_length=case["dim"], initial_bounds=(-1.0, 1.0))
    searcher = PGPE(problem, popsize=case["popsize"], **case["pgpe"])
    searcher.step()
    seconds = []
    for _ in range(case["repeats"]):
        started = time.perf_counter()
        searcher.step()
        seconds.append(time.perf_counter() - started)
    return {"seconds": seconds}


def _count(searcher: Any) -> int:
    """With actors the main process's counter lags; the status holds the synced total."""
    return int(searcher.status.get("total_interaction_count", 0))


def main() -> None:
    import os

    import evotorch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    print(json.dumps({"READY": True, "evotorch": evotorch.__version__,
                      "torch": torch.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            result = {"threshold": run_to_threshold, "ask_tell": ask_tell}.get(
                case["mode"], run_case)(case)
        except Exception as error:  # reported back: the main side records the failure
            result = {"error": f"{type(error).__name__}: {error}"}
        print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
