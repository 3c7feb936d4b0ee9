"""Vectorized environments behind one torch interface (gymnasium, EnvPool, brax, Playground,
factories)."""

from neurorun.envs.backends import (
    Backend,
    backend_of,
    batched_jax_env,
    env_spaces,
    make_env,
    parse_spec,
    resolve_backend,
)
from neurorun.envs.base import EnvStepError, TorchVecEnv, UnknownEnvError

__all__ = ["Backend", "EnvStepError", "TorchVecEnv", "UnknownEnvError", "backend_of",
           "batched_jax_env", "env_spaces", "make_env", "parse_spec", "resolve_backend"]
