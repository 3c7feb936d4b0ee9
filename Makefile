# neurorun — set-up, runs, tests and benchmarks. `make install && make run` on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU wheel of torch 2.13.0 lies on these machines' disk, so this is fast here. Elsewhere,
# pick the build you want, e.g. `make install TORCH=torch` (latest, CUDA on Linux).
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: install run test test-all test-core lint bench bench-full bench-learning bench-gpu clean

install: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[all,dev]"
	# Hydra's Optuna sweeper: its metadata pins optuna<3, but 1.3.0 runs on optuna 4-5
	$(PY) -m pip install -q --no-deps hydra-optuna-sweeper==1.3.0
	touch $(STAMP)

run: install
	$(VENV)/bin/neurorun

# pytest exits 5 when it collected nothing: that is a broken selection, not a green run.
# -n: one pytest worker per core (pytest-xdist); worksteal evens out the long files
TEST_JOBS ?= auto
PYTEST_ARGS = -q -n $(TEST_JOBS) --dist worksteal
# the suite runs in a network namespace of its own where the machine allows it: the ray heads
# and servers tests start listen on no interface but its loopback (tests/network_namespace.py)
ISOLATED = python3 tests/network_namespace.py --
NONE_COLLECTED_FAILS = rc=$$?; if [ $$rc -eq 5 ]; then \
    echo "pytest collected no tests: failing on purpose"; exit 1; fi; exit $$rc

test: install
	@$(ISOLATED) $(PY) -m pytest $(PYTEST_ARGS); $(NONE_COLLECTED_FAILS)

test-all: install
	@$(ISOLATED) $(PY) -m pytest $(PYTEST_ARGS) -m "slow or not slow"; $(NONE_COLLECTED_FAILS)

# The core alone (`pip install neurorun`: no jax, brax, ray, matplotlib, EnvPool) in a second
# venv, and the tests that need no extra: tests/conftest.py deselects those marked `extras`
# (NEURORUN_CORE_ONLY=1); tests/common/test_extras.py checks each extra's one-line message there.
CORE_VENV ?= .venv-core
CORE_STAMP := $(CORE_VENV)/.installed

$(CORE_STAMP): pyproject.toml
	python3 -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/python -m pip install -q "$(TORCH)"
	$(CORE_VENV)/bin/python -m pip install -q -e ".[dev]"
	touch $(CORE_STAMP)

test-core: $(CORE_STAMP)
	@NEURORUN_CORE_ONLY=1 $(ISOLATED) $(CORE_VENV)/bin/python -m pytest $(PYTEST_ARGS); \
	$(NONE_COLLECTED_FAILS)

lint: install
	$(VENV)/bin/ruff check neurorun tests benchmarks

bench: install
	$(PY) benchmarks/run.py

bench-full: install
	$(PY) benchmarks/run.py --full

# MuJoCo locomotion against the ARS paper (hours): the presets on README's seeds (Swimmer,
# Hopper, HalfCheetah 0-9), every algorithm on those three (3 seeds), Walker2d, Ant and
# Humanoid with their presets, a bare env= on each; the headline's brax humanoid to 1e8 env
# steps on 3 seeds (about 70 minutes each); then the summaries.
bench-learning: install
	$(PY) benchmarks/bench_locomotion.py --full
	$(PY) benchmarks/bench_humanoid_steps.py run --label pgpe --algo pgpe --seeds 0 1 2
	$(PY) benchmarks/bench_humanoid_steps.py summary runs/bench_humanoid_steps/pgpe_s*
	$(PY) benchmarks/run.py --summary-only

# brax and Playground on CUDA (needs a GPU and a CUDA build of torch and jax), on 1, 2, 4, ...
# of the machine's GPUs; then refreshes the summary.
bench-gpu: install
	$(PY) benchmarks/bench_gpu.py
	$(PY) benchmarks/bench_jax.py --device cuda
	$(PY) benchmarks/bench_devices.py
	$(PY) benchmarks/run.py --summary-only

clean:
	rm -rf $(VENV) $(CORE_VENV) build dist *.egg-info .pytest_cache .ruff_cache
