"""The compiled evaluation of jax envs (brax, Playground): the programs, the
rollout that runs them on every device, compile logging."""
