"""The env backends: ``BACKENDS``, the table of what each kind of env spec provides, and
``make_env``, where one spec string picks the backend.

Specs: ``"gym::Id"`` or a bare gymnasium ``"Id"``; ``"envpool::Id"``; ``"brax::name"``;
``"playground::Name"`` (MuJoCo Playground); ``"pkg.module:factory"`` (a callable taking
``num_envs`` and the env_config keywords, returning a gymnasium VectorEnv). ``resolve_backend``
turns a bare id and ``env.backend`` into a spec.

A table row (``Backend``) holds a kind's spaces, its batched constructor, whether it is a jax
env the compiled evaluation steps, how it renders; code outside ``neurorun.envs`` asks
``backend_of(spec)`` instead of comparing backend names. "factory" is the kind of a user's
``pkg.module:factory`` (as ``network.spec``'s ``pkg.module:Name``: user code that builds the
thing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from neurorun.common.extras import require
from neurorun.common.user_code import import_object, is_import_path
from neurorun.common.values import is_int

if TYPE_CHECKING:  # the table loads no torch and no gymnasium: envs/names.py reads its keys
    import torch
    from gymnasium import spaces

    from neurorun.envs.base import TorchVecEnv

    Spaces = tuple[spaces.Box, spaces.Box, spaces.Space]  # observation, policy/env action

BACKEND_CHOICES = ("auto", "gymnasium", "envpool")  # env.backend, for bare gymnasium ids


def resolve_backend(spec: str, backend: str = "auto") -> str:
    """The spec a run uses: a bare id with ``backend`` becomes ``Id`` or ``envpool::Id``.

    ``auto`` picks EnvPool for the ids whose equivalence with gymnasium is tested
    (``EQUIVALENT_IDS``, less ``AUTO_GYMNASIUM``) when EnvPool is installed; other specs are
    returned as they are.

    Raises:
        ValueError: an unknown backend, or one that contradicts the spec's own prefix.
        MissingExtraError: ``envpool`` asked for but not installed (an ImportError).
    """
    from neurorun.envs.envpool_env import AUTO_GYMNASIUM, EQUIVALENT_IDS, envpool_available

    if backend not in BACKEND_CHOICES:
        raise ValueError(f"env.backend={backend!r}; expected one of {list(BACKEND_CHOICES)}. "
                         "Fix: env.backend=auto")
    kind, name = parse_spec(spec)
    explicit = "::" in spec or kind == "factory"
    if explicit:
        wanted = {"gymnasium": "gym", "envpool": "envpool"}.get(backend)
        if wanted is not None and wanted != kind:
            raise ValueError(f"env.backend={backend} contradicts env.id={spec!r}; use the bare "
                             f"id with env.backend, or env.backend=auto")
        return spec
    if backend == "envpool":
        require("envpool", "env.backend=envpool")
        return f"envpool::{name}"
    if (backend == "auto" and name in EQUIVALENT_IDS and name not in AUTO_GYMNASIUM
            and envpool_available()):
        return f"envpool::{name}"
    return name


def parse_spec(spec: str) -> tuple[str, str]:
    """``(kind, name)``: kind is a key of BACKENDS (a prefix, or "factory")."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"env spec {spec!r}: expected a gymnasium id, <backend>::<name> "
                         f"({', '.join(p + '::' for p in spec_prefixes())}) or "
                         "'pkg.module:factory'")
    spec = spec.strip()
    prefix, sep, rest = spec.partition("::")
    if sep:
        if prefix not in spec_prefixes():
            raise ValueError(f"env spec {spec!r}: unknown backend {prefix!r}; expected one of "
                             f"{', '.join(p + '::' for p in spec_prefixes())}")
        return prefix, rest
    if is_import_path(spec):
        return "factory", spec
    return "gym", spec


def _load_factory(spec: str) -> Any:
    factory = import_object(spec, "env")
    if not callable(factory):
        raise ValueError(f"env {spec!r}: {factory!r} is not callable; expected a function or "
                         "class that returns the env")
    return factory


