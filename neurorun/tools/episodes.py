"""Seeded episodes of one loaded policy: the run's own test episodes
(``Problem.test_episodes``, what its center evaluation ran: the compiled program on
brax and Playground), or, for frames to render, a plain gymnasium loop. Episode i is seeded
`seed + i` (brax and Playground: one key from `seed` for the batch)."""

from __future__ import annotations

import torch

from neurorun.common.memory import MEMORY_SHARE, device_free_bytes
from neurorun.envs import backend_of, parse_spec
from neurorun.envs.gym_env import limited_episode_steps
from neurorun.problems.playback import Episode, gym_frames
from neurorun.tools.common import ToolError
from neurorun.tools.loading import LoadedPolicy

EPISODE_BYTES = 4096  # what one episode's results hold until printed: its row, the table's
# cells, the JSON (measured: about 3.5 KB)
FRAME_COPIES = 3  # a frame held for the video, Pillow's image of it, the GIF's palette image


def available_memory() -> int:
    """Bytes this machine can still give (MemAvailable)."""
    return device_free_bytes(torch.device("cpu"))


def check_memory(episodes: int, per_episode: int, what: str) -> None:
    """ToolError (one line) before any episode runs when ``episodes`` episodes, each holding
    ``per_episode`` bytes of ``what``, would not fit in the memory available (a share of it,
    as a run's generation plans); it names the largest count that fits."""
    spare = MEMORY_SHARE * available_memory()
    need = episodes * per_episode
    if need <= spare:
        return
    fits = int(spare // per_episode)
    fix = f"--episodes {fits} or fewer" if fits else "a smaller --max-steps"
    raise ToolError(f"--episodes {episodes} would hold about {need / 1e9:,.1f} GB of {what}, "
                    f"more than the {spare / 1e9:.1f} GB this machine can spare; pass {fix}")


def step_limit(loaded: LoadedPolicy, max_steps: int | None) -> int | None:
    """--max-steps when given, else the run's training episode_length (None: the env's own)."""
    return max_steps if max_steps is not None else loaded.episode_length


def run_episodes(loaded: LoadedPolicy, episodes: int, seed: int, *,
                 max_steps: int | None = None, frames: bool = False) -> list[Episode]:
    """`episodes` seeded episodes; with `frames`, an rgb frame after the reset and each step."""
    name = parse_spec(loaded.env)[1]
    limit = step_limit(loaded, max_steps)
    if not frames:
        return _problem_episodes(loaded, episodes, seed, limit)
    # EnvPool cannot render: its envs are rendered with gymnasium's env of the same id
    if backend_of(loaded.env).render != "frames":
        raise ValueError(f"frames of {loaded.env!r}: only gymnasium (and EnvPool) envs render "
                         "frames here")
    return _gym_episodes(loaded, name, episodes, seed, limit)


def _gym_episodes(loaded: LoadedPolicy, name: str, episodes: int, seed: int,
                  limit: int | None) -> list[Episode]:
    import gymnasium as gym

    env = gym.make(name, render_mode="rgb_array", **loaded.env_config)
    steps = limited_episode_steps(getattr(env.spec, "max_episode_steps", None), limit)
    results = []
    try:
        for index in range(episodes):
            episode = Episode(seed + index, 0.0, 0)
            for frame in gym_frames(env, loaded.policy, seed + index, limit, episode):
                if index == 0 and steps and not episode.frames:  # all held until written
                    check_memory(episodes, frame.nbytes * (steps + 1) * FRAME_COPIES, "frames")
                episode.frames.append(frame)
            results.append(episode)
    finally:
        env.close()
    return results


def _problem_episodes(loaded: LoadedPolicy, episodes: int, seed: int,
                      limit: int | None) -> list[Episode]:
    problem = loaded.make_problem(limit)
    try:
        returns, lengths = problem.test_episodes(loaded.solution, episodes, seed)
    finally:
        problem.close()
    return [Episode(seed + index, float(value), int(length))
            for index, (value, length) in enumerate(zip(returns.tolist(), lengths.tolist(),
                                                        strict=True))]
