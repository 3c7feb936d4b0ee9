"""Vectorized environments behind one torch interface (gymnasium, EnvPool, brax, Playground,
factories)."""

from neurorun.envs.base import EnvStepError, TorchVecEnv, UnknownEnvError
from neurorun.envs.factory import env_spaces, make_env, parse_spec, resolve_backend

__all__ = ["EnvStepError", "TorchVecEnv", "UnknownEnvError", "env_spaces", "make_env",
           "parse_spec", "resolve_backend"]
