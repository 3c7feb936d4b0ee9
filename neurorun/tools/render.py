"""`neurorun-render`: a video of a saved policy.

    neurorun-render runs/CartPole-v1/pgpe/<run> --out policy.gif
    neurorun-render policy.pt --out policy.mp4 --episodes 2 --fps 50   # needs neurorun[video]
    neurorun-render runs/brax_ant/pgpe/<run> --out ant.html            # brax's HTML viewer

gymnasium envs render with `render_mode="rgb_array"`: each episode gives one frame after its
reset and one after every step, so a video of episodes with lengths L1..Lk holds
(L1 + 1) + ... + (Lk + 1) frames: exactly that many in an MP4; a GIF (Pillow) stores a run of
identical frames once with their durations summed, so its playing time is that many frames
(durations in whole hundredths of a second, e.g. --fps 20 or 25 are exact). MuJoCo renders
offscreen (MUJOCO_GL=egl, else osmesa).
brax envs write brax's HTML viewer (.html) or frames from brax.io.image (.gif/.mp4).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from neurorun.common.errors import one_line
from neurorun.envs import backend_of, parse_spec
from neurorun.problems.playback import (
    Episode,
    is_mujoco_env,
    offscreen_pygame,
    prepare_mujoco_gl,
)
from neurorun.tools.brax_render import render_brax
from neurorun.tools.common import (
    ToolError,
    add_policy_options,
    check_episode_seeds,
    check_out,
    out_format,
    positive_int,
    run_tool,
    seed_int,
)
from neurorun.tools.episodes import run_episodes, step_limit
from neurorun.tools.loading import load_policy
from neurorun.tools.video import check_video_writer, no_renderer_error, write_video

MIN_FPS, MAX_FPS = 0.1, 100.0  # a GIF's frame: 10 ms to 10 s, in whole hundredths


def render(path: str, out: str | Path, *, episodes: int = 1, seed: int = 0, fps: float = 30.0,
           max_steps: int | None = None, env: str | None = None,
           checkpoint: str | None = None, trust_pickle: bool = False,
           trust_code: bool = False, force: bool = False) -> list[Episode]:
    """Play the policy at `path` and write the video (or brax viewer) to `out`."""
    out = Path(out)
    if episodes < 1 or not MIN_FPS <= fps <= MAX_FPS:  # nan too
        raise ToolError(f"--episodes {episodes} --fps {fps}; expected at least 1 episode and "
                        f"an fps from {MIN_FPS} to {MAX_FPS}")
    check_episode_seeds(seed, episodes)
    check_out(out, "video", force)
    if out_format(out) != ".html":
        check_video_writer(out)
        # Before anything imports mujoco (brax does): it reads MUJOCO_GL once, on import.
        prepare_mujoco_gl()
    loaded = load_policy(path, checkpoint=checkpoint, env=env, trust_pickle=trust_pickle,
                         trust_code=trust_code)
    name, shown = parse_spec(loaded.env)[1], backend_of(loaded.env).render
    limit = step_limit(loaded, max_steps)
    if shown == "html":

        return render_brax(loaded, name, out, episodes=episodes, seed=seed, limit=limit, fps=fps)
    if shown != "frames":
        raise ToolError(f"env {loaded.env!r}: rendering supports gymnasium and EnvPool ids and "
                        "brax names; pass one with --env")
    if out_format(out) == ".html":
        raise ToolError(f"--out {str(out)!r}: the HTML viewer is for brax envs; write a .gif "
                        "or .mp4 for a gymnasium env")
    offscreen_pygame()
    try:
        results = run_episodes(loaded, episodes, seed, max_steps=limit, frames=True)
    except ToolError:  # the request itself (memory): not the renderer's failure
        raise
    except Exception as error:
        if is_mujoco_env(name):
            raise no_renderer_error(error) from error
        raise ToolError(f"rendering {loaded.env!r} failed: "
                        f"{one_line(error, with_type=True)}") from error
    write_video([frame for episode in results for frame in episode.frames], out, fps)
    return results


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="neurorun-render",
                                     description="Render a saved policy to a GIF or MP4.")
    result.add_argument("path", help="a run folder, a policy .pkl or a weights-only .pt")
    result.add_argument("--out", required=True, help="output .gif or .mp4 (.html for brax)")
    result.add_argument("--episodes", type=int, default=1, help="episodes to play (1)")
    result.add_argument("--seed", type=seed_int, default=0,
                        help="episode i is seeded seed+i (0)")
    result.add_argument("--fps", type=float, default=30.0, help="frames per second (30)")
    result.add_argument("--max-steps", type=positive_int, default=None,
                        help="cut episodes after this many steps (default: the run's "
                             "episode_length, else the env's own limit)")
    result.add_argument("--env", default=None, help="play on this env id instead")
    result.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_policy_options(result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        results = render(args.path, args.out, episodes=args.episodes, seed=args.seed,
                         fps=args.fps, max_steps=args.max_steps, env=args.env,
                         checkpoint=args.checkpoint, trust_pickle=args.trust_pickle,
                         trust_code=args.trust_code, force=args.force)
        returns = ", ".join(f"{episode.episode_return:.2f}" for episode in results)
        frames = sum(len(episode.frames) for episode in results)
        print(f"wrote {args.out}" + (f" ({frames} frames)" if frames else "")
              + f"; episode returns: {returns}")

    return run_tool("neurorun-render", body)


if __name__ == "__main__":
    sys.exit(main())
