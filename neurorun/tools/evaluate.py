"""`neurorun-eval`: seeded test episodes of a saved policy, as a table or JSON.

    neurorun-eval runs/CartPole-v1/pgpe/<run> --episodes 10 --seed 0
    neurorun-eval policy.pt --json

Episode i is reset with seed `seed + i` on one env (a plain gymnasium loop; brax and env
factories through neurorun.envs), with the policy's own obs normalization and action
clipping and no reward shaping: the numbers anyone gets from the checkpoint alone. Without
--seed and --episodes, a run folder's checkpoint runs the run's own center evaluation (its
eval_episodes, its evaluation seed stream, its episode_length), printed beside the center_eval
the run recorded for it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from neurorun.common.errors import one_line
from neurorun.common.files import read_bounded
from neurorun.common.seeding import derive_seed
from neurorun.common.values import is_number
from neurorun.tools.common import (
    ToolError,
    add_policy_options,
    check_episode_seeds,
    format_mean_std,
    mean_std,
    positive_int,
    run_tool,
    seed_int,
)
from neurorun.tools.episodes import (
    EPISODE_BYTES,
    Episode,
    check_memory,
    run_episodes,
    step_limit,
)
from neurorun.tools.loading import load_policy
from neurorun.tools.runs import run_settings

JSON_BYTES = 1 << 20  # a checkpoint's .json is a few hundred bytes


def evaluate(path: str, *, episodes: int | None = None, seed: int | None = None,
             env: str | None = None, checkpoint: str | None = None, max_steps: int | None = None,
             trust_pickle: bool = False, trust_code: bool = False) -> dict[str, Any]:
    """Per-episode returns and lengths of the policy at `path`, with their mean and std, and
    the center_eval its run recorded (`recorded_center_eval`, None when unknown). `episodes`
    and `seed` default to the run's center evaluation (`center_evaluation`), else 10 and 0."""
    if episodes is not None and episodes < 1:
        raise ToolError(f"--episodes {episodes}; expected at least 1")
    loaded = load_policy(path, checkpoint=checkpoint, env=env, trust_pickle=trust_pickle,
                         trust_code=trust_code)
    own = center_evaluation(loaded.source)
    as_run = own is not None and all(v is None for v in (episodes, seed, env, max_steps))
    episodes = episodes or (own[0] if own else 10)
    seed = seed if seed is not None else (own[1] if own else 0)
    check_episode_seeds(seed, episodes)
    check_memory(episodes, EPISODE_BYTES, "episode results")
    try:
        results = run_episodes(loaded, episodes, seed, max_steps=max_steps)
    except Exception as error:
        raise ToolError(f"running {loaded.env!r} failed: "
                        f"{one_line(error, with_type=True)}") from error
    return summarize(results, source=str(loaded.source), env=loaded.env, seed=seed,
                     max_steps=step_limit(loaded, max_steps), as_run=as_run,
                     recorded_center_eval=recorded_center_eval(loaded.source))


def center_evaluation(checkpoint: Path) -> tuple[int, int] | None:
    """(episodes, base seed) of the center evaluation of the run `checkpoint` belongs to (its
    saved config's eval_episodes and seed, as the runner derives it), or None outside a run
    (a refused config is a ToolError, as for every tool)."""
    settings = run_settings(checkpoint)
    episodes, seed = settings.get("eval_episodes"), settings.get("seed")
    if episodes is None or seed is None:
        return None
    return episodes, derive_seed(seed, "evaluation")


def recorded_center_eval(checkpoint: Path) -> float | None:
    """The center_eval the run recorded for `checkpoint` in its .json (best: its score)."""
    try:
        meta = json.loads(read_bounded(checkpoint.with_suffix(".json"), JSON_BYTES))
        value = meta.get("score", meta.get("center_eval"))
    except (OSError, ValueError, AttributeError, RecursionError):  # none, not JSON, too deep
        return None
    return float(value) if is_number(value) else None


def summarize(results: list[Episode], **info: Any) -> dict[str, Any]:
    returns = [e.episode_return for e in results]
    lengths = [e.length for e in results]
    return_mean, return_std = mean_std(returns)
    length_mean, length_std = mean_std(lengths)
    return {**info,
            "episodes": [{"seed": e.seed, "return": e.episode_return, "length": e.length}
                         for e in results],
            "return_mean": return_mean, "return_std": return_std,
            "length_mean": length_mean, "length_std": length_std}


def print_table(summary: dict[str, Any], console: Any = None) -> None:
    """Print the table on `console` (a rich Console; default: stdout)."""
    from rich.console import Console
    from rich.table import Table

    limit = summary["max_steps"]
    title = summary["env"] + ("" if limit is None else f", at most {limit} steps")
    if summary.get("as_run"):
        title += ", as the run evaluated its center"
    table = Table(title=title, caption=summary["source"])
    for column in ("episode", "seed", "return", "length"):
        table.add_column(column, justify="right", no_wrap=True)
    for index, row in enumerate(summary["episodes"]):
        table.add_row(str(index), str(row["seed"]), f"{row['return']:.2f}", str(row["length"]))
    table.add_section()
    table.add_row("mean ± std", "", format_mean_std(summary["return_mean"],
                                                    summary["return_std"]),
                  format_mean_std(summary["length_mean"], summary["length_std"], 1),
                  style="bold")
    recorded = summary.get("recorded_center_eval")
    if recorded is not None:
        table.add_row("the run's center_eval", "", f"{recorded:.2f}", "", style="dim")
    (console or Console()).print(table)


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="neurorun-eval", description="Run seeded test episodes of a saved policy.")
    result.add_argument("path", help="a run folder, a policy .pkl or a weights-only .pt")
    result.add_argument("--episodes", type=int, default=None,
                        help="how many episodes (default: a run's eval_episodes, else 10)")
    result.add_argument("--seed", type=seed_int, default=None,
                        help="episode i is seeded seed+i (default: a run's center evaluation "
                             "seeds, else 0)")
    result.add_argument("--env", default=None, help="run on this env id instead of the saved one")
    result.add_argument("--max-steps", type=positive_int, default=None,
                        help="cut episodes after this many steps (default: the run's "
                             "episode_length, else the env's own limit)")
    result.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_policy_options(result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        # Libraries print notes while importing (mujoco's "Failed to import warp"): keep
        # stdout for the table or the JSON alone.
        with contextlib.redirect_stdout(sys.stderr):
            summary = evaluate(args.path, episodes=args.episodes, seed=args.seed, env=args.env,
                               checkpoint=args.checkpoint, max_steps=args.max_steps,
                               trust_pickle=args.trust_pickle, trust_code=args.trust_code)
        if args.json:
            json.dump(summary, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            print_table(summary)

    return run_tool("neurorun-eval", body)


if __name__ == "__main__":
    sys.exit(main())