def _checked(spec: str, obs_space: spaces.Space, act_space: spaces.Space) -> Spaces:
    from neurorun.envs.base import check_observation_space, policy_action_space

    return check_observation_space(obs_space, spec), policy_action_space(act_space, spec), \
        act_space


# ----- each backend's spaces and batched constructor -----
def _gym_spaces(spec: str, name: str, env_config: dict[str, Any]) -> Spaces:
    from neurorun.envs.gym_env import gym_spaces

    return _checked(spec, *gym_spaces(name, **env_config))


def _make_gym(spec: str, name: str, num_envs: int, options: dict[str, Any]) -> TorchVecEnv:
    from neurorun.envs.gym_env import GymVecEnv, make_gym_vector_env

    vec = make_gym_vector_env(name, num_envs, options["vectorization"],
                              options["episode_length"], **options["env_config"])
    env = GymVecEnv(vec, spec, options["device"])
    env.reset(seed=options["seed"])
    return env


def _envpool_spaces(spec: str, name: str, env_config: dict[str, Any]) -> Spaces:
    from neurorun.envs.envpool_env import envpool_spaces

    return _checked(spec, *envpool_spaces(name, **env_config))


def _make_envpool(spec: str, name: str, num_envs: int, options: dict[str, Any]) -> TorchVecEnv:
    from neurorun.envs.envpool_env import EnvPoolVecEnv

    return EnvPoolVecEnv(name, num_envs, device=options["device"], seed=options["seed"],
                         episode_length=options["episode_length"],
                         num_threads=options["num_threads"], **options["env_config"])


def _brax_spaces(spec: str, name: str, env_config: dict[str, Any]) -> Spaces:
    from neurorun.envs.brax_env import brax_spaces

    obs_space, act_space = brax_spaces(name, **env_config)
    return obs_space, act_space, act_space


def _brax_batch(name: str, episode_length: int | None, /, **env_config: Any) -> Any:
    from neurorun.envs.brax_env import batched_brax_env

    return batched_brax_env(name, episode_length, **env_config)


def _playground_spaces(spec: str, name: str, env_config: dict[str, Any]) -> Spaces:
    from neurorun.envs.playground_env import playground_spaces

    obs_space, act_space = playground_spaces(name, **env_config)
    return obs_space, act_space, act_space


def _playground_batch(name: str, episode_length: int | None, /, **env_config: Any) -> Any:
    from neurorun.envs.playground_env import batched_playground_env

    return batched_playground_env(name, episode_length, **env_config)


def _make_jax(spec: str, name: str, num_envs: int, options: dict[str, Any]) -> TorchVecEnv:
    from neurorun.envs.jax_env import JaxVecEnv

    batch = batched_jax_env(spec, options["episode_length"], **options["env_config"])
    return JaxVecEnv(spec, batch, num_envs, device=options["device"], seed=options["seed"])


def _factory_spaces(spec: str, name: str, env_config: dict[str, Any]) -> Spaces:
    env = make_env(spec, 1, **env_config)  # a factory's spaces need an env: a 1-env one
    try:
        return env.single_observation_space, env.single_action_space, env.env_action_space
    finally:
        env.close()


def _make_factory(spec: str, name: str, num_envs: int, options: dict[str, Any]) -> TorchVecEnv:
    from neurorun.envs.gym_env import make_factory_env

    env = make_factory_env(_load_factory(name), spec, num_envs, options["device"],
                           **options["env_config"])
    env.reset(seed=options["seed"])
    return env


