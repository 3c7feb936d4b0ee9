"""jax envs (brax, MuJoCo Playground): neurorun's compiled evaluation against bare scans.

    python benchmarks/bench_jax.py [--device cpu|cuda] [--rounds 2] [--cases ...]

Per case (env, network, popsize, env slots), measured in one process, round by round:

- ``bare``: the limit the issue set: the env's batched step (the batch neurorun steps: the
  same env object, episodes ended but not reset) in a jitted ``lax.scan`` of ``BARE_STEPS``
  steps with fixed random actions in [-1, 1]: no policy, no resets, no bookkeeping;
- ``bare_policy``: the same scan, the actions computed from the observations by the case's
  network with parameters drawn as for ``neurorun``: the physics of the same policies' actions
  (MuJoCo's solver works harder on them: CheetahRun at 256 envs, 54k steps/s with fixed
  actions, 28k with a linear policy's);
- ``reset_s``: one reset of the batch (the env's own: Playground's DM Control tasks settle
  the model for 200 physics steps in it), which every wave of episodes pays once;
  ``bare_policy_with_resets`` adds it to ``bare_policy``'s time for ``BARE_STEPS`` steps;
- ``neurorun``: counted interactions per second of ``Problem.evaluate`` on one device, as
  the bare scans (bench_devices.py measures several; one compiled
  program per batch shape, one episode per solution, parameters ``0.1 * randn`` as early in
  training, raw observations as in the bare scans), after a first call that compiles; its
  ``counted ÷ simulated`` (interactions over the env steps the batches took: idle slots
  included).

Ratios are per round (``neurorun`` right after the bare scans) with their min-max spread.
Compile seconds: neurorun's programs (first env states, every stage it used) and the bare
scan's, from an empty persistent cache at the start of the script (a later case of the same
env may find programs an earlier one compiled). Writes benchmarks/results/jax_envs.json
(``--device cuda``: jax_envs_gpu.json).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from typing import Any

import jax
import jax.numpy as jnp
import torch
from harness import RESULTS, ratios, seconds, spread, spread_text, write_result

from neurorun.envs import batched_jax_env, parse_spec
from neurorun.nets.arrays import ArrayPolicy, jax_ops
from neurorun.problems import make_problem

NETWORKS = {"linear": "Linear(obs_length, act_length)",
            "mlp64": "Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)"}
EPISODE_LENGTH = 1000  # the tasks' own length (DM Control's and brax's default)
# steps of a bare scan: Playground's DM Control tasks never end early, so the whole episode;
# brax envs end theirs when the robot falls (most within 200 steps at the start of training)
BARE_STEPS = {"brax": 200, "playground": EPISODE_LENGTH}
MAX_SLOTS = 256  # popsize 1,024 runs on 256 env slots: 4 pairs per slot
CPU_CASES = [(env, net, popsize) for env in ("playground::CheetahRun", "brax::ant")
             for net in NETWORKS for popsize in (64, 256, 1024)] + [
    ("playground::HumanoidWalk", "linear", 256), ("brax::humanoid", "linear", 256)]
GPU_CASES = [(env, net, popsize) for env in ("playground::CheetahRun", "brax::ant",
                                             "playground::HumanoidWalk", "brax::humanoid")
             for net in NETWORKS for popsize in (1024, 4096, 16384)]


class BareScan:
    """``steps`` steps of a batch of ``slots`` envs in one jitted scan: fixed random actions,
    or (``network``) the network's actions for parameter rows given per call."""

    def __init__(self, spec: str, slots: int, network: str | None):
        backend = parse_spec(spec)[0]
        self.steps, self.slots = BARE_STEPS[backend], slots
        env = batched_jax_env(spec, EPISODE_LENGTH)

        def start(key: Any) -> Any:  # the first states of a rollout seeded with ``key``
            return env.reset(jax.random.split(key, slots))

        self.start = jax.jit(start)
        if network is None:
            def act(obs: Any, actions: Any) -> Any:
                return actions
        else:
            from neurorun.nets import make_network

            policy = ArrayPolicy(make_network(network, obs_length=env.observation_size,
                                              act_length=env.action_size))

            def act(obs: Any, rows: Any) -> Any:
                actions, _ = policy(jax_ops(), policy.rows(rows), obs)
                return jnp.clip(actions, -1.0, 1.0)

        def scan(state: Any, inputs: Any) -> Any:
            def body(s: Any, _: Any) -> tuple[Any, None]:
                return env.step(s, act(s.obs, inputs)), None

            return jax.lax.scan(body, state, None, length=self.steps)[0].obs

        self.program = jax.jit(scan)
        self.fixed = jax.random.uniform(jax.random.PRNGKey(1), (slots, env.action_size),
                                        minval=-1.0, maxval=1.0)
        state = self.start(jax.random.PRNGKey(0))
        inputs = self.fixed if network is None else jnp.zeros((slots, policy.solution_length))
        self.compile_s, _ = seconds(lambda: jax.block_until_ready(self.program(state, inputs)))

    def measure(self, seed: int, params: torch.Tensor | None = None) -> tuple[float, float]:
        """(steps/s of the scan, seconds of the reset) from the states of ``seed``, with the
        fixed actions or the actions of ``params``' first rows."""
        reset_s, state = seconds(lambda: jax.block_until_ready(
            self.start(jax.random.PRNGKey(seed))))
        inputs = self.fixed if params is None else jnp.asarray(params[:self.slots].numpy())
        elapsed, _ = seconds(lambda: jax.block_until_ready(self.program(state, inputs)))
        return self.steps * self.slots / elapsed, reset_s


