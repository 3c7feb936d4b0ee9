"""Every `neurorun ...` command printed in README and docs/ runs as printed (split by the shell's
rules), with a small budget appended so that long runs stop after three generations."""

import shlex

import pytest

from tests.cli.test_cli import ROOT, neurorun
from tests.cli.test_jax_presets import PRESETS

BUDGET = ["generations=3", "eval_episodes=1", "logger.console.quiet=true"]
# more budget for commands whose setups make one generation long
EXTRA_BUDGET = {
    # popsize 460 on Humanoid
    "experiment=humanoid": ["algo.popsize=20"],
    "hparams_search=": ["hydra.sweeper.n_trials=1"],
    "hydra/sweeper=optuna": ["hydra.sweeper.n_trials=1"],
}
# the extras a command needs, by a part of it (make test-core runs the others on the core alone)
NEEDS_EXTRAS = {
    "brax::": "jax", "playground": "playground", "envpool::": "envpool", "parallel=ray": "ray",
    "hparams_search=": "optuna", "hydra/sweeper=optuna": "optuna",
    "logger.tensorboard": "tensorboard", "logger.mlflow": "mlflow", "logger.wandb": "wandb",
}
# what a test machine cannot have; such commands are listed here with the reason, not run
NOT_RUNNABLE_HERE = {
    "hydra/launcher=submitit_slurm": "submits SLURM jobs",
}


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_commands() -> list[str]:
    """The `neurorun` command lines of the code blocks of README and docs/ (backslash
    continuations joined), each once (a command printed twice runs once)."""
    commands: dict[str, str] = {}
    for page in PAGES:
        in_block = False
        for line in page.read_text().replace("\\\n", " ").splitlines():
            if line.startswith("```"):
                in_block = not in_block
            elif in_block and (line.startswith("neurorun ") or line.strip() == "neurorun"):
                commands.setdefault(shlex.join(shlex.split(line, comments=True)), line.strip())
    return list(commands.values())


CLUSTER = "parallel.address=auto"  # these join a cluster: tests/parallel/test_cluster.py runs them
# the jax presets' commands: tests/cli/test_jax_presets.py runs them as typed, with a resume
JAX_PRESETS = set(PRESETS)
COMMANDS = [c for c in readme_commands() if CLUSTER not in c
            and shlex.join(shlex.split(c, comments=True)[1:]) not in JAX_PRESETS]
CLUSTER_COMMANDS = [c for c in readme_commands() if CLUSTER in c]


def test_readme_has_the_commands_this_test_is_about():
    assert len(COMMANDS) >= 20 and len(CLUSTER_COMMANDS) >= 1
    assert len(COMMANDS) + len(CLUSTER_COMMANDS) < len(readme_commands())  # the headline
    assert any("network.spec=" in c for c in COMMANDS)


def with_extras(command: str) -> object:
    """``command`` as a test parameter, marked with the extras it needs."""
    extras = sorted({extra for part, extra in NEEDS_EXTRAS.items() if part in command})
    return pytest.param(command, marks=[pytest.mark.extras(*extras)] if extras else [])


@pytest.mark.parametrize("command", [with_extras(c) for c in COMMANDS],
                         ids=lambda c: c.split("#")[0].strip()[:80])
def test_readme_command_runs_as_printed(tmp_path, command):
    args = shlex.split(command, comments=True)[1:]  # what the shell hands to neurorun
    reason = next((why for key, why in NOT_RUNNABLE_HERE.items() if key in command), None)
    if reason:
        pytest.skip(reason)  # counted in the summary; not the point of any command here
    resume = next((a.partition("=")[2] for a in args if a.startswith("resume=")), None)
    if resume:  # the run it continues, in the folder the command names, shorter than
        # the command's budget (a resume with nothing left to run is refused)
        shorter = ["generations=1" if a.startswith("generations=") else a for a in BUDGET]
        first = neurorun(f"hydra.run.dir={resume}", *shorter, cwd=tmp_path)
        assert first.returncode == 0, first.stderr[-2000:]
    budget = [] if any(a in ("--help", "--cfg") for a in args) else BUDGET + [
        extra for key, more in EXTRA_BUDGET.items() if key in command for extra in more]
    result = neurorun(*args, *budget, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, f"{args}\n{result.stderr[-3000:]}"