@dataclass(frozen=True)
class Backend:
    """What one kind of env spec provides."""

    spaces: Callable[[str, str, dict[str, Any]], Spaces]  # (spec, name, env_config)
    make: Callable[[str, str, int, dict[str, Any]], TorchVecEnv]  # (spec, name, n, options)
    label: str  # what messages call it: "env X runs on <label>"
    # jax envs: (name, episode_length, **env_config) -> the env in brax's interface,
    # vectorized over reset keys, that JaxVecEnv and the compiled evaluation step; None: not
    # a jax env
    jax_batch: Callable[..., Any] | None = None
    takes_threads: bool = False  # env.num_threads applies (EnvPool's threads)
    gymnasium_id: bool = False  # the name is a gymnasium id (env.backend=auto chooses for it)
    cuts_episodes: bool = True  # episode_length applies (a factory's envs end their own)
    # the problem.vectorization values whose envs end single episodes (a curriculum's cut
    # needs that); None: the backend batches its envs itself and takes no vectorization
    episode_ending_vectorizations: tuple[str, ...] | None = None
    # how neurorun-render shows it: "frames" (gymnasium's env of the same id), "html" (brax's
    # viewer) or None (not rendered)
    render: Literal["frames", "html"] | None = None
    extra: str | None = None  # the pyproject extra its packages come from (None: the core)

    @property
    def is_jax(self) -> bool:
        """Whether its envs are jax envs (the compiled evaluation steps them)."""
        return self.jax_batch is not None

    def require(self, spec: str) -> None:
        """MissingExtraError (an ImportError) when the packages of ``spec``'s backend are not
        installed: one line that names them and the pip command."""
        if self.extra is not None:
            require(self.extra, f"env={spec}")

    def check_episode_length(self, spec: str, episode_length: int | None, *,
                             key: str = "episode_length") -> None:
        """ValueError when ``episode_length`` (config key ``key``) is set for ``spec``, an env
        of this backend that neurorun cannot cut."""
        if episode_length is not None and not self.cuts_episodes:
            raise ValueError(f"{key}={episode_length}: the env factory {spec!r} makes its own "
                             f"envs, which neurorun cannot cut. Fix: {key}=null, and end the "
                             "episodes in the factory.")

    def check_vectorization(self, spec: str, vectorization: str) -> None:
        """ValueError for a ``problem.vectorization`` that ``spec``'s envs cannot take: on
        gymnasium (the backend with vectorizations) ``native`` needs the env's own vector env;
        the others batch their envs themselves and leave it unread."""
        if self.episode_ending_vectorizations is not None:
            from neurorun.envs.gym_env import check_gym_vectorization  # the table loads no gym

            check_gym_vectorization(parse_spec(spec)[1], vectorization)

    def vectorization_for_cuts(self, vectorization: str) -> str:
        """The vectorization of training envs whose episodes a curriculum cuts one by one:
        ``vectorization`` where it can end single episodes, ``auto`` the first that can;
        ValueError naming the fix otherwise."""
        allowed = self.episode_ending_vectorizations
        if allowed is None or vectorization in allowed:
            return vectorization
        from neurorun.envs.gym_env import check_vectorization  # the table loads no gym

        check_vectorization(vectorization)  # a bad value is named as such, first
        if vectorization == "auto":
            return allowed[0]
        raise ValueError(f"problem.vectorization={vectorization} with "
                         "problem.episode_length_schedule: these vector envs cannot end single "
                         f"episodes, which the schedule's cut needs. Fix: "
                         f"problem.vectorization={allowed[0]} (or auto)")

    def check_num_threads(self, spec: str, num_threads: int | None, *,
                          key: str = "num_threads") -> None:
        """ValueError when ``num_threads`` (config key ``key``) is not an integer >= 1 or null,
        or is set for ``spec``, an env of this backend, which has no EnvPool threads to set."""
        if num_threads is not None and (not is_int(num_threads) or num_threads < 1):
            raise ValueError(f"{key}={num_threads!r}; expected an integer >= 1, or null (the "
                             "CPUs this process may use)")
        if num_threads is not None and not self.takes_threads:
            raise ValueError(f"{key}={num_threads} sets EnvPool's threads, but env {spec!r} "
                             f"runs on {self.label}. Fix: "
                             f"{key}=null, or an EnvPool "
                             "env (envpool::<id>, or a bare id with env.backend=envpool).")