def case(spec: str, network: str, popsize: int, rounds: int, device: str) -> dict[str, Any]:
    slots = min(popsize, MAX_SLOTS) if device == "cpu" else popsize
    problem = make_problem(env=spec, network=NETWORKS[network], episode_length=EPISODE_LENGTH,
                           seed=0, max_num_envs=slots, device=device, devices=1)
    generator = torch.Generator().manual_seed(0)

    def population() -> torch.Tensor:
        return 0.1 * torch.randn(popsize, problem.solution_length, generator=generator)

    first_s, _ = seconds(lambda: problem.evaluate(population(), seed=0))
    compile_s = problem.jax_rollout.programs.compile_seconds
    bare = BareScan(spec, slots, None)
    with_policy = BareScan(spec, slots, NETWORKS[network])
    figures: dict[str, list[float]] = {"bare": [], "bare_policy": [],
                                       "bare_policy_with_resets": [], "neurorun": [],
                                       "counted_fraction": [], "reset_s": []}
    steps = with_policy.steps * slots
    for round_ in range(1, rounds + 1):
        params = population()  # the same solutions and first states on every side
        figures["bare"].append(bare.measure(round_)[0])
        rate, reset_s = with_policy.measure(round_, params)
        figures["bare_policy"].append(rate)
        figures["reset_s"].append(reset_s)
        figures["bare_policy_with_resets"].append(steps / (steps / rate + reset_s))
        elapsed, _ = seconds(lambda p=params, s=round_: problem.evaluate(p, seed=s))
        stats = problem.last_stats
        figures["neurorun"].append(stats.num_interactions / elapsed)
        figures["counted_fraction"].append(stats.num_interactions
                                           / stats.num_simulated_steps)
    problem.close()
    digits = {"counted_fraction": 3, "reset_s": 3}
    return {"env": spec, "network": network, "popsize": popsize, "slots": slots,
            "bare_steps": bare.steps,
            **{k: spread(v, digits.get(k, 1)) for k, v in figures.items()},
            "vs_bare": ratios(figures["neurorun"], figures["bare"]),
            "vs_bare_policy": ratios(figures["neurorun"], figures["bare_policy"]),
            "vs_bare_policy_with_resets": ratios(figures["neurorun"],
                                                 figures["bare_policy_with_resets"]),
            "neurorun_compile_s": round(compile_s, 1),
            "neurorun_first_call_s": round(first_s, 1),
            "bare_compile_s": round(bare.compile_s, 1)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="torch device (cuda: jax's GPU)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", default=None,
                        help="env/network/popsize,... e.g. brax::ant/mlp64/1024 (default: the "
                             "device's matrix)")
    args = parser.parse_args(argv)
    cases = CPU_CASES if args.device == "cpu" else GPU_CASES
    if args.cases:
        cases = [(env, network, int(popsize)) for env, network, popsize in
                 (case.rsplit("/", 2) for case in args.cases.split(","))]
    # an empty persistent cache: compile figures are cold compiles
    jax.config.update("jax_compilation_cache_dir", tempfile.mkdtemp(prefix="bench_jax_"))
    name = "jax_envs.json" if args.device == "cpu" else "jax_envs_gpu.json"
    results: list[dict[str, Any]] = []
    for spec, network, popsize in cases:
        results.append(case(spec, network, popsize, args.rounds, args.device))
        print(json.dumps(results[-1]), flush=True)
        report = write_result(RESULTS / name, device=args.device, jax=jax.__version__,
                              jax_backend=jax.default_backend(), rounds=args.rounds,
                              episode_length=EPISODE_LENGTH, results=results)
    return report


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("jax_envs.json",
     "jax envs (brax, MuJoCo Playground) on the CPU against the raw jitted step and EnvPool"),
    ("jax_envs_gpu.json",
     "jax envs on a GPU against the raw jitted step (`make bench-gpu`)"),
]


def table(report: dict) -> list[str]:
    lines = [f"Device: {report['device']} (jax {report['jax']} on {report['jax_backend']}), "
             f"episodes of {report['episode_length']} steps (Playground) or cut there (brax), "
             "one episode per solution; steps per second, median (min–max) over "
             f"{report['rounds']} rounds. *bare*: the env stepped by a jitted `lax.scan` with "
             "fixed random actions; *bare + policy*: the same scan with the same policies' "
             "actions and one reset per wave of episodes; *neurorun*: counted steps of the "
             "compiled evaluation.", "",
             "| env | network | popsize → slots | bare | bare + policy | neurorun | ÷ bare | "
             "÷ bare + policy | counted ÷ simulated | compile s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(
            f"| {r['env']} | {r['network']} | {r['popsize']:,} → {r['slots']:,} | "
            f"{r['bare']['median']:,.0f} | {r['bare_policy_with_resets']['median']:,.0f} | "
            f"{r['neurorun']['median']:,.0f} | {spread_text(r['vs_bare'])} | "
            f"{spread_text(r['vs_bare_policy_with_resets'])} | "
            f"{spread_text(r['counted_fraction'])} | "
            f"{r['neurorun_compile_s']:.0f} |")
    return lines


if __name__ == "__main__":
    main()
