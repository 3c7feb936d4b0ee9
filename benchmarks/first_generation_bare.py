"""The bare program that ``bench_first_generation.py`` holds neurorun's first generation to:
jax and the simulator alone, no neurorun.

    python benchmarks/first_generation_bare.py brax::humanoid --envs 256 --backend spring

One jitted program: ``vmap(reset)`` of ``--envs`` envs (split over every jax device, as
neurorun's ``problem.devices=auto`` does), then a ``lax.scan`` of ``--steps`` batched steps
with a linear tanh policy (or a ``--hidden``-unit tanh MLP) on the observations, and each
env's return summed while its episode lasts (brax's EpisodeWrapper ends episodes, nothing
resets them). It prints one JSON line: seconds to trace and lower, to compile (or load from
jax's cache), to run; the process's own wall time is what the benchmark times.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def batched_env(spec: str, episode_length: int, backend: str | None) -> object:
    """The env neurorun builds for ``spec``: brax's or Playground's, episodes ended at
    ``episode_length`` by brax's EpisodeWrapper, batched by its VmapWrapper."""
    from brax.envs.wrappers.training import EpisodeWrapper, VmapWrapper

    kind, name = spec.split("::")
    if kind == "brax":
        from brax import envs

        env = envs.get_environment(name, **({"backend": backend} if backend else {}))
    else:
        from mujoco_playground import registry

        env = registry.load(name, config_overrides={"impl": "jax"})
    return VmapWrapper(EpisodeWrapper(env, episode_length, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="brax::<name> or playground::<Name>")
    parser.add_argument("--envs", type=int, required=True)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--backend", default=None, help="brax's physics backend")
    parser.add_argument("--hidden", type=int, default=0, help="tanh units (0: linear)")
    args = parser.parse_args()
    started = time.perf_counter()
    env = batched_env(args.spec, args.steps, args.backend)
    setup_s = time.perf_counter() - started
    devices = jax.devices()
    batch = NamedSharding(Mesh(np.array(devices), ("d",)), P("d"))
    keys = jax.device_put(jax.random.split(jax.random.PRNGKey(0), args.envs), batch)
    size, actions = env.observation_size, env.action_size
    widths = [size, args.hidden, actions] if args.hidden else [size, actions]
    weights = [jax.device_put(0.1 * jax.random.normal(jax.random.PRNGKey(i + 1),
                                                      (args.envs, a, b)), batch)
               for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))]

    def policy(weights: list, obs: jax.Array) -> jax.Array:
        x = obs
        for w in weights:
            x = jnp.tanh(jnp.einsum("bi,bio->bo", x, w))
        return x

    def evaluate(keys: jax.Array, weights: list) -> jax.Array:
        state = env.reset(keys)

        def step(carry: tuple, _: None) -> tuple:
            state, total, alive = carry
            state = env.step(state, policy(weights, state.obs))
            return (state, total + alive * state.reward, alive * (1.0 - state.done)), None

        ones = jnp.ones(keys.shape[0])
        (_, total, _), _ = jax.lax.scan(step, (state, 0.0 * ones, ones), None,
                                        length=args.steps)
        return total

    tick = time.perf_counter()
    lowered = jax.jit(evaluate).lower(keys, weights)
    traced = time.perf_counter() - tick
    tick = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - tick
    tick = time.perf_counter()
    returns = np.asarray(compiled(keys, weights))
    run_s = time.perf_counter() - tick
    print(json.dumps({"setup_s": round(setup_s, 3),
                      "trace_s": round(traced, 3), "compile_s": round(compile_s, 3),
                      "run_s": round(run_s, 3), "devices": len(devices),
                      "mean_return": float(returns.mean())}), flush=True)


if __name__ == "__main__":
    main()