BACKENDS: dict[str, Backend] = {
    # only a SyncVectorEnv is stepped env by env (gym_env.SubEnvStepper)
    "gym": Backend(_gym_spaces, _make_gym, "gymnasium", gymnasium_id=True, render="frames",
                   episode_ending_vectorizations=("sync",)),
    "envpool": Backend(_envpool_spaces, _make_envpool, "EnvPool", takes_threads=True,
                       gymnasium_id=True, render="frames",
                       extra="envpool"),  # rendered through gymnasium's env
    "brax": Backend(_brax_spaces, _make_jax, "brax", jax_batch=_brax_batch, render="html",
                    extra="jax"),
    "playground": Backend(_playground_spaces, _make_jax, "Playground",
                          jax_batch=_playground_batch, extra="playground"),
    "factory": Backend(_factory_spaces, _make_factory, "an env factory", cuts_episodes=False),
}


def spec_prefixes() -> tuple[str, ...]:
    """The prefixes of `<prefix>::<name>` specs: every kind of BACKENDS but "factory"."""
    return tuple(kind for kind in BACKENDS if kind != "factory")


def backend_of(spec: str) -> Backend:
    """The table entry of ``spec``'s backend (ValueError: a malformed spec)."""
    return BACKENDS[parse_spec(spec)[0]]


def batched_jax_env(spec: str, episode_length: int | None = None, /,
                    **env_config: Any) -> Any:
    """The env of a jax spec vectorized over its reset keys (``reset(keys)``: one env per key;
    episodes ended at the earlier of ``episode_length`` and the env's own limit, not reset);
    the compiled evaluation and benchmarks step it."""
    kind, name = parse_spec(spec)
    batch = BACKENDS[kind].jax_batch
    if batch is None:
        raise ValueError(f"env {spec!r} is not a jax env (brax:: or playground::)")
    BACKENDS[kind].require(spec)
    return batch(name, episode_length, **env_config)


def make_env(
    spec: str,
    num_envs: int,
    *,
    device: torch.device | str = "cpu",
    vectorization: str = "auto",
    seed: int | None = None,
    episode_length: int | None = None,
    num_threads: int | None = None,
    **env_config: Any,
) -> TorchVecEnv:
    """A TorchVecEnv of ``num_envs`` environments.

    Args:
        spec: ``"gym::Id"``, ``"Id"``, ``"envpool::Id"``, ``"brax::name"``,
            ``"playground::Name"`` or ``"pkg.module:factory"``.
        num_envs: number of environments.
        device: torch device of observations, rewards and dones.
        vectorization: gymnasium only: "auto" (the env's own vectorized implementation when
            gymnasium has one, else "sync"), "native", "sync" or "async".
        seed: seeds the first ``reset`` (later resets take their own seed).
        episode_length: end episodes after this many steps (or at the env's own limit when
            that comes first). Not supported for factories: limit the episodes there.
        num_threads: EnvPool's threads (None: the CPUs this process may use); EnvPool only.
        env_config: keyword arguments of the environment (gym.make / EnvPool's options /
            brax.envs.create / Playground config overrides / the factory).

    Raises:
        MissingExtraError: the backend's packages are not installed (an ImportError).
        UnknownEnvError: no such gymnasium id, EnvPool id, brax or Playground name (the
            message names close ones), or a Playground robot task without its models.
        TypeError: the observation space is not a Box, or the action space is neither Box
            nor Discrete.
    """
    if int(num_envs) < 1:
        raise ValueError(f"num_envs={num_envs}; expected at least 1")
    kind, name = parse_spec(spec)
    backend = BACKENDS[kind]
    backend.check_num_threads(spec, num_threads)
    backend.check_episode_length(spec, episode_length)
    backend.require(spec)
    return backend.make(spec, name, int(num_envs), {
        "device": device, "vectorization": vectorization, "seed": seed,
        "episode_length": episode_length, "num_threads": num_threads, "env_config": env_config})


def env_spaces(spec: str, **env_config: Any) -> Spaces:
    """(observation Box, policy action Box, env action space) without building a vector env
    (brax and Playground: no compilation; factories build a 1-env vector env)."""
    kind, name = parse_spec(spec)
    BACKENDS[kind].require(spec)
    return BACKENDS[kind].spaces(spec, name, env_config)
