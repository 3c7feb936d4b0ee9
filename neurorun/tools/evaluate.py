"""`neurorun-eval`: seeded test episodes of a saved policy, as a table or JSON.

    neurorun-eval runs/CartPole-v1/pgpe/<run> --episodes 10 --seed 0
    neurorun-eval policy.pt --json

Episode i is reset with seed `seed + i` on one env (a plain gymnasium loop; brax and env
factories through neurorun.envs), with the policy's own obs normalization and action
clipping and no reward shaping: the numbers anyone gets from the checkpoint alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from neurorun.tools.common import (
    ToolError,
    add_trust_options,
    format_mean_std,
    mean_std,
    positive_int,
    run_tool,
)
from neurorun.tools.episodes import Episode, run_episodes, step_limit
from neurorun.tools.loading import load_policy


def evaluate(path: str, *, episodes: int = 10, seed: int = 0, env: str | None = None,
             checkpoint: str = "best", max_steps: int | None = None,
             trust_pickle: bool = False, trust_code: bool = False) -> dict[str, Any]:
    """Per-episode returns and lengths of the policy at `path`, with their mean and std."""
    if episodes < 1:
        raise ToolError(f"--episodes {episodes}; expected at least 1")
    loaded = load_policy(path, checkpoint=checkpoint, env=env, trust_pickle=trust_pickle,
                         trust_code=trust_code)
    try:
        results = run_episodes(loaded, episodes, seed, max_steps=max_steps)
    except Exception as error:
        raise ToolError(f"running {loaded.env!r} failed: {type(error).__name__}: {error}") \
            from error
    return summarize(results, source=str(loaded.source), env=loaded.env, seed=seed,
                     max_steps=step_limit(loaded, max_steps))


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
    (console or Console()).print(table)


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="neurorun-eval", description="Run seeded test episodes of a saved policy.")
    result.add_argument("path", help="a run folder, a policy .pkl or a weights-only .pt")
    result.add_argument("--episodes", type=int, default=10, help="how many episodes (10)")
    result.add_argument("--seed", type=int, default=0, help="episode i is seeded seed+i (0)")
    result.add_argument("--env", default=None, help="run on this env id instead of the saved one")
    result.add_argument("--checkpoint", choices=("best", "last"), default="best",
                        help="which checkpoint of a run folder (best)")
    result.add_argument("--max-steps", type=positive_int, default=None,
                        help="cut episodes after this many steps (default: the run's "
                             "episode_length, else the env's own limit)")
    result.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_trust_options(result)
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
