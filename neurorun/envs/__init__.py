"""Vectorized environments behind one torch interface (gymnasium, brax, user factories)."""

from neurorun.envs.base import EnvStepError, TorchVecEnv, UnknownEnvError
from neurorun.envs.factory import env_spaces, make_env, parse_spec

__all__ = ["EnvStepError", "TorchVecEnv", "UnknownEnvError", "env_spaces", "make_env",
           "parse_spec"]
