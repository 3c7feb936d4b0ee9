#!/usr/bin/env bash
# Run one neurorun experiment per SLURM array task: a seed sweep without a Hydra launcher.
#
#   sbatch examples/slurm_sbatch.sh                      # 5 seeds of the default experiment
#   sbatch --array=0-9 examples/slurm_sbatch.sh experiment=lunarlander_continuous
#
# Each task writes its own run folder runs/slurm/<array job id>_<seed>/ and can be continued
# after a preemption with `neurorun resume=<that folder>` (see the requeue below).
#SBATCH --job-name=neurorun
#SBATCH --array=0-4
#SBATCH --cpus-per-task=8
#SBATCH --mem=16G
#SBATCH --time=04:00:00
#SBATCH --output=slurm-%A_%a.out
#SBATCH --signal=USR1@120
#SBATCH --requeue

set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$PWD}"
source .venv/bin/activate  # or: module load python; conda activate neurorun

SEED="${SLURM_ARRAY_TASK_ID:-0}"
# One folder per array task, fixed up front so that a requeued task resumes the same run.
RUN_DIR="runs/slurm/${SLURM_ARRAY_JOB_ID:-local}_${SEED}"

# 120 s before the time limit SLURM sends SIGUSR1 to neurorun (--signal above): it saves the
# last finished generation, prints the resume command and exits with 138 (128 + SIGUSR1);
# the task is then requeued and the next start resumes. SIGTERM (scancel, preemption) saves
# the same way and exits with 143.
status=0
if [[ -f "${RUN_DIR}/.hydra/config.yaml" ]]; then
  # A requeue: the earlier start saved its config. resume continues in place from its last
  # checkpoint, or from generation 0 if it was killed before its first one (checkpoint_every);
  # the saved config holds the overrides below.
  srun neurorun resume="${RUN_DIR}" logger.console.plain=true || status=$?
else
  # Cluster logs are not terminals: plain mode prints one line per generation.
  srun neurorun seed="${SEED}" hydra.run.dir="${RUN_DIR}" logger.console.plain=true "$@" \
    || status=$?
fi
if [[ "${status}" -eq 138 ]]; then
  scontrol requeue "${SLURM_JOB_ID}"
fi
exit "${status}"

# Multi-node runs on one ray cluster: examples/slurm_ray.sbatch.
