"""The declared config (config/schema.py, common/settings.py): its defaults are the packaged
YAML's values (every packaged option composes into it: tests/cli/test_configs.py), and one
key's check says the key, the value, what it takes and the fix."""

import dataclasses
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pytest
from omegaconf import OmegaConf

from neurorun.algorithms import ALGORITHMS
from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.common.settings import load_section, setting
from neurorun.config.schema import OPEN_MAPPINGS, RunConfig, load_config, logger_section


def _yaml(group: str, option: str) -> dict[str, Any]:
    text = resources.files("neurorun.conf").joinpath(f"{group}/{option}.yaml").read_text()
    return OmegaConf.to_container(OmegaConf.create(text))


def test_the_declared_defaults_are_the_packaged_yaml_values():
    """config.yaml's own keys, logger/default.yaml and problem/default.yaml state every value
    the declaration holds (a key a YAML leaves out takes the declared default)."""
    primary = OmegaConf.to_container(OmegaConf.create(
        resources.files("neurorun.conf").joinpath("config.yaml").read_text()))
    declared = RunConfig()
    for key, value in primary.items():
        if key in ("defaults", "hydra", "algo", "target_score"):
            continue  # hydra is Hydra's; algo's are the algorithms'; target_score the env's
        field = getattr(declared, key)
        expected = dataclasses.asdict(field) if dataclasses.is_dataclass(field) else field
        if isinstance(value, dict):
            expected = {k: expected[k] for k in value}  # env: the keys config.yaml sets
        assert value == expected, key
    assert _yaml("logger", "default") == dataclasses.asdict(RunConfig().logger)
    # an empty config is the declared defaults
    assert dataclasses.asdict(load_config({})) == dataclasses.asdict(RunConfig())
    assert _yaml("problem", "default") == dataclasses.asdict(RunConfig().problem)
    assert _yaml("parallel", "local") == {
        k: v for k, v in dataclasses.asdict(RunConfig().parallel).items()
        if k in ("name", "num_actors")}


def test_the_python_apis_defaults_are_the_declared_ones():
    """make_problem's keyword defaults (what a Python caller gets) are the declared defaults
    of the keys they stand for (what the command gets)."""
    import inspect

    from neurorun.problems import make_problem

    declared = {**dataclasses.asdict(RunConfig().problem),
                "network": RunConfig().network.spec,
                "num_threads": RunConfig().env.num_threads}
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(make_problem).parameters.items()
                if parameter.default is not parameter.empty}
    assert {key: defaults[key] for key in declared} == declared
    # the rest have no key of their own: the env's and network's sections, the run's seed
    assert set(defaults) - set(declared) == {"network_args", "env_config", "seed"}


def _option_defaults(algorithm: type) -> dict[str, Any]:
    """An algorithm's options as its Options dataclass and DEFAULTS set them, flat."""
    options = algorithm.Options()
    flat = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        flat.update(dataclasses.asdict(value) if field.metadata.get("group") else
                    {field.name: value})
    return {**flat, **algorithm.DEFAULTS}


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_an_algorithms_yaml_keeps_the_values_its_options_set(name):
    """Where an algorithm's Options set a value (None: the option has none until given), the
    command's composed algo section holds that value: a Python caller of make_algorithm and
    the command get the same algorithm."""
    composed = OmegaConf.to_container(compose_config([f"algo={name}"]).algo)
    for key, value in _option_defaults(ALGORITHMS[name]).items():
        if value is not None:
            assert composed[key] == value, key


def test_the_open_mappings_are_the_declared_free_form_sections():
    """OPEN_MAPPINGS (new keys taken on the command line) are the fields typed as mappings;
    algo.optimizer_config is an option of the algorithms that take one."""
    def mappings(cls, prefix):
        for item in dataclasses.fields(cls):
            hint = cls.__annotations__[item.name]
            if "dict[" in str(hint):
                yield f"{prefix}{item.name}"
            default = item.default_factory() if item.default_factory is not \
                dataclasses.MISSING else None
            if dataclasses.is_dataclass(default) and item.name not in ("algo", "logger"):
                yield from mappings(type(default), f"{prefix}{item.name}.")
    assert set(mappings(RunConfig, "")) | {"algo.optimizer_config"} == set(OPEN_MAPPINGS)


@dataclass(frozen=True)
class Section:
    count: int = setting(1, ge=1)
    share: float = setting(0.5, gt=0, le=1)
    flag: bool | None = None
    kind: str = setting("a", choices=("a", "b"))
    table: dict[str, Any] = dataclasses.field(default_factory=dict)


@pytest.mark.parametrize(("raw", "message"), [
    ({"count": 0}, "s.count=0: expected an integer >= 1. Fix: s.count=<integer >= 1>."),
    ({"count": True}, "s.count=True: expected an integer >= 1. Fix: s.count=<integer >= 1>."),
    ({"count": "3"}, "s.count='3': expected an integer >= 1. Fix: s.count=<integer >= 1>."),
    ({"share": 0}, "s.share=0: expected a finite number > 0 and at most 1. Fix: "
                   "s.share=<finite number > 0 and at most 1>."),
    ({"share": float("nan")}, "s.share=nan: expected a finite number > 0 and at most 1."),
    ({"flag": "no"}, "s.flag='no': expected true or false or null. Fix: s.flag=true or "
                     "s.flag=false."),
    ({"kind": "c"}, "s.kind='c': expected one of a, b. Fix: s.kind=a."),
    ({"table": [1]}, "s.table=[1]: expected a mapping of keys to values there."),
    ({"cuont": 2}, "s.cuont=2: no such key, so it would be ignored (did you mean s.count?). "
                   "Fix: check the spelling"),
    ({"zzz": 2}, "s.zzz=2: no such key, so it would be ignored. Fix: check the spelling"),
])
def test_one_key_is_refused_naming_its_value_what_it_takes_and_the_fix(raw, message):
    with pytest.raises(ConfigError) as caught:
        load_section(Section, raw, "s")
    assert str(caught.value).startswith(message)


def test_a_section_takes_yaml_values_and_fills_what_it_lacks():
    loaded = load_section(Section, {"count": 3, "share": 1, "table": {"x": [1]}}, "s")
    assert loaded == Section(count=3, share=1, table={"x": [1]})
    assert type(loaded.share) is int  # YAML's 1 where a number belongs, as written
    assert load_section(Section, None, "s") == Section()


def test_a_logger_row_declares_its_section():
    """logger.* is made from LOGGERS: a section no row declares is not a key."""
    names = {item.name for item in dataclasses.fields(logger_section())}
    assert names == {"video_every", "video_format", "console", "tensorboard", "mlflow", "wandb"}
