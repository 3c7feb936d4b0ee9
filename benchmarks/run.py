"""Run every benchmark, then write every result's table into benchmarks/results/SUMMARY.md
(docs/benchmarks.md holds the tables that answer a question, written by hand from them).

    python benchmarks/run.py [--full]

The GPU benchmarks (bench_gpu.py and bench_jax.py on CUDA, ``make bench-gpu``) run on their own,
where a GPU is; their results join the summary once benchmarks/results/gpu.json and
jax_envs_gpu.json exist.

Each `bench_*.py` runs in its own process (thread settings and imports do not leak between
them) and writes its JSON to benchmarks/results/. `--full` passes `--full` to those that
have a longer mode.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# script, extra arguments with --full
SCRIPTS = [("bench_algorithms.py", []), ("bench_nets.py", []), ("bench_eval.py", ["--full"]),
           ("bench_evotorch.py", ["--full"]), ("bench_learning.py", ["--full", "--jobs", "2"]),
           ("bench_ray.py", []), ("bench_envpool.py", ["--full"]),
           ("bench_restarts.py", []), ("bench_jax.py", []), ("bench_devices.py", []),
           ("bench_first_generation.py", ["--full"]), ("bench_humanoid.py", []),
           ("bench_locomotion.py", ["--full"])]
# bench_jax, bench_devices: ~15 minutes of cold jax compiles each; bench_humanoid: ~45 minutes;
# bench_restarts: ~15 minutes (its `same` case spends whole budgets); bench_locomotion: hours
# (also `make bench-learning`)
FULL_ONLY = {"bench_jax.py", "bench_devices.py", "bench_humanoid.py", "bench_locomotion.py",
             "bench_restarts.py", "bench_first_generation.py"}


def run_scripts(full: bool) -> None:
    for script, full_args in SCRIPTS:
        if script in FULL_ONLY and not full:
            continue
        print(f"== {script}", flush=True)
        args = full_args if full else []
        subprocess.run([sys.executable, str(HERE / script), *args], check=True)


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def algorithms_table(report: dict) -> list[str]:
    lines = ["| algorithm | D | popsize | ask ms | tell ms | ask+tell ms |",
             "|---|---|---|---|---|---|"]
    for name, r in report["results"].items():
        lines.append(f"| {name} | {r['dim']:,} | {r['popsize']:,} | {r['ask_ms']} | "
                     f"{r['tell_ms']} | {r['ask_tell_ms']} |")
    versus = report.get("pgpe_vs_evotorch")
    if versus:
        def shown(figures: dict) -> str:
            return f"{figures['median']} ({figures['min']}–{figures['max']})"

        lines += ["", f"PGPE step (ask, stand-in fitness, tell) at D = {versus['dim']:,}, popsize "
                  f"{versus['popsize']:,}, against EvoTorch {versus['evotorch']['evotorch']} in "
                  f"the same run, {versus['rounds']} alternating rounds, ms median (min–max): "
                  f"neurorun {shown(versus['neurorun_ms'])}, EvoTorch "
                  f"{shown(versus['evotorch_ms'])} (with torch's huge pages, which neurorun "
                  f"turns on: {shown(versus['evotorch_huge_pages_ms'])}); neurorun ÷ EvoTorch "
                  f"{shown(versus['ratio'])} ({shown(versus['ratio_huge_pages'])})."]
    return lines


def nets_table(r: dict) -> list[str]:
    return [
        "| policies | network | batched step ms | loop over modules ms | speedup |",
        "|---|---|---|---|---|",
        f"| {r['popsize']:,} | `{r['network']}` ({r['obs_length']} → {r['act_length']}) | "
        f"{r['batched_step_ms']} | {r['loop_ms']} | {r['speedup']}× |",
    ]


def eval_table(report: dict) -> list[str]:
    lines = ["| env | network | popsize | raw env steps/s | counted steps/s in evaluation | "
             "counted ÷ raw | per vector step ÷ raw (*) | 2 ray actors: counted steps/s "
             "(÷ raw) |", "|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        network = r.get("network", report.get("network", ""))
        ray = (f"{r['ray2_interactions_per_s']:,} ({r['ray2_ratio']})"
               if "ray2_interactions_per_s" in r else "–")
        per_vector_step = r["ratio"] if r.get("steps_finished_envs", True) else "–"
        lines.append(f"| {r['env']} | `{network}` | {r['popsize']} | "
                     f"{r['raw_env_steps_per_s']:,} | {r['eval_interactions_per_s']:,} | "
                     f"{r.get('interaction_ratio', '–')} | {per_vector_step} | {ray} |")
    return lines + ["", "*raw*: the same vector env stepped alone with uniform random actions "
                    "(no policy, no bookkeeping). (*) where the whole batch is stepped until its "
                    "longest episode ends (CartPole's native vector env, brax's step-by-step "
                    "path); a SyncVectorEnv steps only the envs still running, so there the "
                    "per-vector-step figure means nothing: '–'."]


def envpool_table(report: dict) -> list[str]:
    def rate(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}"

    lines = ["| env | policy | popsize | gymnasium raw | EnvPool raw 1 thr | neurorun 1 thr "
             "(÷ EnvPool raw, × gymnasium raw) | EnvPool raw 2 thr | neurorun 2 thr "
             "(÷ raw, × 1 thr) | EnvPool raw async 2 thr | neurorun 2 ray actors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        lines.append(
            f"| {r['env']} | {r['policy']} | {r['popsize']} | {rate(r['gym_raw'])} | "
            f"{rate(r['pool_raw_t1'])} | {rate(r['neurorun_t1'])} ({r['vs_pool_t1']:.2f}, "
            f"{r['vs_gym_t1']:.2f}×) | {rate(r['pool_raw_t2'])} | {rate(r['neurorun_t2'])} "
            f"({r['vs_pool_t2']:.2f}, {r['threads']:.2f}×) | {rate(r.get('pool_raw_async_t2'))} "
            f"| {rate(r.get('neurorun_ray2'))} |")
    lines += ["", f"Env steps/s; episodes cut at {report['episode_length']} steps; "
              "neurorun figures are counted interactions of whole evaluate calls of random "
              "policies around zero (early training: episodes of very different lengths)."]
    training = report.get("training")
    if training:
        def figure(value: dict, digits: int = 0) -> str:
            return (f"{value['median']:,.{digits}f} ({value['min']:,.{digits}f}–"
                    f"{value['max']:,.{digits}f})")

        cases = training if isinstance(training, list) else [training]  # older files: one
        lines += ["", "| a training generation | neurorun counted steps/s | EnvPool raw steps/s "
                  "| counted ÷ raw (target) | EnvPool on the same actions | counted ÷ that |",
                  "|---|---|---|---|---|---|"]
        for case in cases:
            episodes = "1,000-step" if case["env"] == "HalfCheetah-v5" else "the env's own"
            replayed = (f"{figure(case['pool_replayed'])} | {figure(case['ratio_replayed'], 2)}"
                        if "pool_replayed" in case else "– | –")
            lines.append(f"| {case['env']}, {episodes} episodes, popsize {case['popsize']}, "
                         f"linear, {case['threads']} threads | {figure(case['neurorun'])} | "
                         f"{figure(case['pool_raw'])} | {figure(case['ratio'], 2)} "
                         f"(≥ {case.get('target', 0.85)}) | {replayed} |")
        lines += ["", "Measured " + "; ".join(
            f"{case['env']} {case['date'][:10]}, load average {case['load_average'][0]}"
            for case in cases) + f". Median (min–max) over {cases[0]['rounds']} rounds; each "
            "round one whole evaluate call (a new pool, obs normalization, random linear "
            "policies), then an EnvPool of as many envs stepped raw with random actions for "
            "as long, then EnvPool alone stepping the call's own actions on pools seeded "
            "alike (the same trajectories: the simulator's share of the call)."]
    if report.get("streaming"):
        lines += ["", "| backend that steps every env | solutions → env slots | counted ÷ "
                  "simulated, streaming | lock-step | counted steps/s streaming / lock-step |",
                  "|---|---|---|---|---|"]
        for r in report["streaming"]:
            lines.append(f"| {r['env']} | {r['popsize']} → {r['slots']} | "
                         f"{r['counted_fraction_on']:.2f} | {r['counted_fraction_off']:.2f} | "
                         f"{r['steps_per_s_on']:,.0f} / {r['steps_per_s_off']:,.0f} |")
    return lines


def _case(r: dict) -> str:
    cut = f", {r['episode_length']} steps" if r.get("episode_length") else ""
    norm = ", obs norm" if r.get("observation_normalization") else ""
    actors = f", {r['num_actors']} ray actors" if r.get("num_actors") else ""
    backend = ", EnvPool" if r.get("neurorun_backend") == "envpool" else ""
    return f"{r['env']}{cut}{norm}{actors}{backend}"


def evotorch_table(report: dict) -> list[str]:
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


def curve_links(report: dict) -> list[str]:
    """A line linking the report's curve images (none when it has none)."""
    plots = report.get("plots", [])
    return ["", "Curves: " + ", ".join(f"[{p}](../benchmarks/results/{p})" for p in plots)] \
        if plots else []


