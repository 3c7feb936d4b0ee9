"""Vectorized environments behind one torch interface (gymnasium, EnvPool, brax, Playground,
factories). The package and its table of backends load no env library: the interface and its
errors are `neurorun.envs.base`'s, each backend's module is imported when its env is made."""

from neurorun.envs.backends import (
    Backend,
    backend_of,
    batched_jax_env,
    env_spaces,
    make_env,
    parse_spec,
    resolve_backend,
)

__all__ = ["Backend", "backend_of", "batched_jax_env", "env_spaces", "make_env", "parse_spec",
           "resolve_backend"]
