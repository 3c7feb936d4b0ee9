"""brax policies to an HTML viewer (brax.io.html) or to frames, drawn as a run's videos are
(``playback.PositionsDrawing``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from neurorun.envs.brax_env import brax_episode_length, single_brax_env
from neurorun.problems.playback import FRAME_HEIGHT, FRAME_WIDTH, Episode, PositionsDrawing
from neurorun.tools.common import ToolError, out_format, write_output
from neurorun.tools.episodes import FRAME_COPIES, check_memory
from neurorun.tools.loading import LoadedPolicy
from neurorun.tools.video import no_renderer_error, write_video


def render_brax(loaded: LoadedPolicy, name: str, out: Path, *, episodes: int, seed: int,
                limit: int | None, fps: float) -> list[Episode]:
    """Play `episodes` episodes of a brax env and write them to `out` (.html, .gif, .mp4)."""
    import jax

    length = brax_episode_length(loaded.env_config, limit)
    env = single_brax_env(name, loaded.env_config, limit)
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    states: list[Any] = []
    results = []
    for index in range(episodes):
        state = reset(jax.random.PRNGKey(seed + index))
        if index == 0:  # every step's state (and frame) is held until the file is written
            _check_memory(episodes, state.pipeline_state, length, out)
        if callable(getattr(loaded.policy, "reset", None)):
            loaded.policy.reset()
        states.append(state.pipeline_state)
        episode = Episode(seed + index, 0.0, 0)
        while True:
            action = jax.numpy.asarray(loaded.policy.act(np.array(state.obs)))
            state = step(state, action)
            states.append(state.pipeline_state)
            episode.episode_return += float(state.reward)
            episode.length += 1
            if float(state.done) > 0:
                break
        results.append(episode)
    _write(env.sys, states, out, fps)
    return results


def _check_memory(episodes: int, pipeline_state: Any, length: int, out: Path) -> None:
    import jax

    step = sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(pipeline_state))
    if out_format(out) != ".html":
        step += FRAME_HEIGHT * FRAME_WIDTH * 3 * FRAME_COPIES
    check_memory(episodes, step * (length + 1), "states and frames")


def _write(system: Any, states: list[Any], out: Path, fps: float) -> None:
    if out_format(out) == ".html":
        from brax.io import html

        write_output(out, lambda tmp: tmp.write_text(html.render(system, states),
                                                     encoding="utf-8"), "brax HTML viewer")
        return
    try:
        drawing = PositionsDrawing(system.mj_model)
        try:
            frames = [drawing(state.q) for state in states]
        finally:
            drawing.close()
    except Exception as error:
        raise ToolError(f"{no_renderer_error(error)}; or write brax's HTML viewer: "
                        "--out policy.html") from error
    write_video(frames, out, fps)

