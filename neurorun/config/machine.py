"""What a config asks of this machine, checked before a run starts: the extras its env and ray
need, a GPU where it asks for one, EnvPool threads, the memory of a local ray's actors, the
video encoder. `neurorun.config.checks.validate_config` calls these after every key passed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from neurorun.common.errors import ConfigError
from neurorun.common.extras import MissingExtraError, require
from neurorun.common.memory import MEMORY_SHARE, device_free_bytes
from neurorun.common.values import is_int
from neurorun.envs import Backend, backend_of, resolve_backend
from neurorun.parallel.workload import check_local_actors

if TYPE_CHECKING:
    from neurorun.config.schema import RunConfig


@contextlib.contextmanager
def _as_config_error() -> Iterator[None]:
    """A part's ValueError or a missing extra (MissingExtraError) as a ConfigError: its one
    line, before anything starts."""
    try:
        yield
    except (MissingExtraError, ValueError) as error:
        raise ConfigError(str(error)) from None


def _env_backend(config: RunConfig) -> Backend | None:
    """The backend table's row of env.id (None: a malformed id, reported where the env is
    resolved)."""
    try:
        return backend_of(config.env.id)
    except ValueError:
        return None


def _check_device(config: RunConfig, backend: Backend | None) -> None:
    """problem.device=cuda needs a torch (and, for a jax env, a jax) that sees a GPU."""
    device = config.problem.device
    if torch.device(device).type != "cuda":
        return
    if not torch.cuda.is_available():
        raise ConfigError(f"problem.device={device!r}, but this torch sees no CUDA GPU "
                          f"(torch {torch.__version__}, a CPU-only build or no visible device). "
                          "Fix: problem.device=cpu, or install a CUDA build of torch where a "
                          "GPU is (make install TORCH=torch).")
    if backend is None or not backend.is_jax:
        return
    import jax  # installed: the env's extra was checked first

    if jax.default_backend() == "cpu":
        raise ConfigError(f"problem.device={device!r} with env {config.env.id!r}, but this jax "
                          f"({jax.__version__}) has no GPU backend: {backend} would step on the "
                          "CPU and copy every step to the GPU. Fix: install a CUDA jax (pip "
                          "install 'jax[cuda12]'), or problem.device=cpu.")


def resolved_backend(config: RunConfig) -> tuple[str, Backend] | None:
    """The spec env.backend resolves env.id to (a bare id may run on EnvPool or gymnasium) and
    its backend's row; None where the id or backend is malformed, which is reported where the
    env is resolved. Resolving env.backend=auto may import EnvPool: ask only when it matters."""
    try:
        spec = resolve_backend(config.env.id, config.env.backend)
        return spec, backend_of(spec)
    except (ValueError, ImportError):
        return None


def _check_num_threads(config: RunConfig) -> None:
    """env.num_threads on an env that has no EnvPool threads."""
    threads = config.env.num_threads
    resolved = None if threads is None else resolved_backend(config)
    if resolved is not None:
        with _as_config_error():
            resolved[1].check_num_threads(resolved[0], threads, key="env.num_threads")


def _free_memory() -> int:
    return device_free_bytes(torch.device("cpu"))


def _check_local_actors(config: RunConfig) -> None:
    """A local ray's actor count (a number, or one per parallel.num_cpus) that this machine's
    memory cannot hold, refused before ray starts."""
    parallel = config.parallel
    if parallel.name != "ray" or parallel.address:  # a joined cluster's nodes hold the actors
        return
    actors, cpus = parallel.ray_actors, parallel.num_cpus
    count, given = actors, ""
    if actors in ("max", "num_cpus"):
        count, given = cpus, f"parallel.num_cpus={cpus} (num_actors={actors}: one per CPU)"
    if is_int(count):
        with _as_config_error():
            check_local_actors(count, free_bytes=_free_memory(), memory_share=MEMORY_SHARE,
                               given=given)


def check_machine(config: RunConfig) -> None:
    """What ``config`` needs of this machine (ConfigError naming the key and the fix)."""
    backend = _env_backend(config)
    if backend is not None:
        with _as_config_error():
            backend.require(config.env.id)  # brax:: needs neurorun[jax], ...
            for key in ("episode_length", "episode_length_schedule"):
                backend.check_episode_length(config.env.id, getattr(config.problem, key),
                                             key=f"problem.{key}")
    _check_device(config, backend)
    _check_num_threads(config)
    _check_local_actors(config)
    with _as_config_error():
        config.logger.check_encoder()


def check_ray_installed(config: RunConfig) -> None:
    """parallel=ray needs neurorun[ray]."""
    if config.parallel.name == "ray":
        with _as_config_error():
            require("ray", "parallel=ray")