def learning_table(report: dict) -> list[str]:
    lines = ["| env | algorithm | solved | median s to solve | median interactions | "
             "median generations | settings |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        seconds = "–" if r["median_s"] is None else r["median_s"]
        steps = "–" if r["median_interactions"] is None else f"{int(r['median_interactions']):,}"
        gens = "–" if r["median_generations"] is None else int(r["median_generations"])
        lines.append(f"| {r['env']} (≥ {r['target']}) | {r['algo']} | "
                     f"{r['solved']}/{r['runs']} (cap {r['max_time']} s) | {seconds} | {steps} | "
                     f"{gens} | `{r['settings']}` |")
    return lines + curve_links(report)


def _algorithm(row: dict) -> str:
    """A locomotion row's algorithm: the experiment preset it ran, or bench_locomotion's name
    of the settings on the env preset."""
    if row["algo"] == "env_only":
        return f"`env={row['env']}` alone"
    return f"`experiment={row['task']}`" if row["algo"] == "preset" else row["algo"]


def locomotion_table(report: dict) -> list[str]:
    lines = ["| task (threshold) | algorithm | solved (seeds) | median episodes (ARS paper V2-t) | "
             "worst episodes | median env steps | median / worst wall s | "
             "median last / best center_eval | neurorun-eval of solved runs |",
             "|---|---|---|---|---|---|---|---|---|"]

    def cell(value, digits=","):
        return "–" if value is None else format(value, digits)

    for r in report["results"]:
        pairs = zip(r["neurorun_eval"], r["best_center_evals"], strict=True)
        checks = ", ".join(f"{e:,.0f} vs {b:,.0f}" for e, b in pairs if e is not None) or "–"
        seeds = r.get("seeds") or []
        shown = (f"{min(seeds)}–{max(seeds)}" if len(seeds) > 2 and seeds == list(
            range(min(seeds), max(seeds) + 1)) else ", ".join(map(str, seeds))) if seeds else "?"
        lines.append(
            f"| {r['env']} (≥ {r['threshold']:,}) | {_algorithm(r)} | {r['solved']}/{r['runs']} "
            f"(seeds {shown}, cap {r['max_time']:.0f} s) | {cell(r['median_episodes'], ',.0f')} "
            f"({r['paper_episodes']:,}) | {cell(r.get('worst_episodes'), ',.0f')} | "
            f"{cell(r['median_interactions'], ',.0f')} | "
            f"{cell(r['median_s'])} / {cell(r.get('worst_s'), ',.1f')} | "
            f"{cell(r['median_final'], ',.0f')} / "
            f"{cell(r['median_best'], ',.0f')} | {checks} |")
    return (lines + evotorch_locomotion_lines(report.get("evotorch", []))
            + longer_locomotion_lines(report.get("longer", [])) + curve_links(report))


def longer_locomotion_lines(rows: list[dict]) -> list[str]:
    """Runs continued past the table's cap (`bench_locomotion.py --longer`)."""
    if not rows:
        return []
    lines = ["", "Runs of the table continued past its cap (`bench_locomotion.py --longer`: the "
             "run's folder copied and resumed, bit for bit the run without that cap, or run "
             "again from the start with the longer cap where the folder was gone: the same "
             "seed), each alone; wall s: to the threshold, else the new cap.", "",
             "| task (threshold) | algorithm | seed | cap s (table's) | how | solved | wall s | "
             "episodes | env steps | last / best center_eval | load average at the end |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['env']} (≥ {r['threshold']:,}) | {_algorithm(r)} | "
            f"{r['seed']} | {r['max_time']:.0f} ({r['table_cap']:.0f}) | "
            f"{'resumed' if r['resumed'] else 'run again'} | "
            f"{'yes' if r['solved'] else 'no'} | {r['seconds']:,.0f} | {r['episodes']:,} | "
            f"{r['interactions']:,} | {r['center_eval']:,.0f} / {r['best_center_eval']:,.0f} | "
            f"{r['load_average'][0]} |")
    return lines


THRESHOLDS = {"swimmer": 325, "hopper": 3120, "halfcheetah": 3430}  # the ARS paper's


def evotorch_locomotion_lines(rows: list[dict]) -> list[str]:
    """`pgpe` against EvoTorch running the same setup: seconds to the same center score, where
    that score is at least a tenth of the threshold (below it, a side did not learn)."""
    if not rows:
        return []
    lines = ["", "The `pgpe` setup on EvoTorch 0.6.1 (`evotorch_pgpe`: GymNE, one process), "
             "seed by seed: wall seconds to the lower of the two sides' best center scores "
             "(the threshold when both solved), compared only where that score is at least "
             "a tenth of the threshold.", "",
             "| task | seed | score | neurorun s | EvoTorch s | × faster | best: neurorun / "
             "EvoTorch |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        learned = r["score"] >= 0.1 * THRESHOLDS.get(r["task"], 0)
        if not learned:
            side = "EvoTorch" if r["evotorch_best"] <= r["neurorun_best"] else "neurorun"
            compared = f"– | – | – ({side} did not learn)"
        else:
            speedup = "–" if r["speedup"] is None else f"**{r['speedup']}×**"
            compared = f"{r['neurorun_s']} | {r['evotorch_s']} | {speedup}"
        lines.append(f"| {r['task']} | {r['seed']} | {r['score']:,.0f} | {compared} | "
                     f"{r['neurorun_best']:,.0f} / {r['evotorch_best']:,.0f} |")
    return lines


def _spread(value: dict, digits: int = 2, thousands: bool = False) -> str:
    """A harness spread as "median (min–max)"."""
    form = "{:,.0f}" if thousands else f"{{:.{digits}f}}"
    return (f"{form.format(value['median'])} ({form.format(value['min'])}–"
            f"{form.format(value['max'])})")


def ray_table(r: dict) -> list[str]:
    lines = []
    loads = r.get("case_load_average", {})
    if loads:
        lines += ["Load average (1 min) as each case started: " + ", ".join(
            f"{case} {load[0]}" for case, load in loads.items()) + ".", ""]
    if r.get("speedup"):
        lines += ["PGPE, popsize 64, linear policy, EnvPool: counted env steps per second of "
                  "whole generations (ask, evaluate, tell), median (min–max) over rounds.", "",
                  "| env | 1 actor | 2 actors | 2 actors distributed | 2 ÷ 1 actor | "
                  "distributed ÷ plain |", "|---|---|---|---|---|---|"]
        for row in r["speedup"]:
            lines.append(
                f"| {row['env']} | {_spread(row['steps_per_s_1_actor'], thousands=True)} | "
                f"{_spread(row['steps_per_s_2_actors'], thousands=True)} | "
                f"{_spread(row['steps_per_s_2_actors_distributed'], thousands=True)} | "
                f"{_spread(row['speedup_2_actors'])} | "
                f"{_spread(row['distributed_over_plain'])} |")
    if r.get("noise"):
        lines += ["", "Seconds to make an actor's share of noise rows (`algo.noise_source`).",
                  "", "| rows × D | seeds s | table s | seeds ÷ table |", "|---|---|---|---|"]
        for row in r["noise"]:
            lines.append(f"| {row['rows']:,} × {row['dim']:,} | {_spread(row['seeds_s'], 4)} | "
                         f"{_spread(row['table_s'], 4)} | {_spread(row['seeds_over_table'])} |")
    if r.get("coordinator"):
        lines += ["", "The main process per generation when evaluation costs nothing (actors "
                  "evaluate the sphere): CPU seconds of the main process (`main_cpu_s`) and "
                  "megabytes sent plus received.", "",
                  "| algorithm | popsize × D | actors | plain: main CPU s / MB | distributed: "
                  "main CPU s / MB |", "|---|---|---|---|---|"]
        cells: dict[tuple, dict] = {}
        for row in r["coordinator"]:
            cells.setdefault((row["algo"], row["popsize"], row["dim"], row["actors"]),
                             {})[row["mode"]] = row
        for (algo, popsize, dim, actors), modes in cells.items():
            shown = []
            for mode in ("plain", "distributed"):
                row = modes.get(mode, {})
                shown.append(f"not run: {row['not_run']}" if "not_run" in row else
                             f"{row['main_cpu_s']['median']:.3f} / {row['megabytes']:,.1f}"
                             if row else "–")
            lines.append(f"| {algo} | {popsize:,} × {dim:,} | {actors} | {shown[0]} | "
                         f"{shown[1]} |")
    return lines


def jax_table(report: dict) -> list[str]:
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
            f"{r['neurorun']['median']:,.0f} | {_spread(r['vs_bare'])} | "
            f"{_spread(r['vs_bare_policy_with_resets'])} | {_spread(r['counted_fraction'])} | "
            f"{r['neurorun_compile_s']:.0f} |")
    return lines


def devices_table(report: dict) -> list[str]:
    counts = sorted(int(k.split("_")[1]) for k in report["results"][0] if k.startswith("rate_"))
    lines = [f"{report['host_devices']}; counted steps per second of `Problem.evaluate`, "
             f"median (min–max) over {report['rounds']} rounds, device counts side by side "
             "in each round; ÷ 1: the ratio to one device in the same round; fitness "
             "difference: the median relative difference of the solutions' fitness from one "
             "device's (a simulator rounds apart at another batch size).", "",
             "| env | network | popsize → slots | "
             + " | ".join(f"{k} device(s)" for k in counts) + " | "
             + " | ".join(f"{k} ÷ 1 | fitness difference {k}" for k in counts[1:])
             + " | counted ÷ simulated |",
             "|---|---|---|" + "---|" * (len(counts) + 2 * (len(counts) - 1) + 1)]
    for r in report["results"]:
        cells = [f"{r[f'rate_{k}']['median']:,.0f}" for k in counts]
        cells += [f"{_spread(r[f'speedup_{k}'])} | {r[f'fitness_rel_diff_{k}']['median']:.3g}"
                  for k in counts[1:]]
        lines.append(f"| {r['env']} | {r['network']} | {r['popsize']:,} → {r['slots']:,} | "
                     + " | ".join(cells) + f" | {_spread(r[f'counted_fraction_{counts[-1]}'])} |")
    return lines


def first_generation_table(report: dict) -> list[str]:
    lines = ["| case (neurorun's overrides) | cache | neurorun s to generation 1 | bare program "
             "s | neurorun ÷ bare (target) | physics programs neurorun compiled |",
             "|---|---|---|---|---|---|"]
    for name, case in report["cases"].items():
        for warmth, target in (("cold", 2.0), ("warm", 1.2)):
            r = case[warmth]
            lines.append(f"| {name} (`{' '.join(case['neurorun_overrides'])}`) | {warmth} | "
                         f"{_spread(r['neurorun_s'], 1)} | {_spread(r['bare_s'], 1)} | "
                         f"{_spread(r['ratio'])} (≤ {target}) | "
                         f"{int(r['programs']['median'])} ({', '.join(r['program_kinds'])}) |")
    return lines + ["", f"Whole processes, median (min–max) over {report['rounds']} rounds, "
                    "each cold round with empty compilation caches of its own; the bare "
                    "program (`benchmarks/first_generation_bare.py`): jax and the simulator "
                    "alone, one jitted reset + 1,000-step scan of the same envs on the same "
                    "devices."]


def old_new_table(report: dict) -> list[str]:
    lines = ["| env | network | popsize | devices | old counted steps/s | new counted steps/s "
             "| new ÷ old |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['env']} | {r['network']} | {r['popsize']:,} | {r['devices']} | "
                     f"{_spread(r['old_steps_per_s'], 0, True)} | "
                     f"{_spread(r['new_steps_per_s'], 0, True)} | {_spread(r['ratio'])} |")
    return lines + ["", f"Old: commit {report['old']}; {report['rounds']} alternating rounds "
                    f"of {report['calls']} evaluations each, every tree in its own process."]


def humanoid_table(report: dict) -> list[str]:
    lines = ["`neurorun algo=pgpe env=brax::humanoid` with `env.env_config.backend=<backend>` "
             "(`envpool`: `env=Humanoid-v5`, MuJoCo's humanoid), seed 0, each alone; first "
             "run: 2 generations on an empty jax compilation cache; then training for the "
             "budget on that cache (`--cold`: on an empty cache, compiles included); "
             "center_eval: the unshaped return of 5 seeded test episodes.", "",
             "| setting | backend | first run s | budget s | generations | counted steps/s | "
             "best center_eval | training episode length, first → last | load average |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        lines.append(f"| {r['label']} | {r['backend']} | {r.get('first_two_generations_s', '–')}"
                     f" | {r['max_time']:g} | {r['generations']} | {r['steps_per_s']:,} | "
                     f"{r['best_center_eval']:,} | {r['first_episode_length']:.0f} → "
                     f"{r['last_episode_length']:.0f} | {r['load_average_at_start'][0]} |")
    return lines


def restarts_table(report: dict) -> list[str]:
    lines = [f"CMA-ES on {report['function']} from a uniform start in [-5, 5]^D, default popsize "
             f"{report['popsize']}, popsize factor {report['factor']:g}, target f <= "
             f"{report['target']:g}, at most {report['budget']:,} evaluations; neurorun's "
             f"attempts end by its stall rule (restart.patience={report['patience']}), "
             "pycma's by its own stop criteria.", "",
             "| restarts | solved | median evaluations to the target | worst |",
             "|---|---|---|---|"]
    for name, case in report["cases"].items():
        median, worst = case["median_evaluations"], case["worst_evaluations"]
        lines.append(f"| {name} | {case['solved']} | "
                     f"{'–' if median is None else f'{median:,.0f}'} | "
                     f"{'–' if worst is None else f'{worst:,}'} |")
    return lines


def gpu_table(report: dict) -> list[str]:
    ref = report["evojax_reference"]
    lines = [f"Device: {report['device']}.", "",
             "| case | popsize | generations | wall s | compile s | s/generation | steps/s | "
             "GPU GB | score (best) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['case']} | {r['popsize']:,} | {r['generations']} | {r['wall_s']} | "
                     f"{r['compile_s']} | {r['median_s_per_generation']} | "
                     f"{r['median_steps_per_s']:,} | {r.get('gpu_peak_gb', '–')} | "
                     f"{r['score']} ({r.get('best_score', '–')}) |")
    return lines + ["", f"EvoJAX's published {ref['case']} run: {ref['seconds']} s, score "
                        f"{ref['score']:,}."]


GPU_PENDING = ("**brax and Playground on a GPU**: not yet measured in full: the GPU sessions "
               "(four of 15 minutes, 2026-11-26: three on an H200, one on an H100) measured "
               "Playground CheetahRun "
               "only (the GPU item below the tables). `make bench-gpu` measures brax ant and "
               "humanoid and Playground CheetahRun and HumanoidWalk at popsize 1,024 / 4,096 / "
               "16,384 against the raw jitted step, GPU memory, EvoJAX's brax ant PGPE setup, "
               "and 30 minutes of `experiment=brax_humanoid`.")


def summary() -> str:
    date = dt.date.today().isoformat()
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, {_cores()} cores"
    learning = _load("learning.json") or {}
    command = "make bench-full" if learning.get("full") else "make bench"
    parts = [f"Measured {date} on {machine} with `{command}`.", ""]
    for title, name, table in [
        ("One ask + tell (one CPU thread)", "algorithms.json", algorithms_table),
        ("Batched policy forward (CPU)", "nets.json", nets_table),
        ("Evaluation against the raw simulator (one process, one thread)", "eval.json",
         eval_table),
        ("Against EvoTorch 0.6.1: the same PGPE runs (× = neurorun steps/s ÷ EvoTorch's)",
         "evotorch.json", evotorch_table),
        ("Learning: time and interactions to solve, over seeds (center evaluation each "
         "generation included in the time)", "learning.json", learning_table),
        ("Learning on brax and MuJoCo Playground (the compiled evaluation), and the same "
         "task on EnvPool, alone on the machine", "learning_jax.json", learning_table),
        ("MuJoCo locomotion against the ARS paper (`make bench-learning`): training episodes, "
         "env steps and wall time to the threshold; medians and worst over the solved runs, "
         "each run alone on the machine", "locomotion.json",
         locomotion_table),
        ("Restart strategies against pycma 4.5.0 (`bench_restarts.py`)", "restarts.json",
         restarts_table),
        ("Ray actors (2 cores)", "ray.json", ray_table),
        ("EnvPool backend and streaming evaluation (steps/s)", "envpool.json", envpool_table),
        ("jax envs (brax, MuJoCo Playground) on the CPU against the raw jitted step and "
         "EnvPool", "jax_envs.json", jax_table),
        ("The compiled evaluation on several jax devices (CPU: one host device per core)",
         "jax_devices.json", devices_table),
        ("Time to the first generation of jax runs against a bare jitted program "
         "(`bench_first_generation.py`)", "first_generation.json", first_generation_table),
        ("The compiled evaluation, old tree against new (`bench_old_new.py`)",
         "compiled_old_new.json", old_new_table),
        ("The headline, brax humanoid, per brax backend (`bench_humanoid.py`)",
         "humanoid.json", humanoid_table),
        ("brax and Playground on a GPU (`make bench-gpu`)", "gpu.json", gpu_table),
        ("jax envs on a GPU against the raw jitted step (`make bench-gpu`)",
         "jax_envs_gpu.json", jax_table),
    ]:
        report = _load(name)
        if report is not None:
            when = ""
            if "date" in report:  # ray.json: the load of each case, in its table
                load = None if "case_load_average" in report else report.get("load_average")
                date = report["date"][:10]
                if "cases_measured" in report:  # envpool.json after --training-only
                    date, load = report["cases_measured"], report["cases_load_average"]
                when = f" (measured {date}" + (
                    f", load average {load[0]}" if load else "") + ")"
            parts += [f"**{title}**{when}", "", *table(report), ""]
    if _load("gpu.json") is None:
        parts += [GPU_PENDING, ""]
    return "\n".join(parts).rstrip() + "\n"


def _cores() -> int:
    return os.cpu_count() or 1


def write_summary() -> None:
    text = summary()
    (RESULTS / "SUMMARY.md").write_text(text)
    print(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the longer benchmark set")
    parser.add_argument("--summary-only", action="store_true",
                        help="only rebuild SUMMARY.md from existing results")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        run_scripts(args.full)
    write_summary()


if __name__ == "__main__":
    main()
