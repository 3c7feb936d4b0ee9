"""The cost of one batched env step against the envs it steps: what the compiled evaluation's
chunk sizes (``problems.jax.rollout.QUEUE_CHUNK``, ``DRAIN_CHUNK``) rest on.

    python benchmarks/bench_chunks.py [--rounds 3] [--sizes 1 4 8 16 32 64 128]

Per env (brax humanoid on spring physics, brax ant, Playground CheetahRun) and batch size B:
a jitted ``lax.scan`` of 100 steps of the batched env with a linear tanh policy's actions, on
one device; microseconds per step and per env-step, the best of ``--rounds`` after a first
call that compiles. Writes benchmarks/results/jax_chunks.json. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
from harness import RESULTS, seconds, write_result

from neurorun.envs import batched_jax_env

ENVS = {"brax::humanoid": {"backend": "spring"}, "brax::ant": {}, "playground::CheetahRun": {}}
STEPS = 100


def step_costs(spec: str, config: dict, sizes: list[int], rounds: int) -> list[dict]:
    env = batched_jax_env(spec, 1000, **config)
    weights = 0.1 * jax.random.normal(jax.random.PRNGKey(1),
                                      (env.observation_size, env.action_size))

    def scan(state: object) -> object:
        def body(state: object, _: None) -> tuple:
            return env.step(state, jnp.tanh(state.obs @ weights)), None

        return jax.lax.scan(body, state, None, length=STEPS)[0]

    rows = []
    for size in sizes:
        state = jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), size))
        program = jax.jit(scan).lower(state).compile()
        jax.block_until_ready(program(state))
        best = min(seconds(lambda p=program, s=state: jax.block_until_ready(p(s)))[0]
                   for _ in range(rounds))
        step_us = best / STEPS * 1e6
        rows.append({"envs": size, "step_us": round(step_us, 1),
                     "env_step_us": round(step_us / size, 1)})
        print(spec, rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8, 16, 32, 64, 128])
    args = parser.parse_args()
    results = {}
    for spec, config in ENVS.items():
        results[spec] = {"env_config": config,
                         "sizes": step_costs(spec, config, args.sizes, args.rounds)}
        write_result(RESULTS / "jax_chunks.json", steps=STEPS, rounds=args.rounds,
                     results=results)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
