"""Hydra's errors about the command line, said in one line with the fix.

Hydra's own report of a misspelt key advises `+algo.popsiz=10`, which neurorun's schema then
refuses (another algorithm's option, e.g. ARS's `algo.top_directions` with `algo=cmaes`, is
named as such); an override its grammar cannot read (unquoted non-ASCII text) is four lines about a
lexer; a value of the wrong type for a typed key of Hydra or its plugins is six; an `env=`
name with path parts (`env=../config`) composes whatever file it names. All
are config errors of the command line, said as neurorun says the others.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
from collections.abc import Sequence
from importlib import resources

from hydra.errors import (
    CompactHydraException,
    ConfigCompositionException,
    HydraException,
    MissingConfigException,
)
from hydra.errors import OverrideParseException as ParseError
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    ConfigTypeError,
    ValidationError,
)

from neurorun.algorithms import algorithms_with
from neurorun.cli.arguments import given_values
from neurorun.cli.env_source import env_path_error
from neurorun.common.errors import one_line
from neurorun.common.settings import mapping_expected
from neurorun.common.values import shown
from neurorun.config.resume import config_groups
from neurorun.config.schema import (
    OPEN_MAPPINGS,
    ParallelConfig,
    in_open_mapping,
    refused_on_local,
)

RAY_KEYS = {item.name for item in dataclasses.fields(ParallelConfig)} - {"name", "num_actors"}


def config_error_line(error: BaseException, argv: Sequence[str]) -> str | None:
    """The config-error line for a Hydra error about ``argv``, or None when it is another."""
    env_path = _env_path(argv)
    if env_path is not None:  # whatever Hydra made of the file it named
        return env_path
    if isinstance(error, ParseError):
        return _unparsable(argv)
    if str(error).startswith("Sweeping over Hydra's configuration is not supported"):
        return _hydra_key_swept(str(error))
    if str(error).startswith(("Ambiguous value for argument", "Sweep parameters")):
        return _sweep_without_multirun(str(error))
    if isinstance(error, MissingConfigException):
        return _missing_option(error, argv)
    if str(error).startswith("Additional config directory"):
        folder = str(error).split("'")[1] if "'" in str(error) else "?"
        return (f"--config-dir {folder}: no such folder. Fix: the folder that holds your "
                "config groups (e.g. --config-dir ./conf), or leave --config-dir out.")
    if isinstance(error, ConfigCompositionException) and str(error).startswith(
            "Could not override") and isinstance(error.__cause__, ConfigAttributeError |
                                                 ConfigKeyError):
        return _unknown_key(error.__cause__, argv)
    if isinstance(error, ConfigCompositionException) and isinstance(
            error.__cause__, ConfigTypeError) and str(error.__cause__).startswith("Cannot merge"):
        key = error.__cause__.full_key  # a list for a mapping (network.network_args=[1])
        given = given_values(argv).get(key)  # or a mapping for a list
        if isinstance(given, list):
            return str(mapping_expected(key, given))
        if isinstance(given, dict):
            return (f"{key}={given!r}: expected a list there. Fix: {key}=[...] (`neurorun "
                    "--cfg job` shows the config).")
    if isinstance(error, ConfigCompositionException) and isinstance(error.__cause__,
                                                                    ValidationError):
        # a typed key of Hydra's or a plugin's (hydra.sweeper.sampler.seed=abc): six lines
        cause = error.__cause__
        given = next((arg for arg in argv if arg.partition("=")[0] == cause.full_key),
                     cause.full_key)
        return (f"{given}: {one_line(cause, first_line=True)}. Fix: a value of that type "
                "(`neurorun --cfg hydra` shows Hydra's keys and values).")
    return None


def _sweep_without_multirun(message: str) -> str:
    """A sweep's override (``seed=0,1``, ``seed=range(0,3)``) in a single run."""
    named = re.match(r"(?:Ambiguous value for argument|Sweep parameters) '(.*)'",
                     message.splitlines()[0])  # greedy: a quoted value's quotes stay inside
    override = named[1] if named else "?"
    key = override.partition("=")[0].lstrip("+~")
    if key in OPEN_MAPPINGS or in_open_mapping(key):
        override = override.removeprefix("++")  # neurorun's own (open_mapping_overrides)
    if "interval(" in override:
        return (f"{override} is a search space of Optuna's sweeper. Fix: neurorun -m "
                f"hydra/sweeper=optuna {override} ... (docs/sweeps.md), or one value.")
    single = ("one value" if key in config_groups() or key in OPEN_MAPPINGS
              else f"one value (a list is written {key}=[...])")
    return (f"{override} is a sweep, which runs with -m. Fix: neurorun -m {override} ..., or "
            f"{single}.")


def _hydra_key_swept(message: str) -> str:
    """A sweep over a key of Hydra's own config: a search space under hydra.sweeper.params
    written on the command line (the search's keys go there bare)."""
    arg = message.partition(" : ")[2].strip().removeprefix("'").removesuffix("'") or message
    params = "hydra.sweeper.params."
    if arg.startswith(params):
        return (f"{arg}: a search space goes on the command line by its own key, not under "
                f"{params.rstrip('.')}. Fix: {arg[len(params):]}")
    return (f"{arg}: keys of Hydra's own config take one value, not a sweep. Fix: one value "
            "(`neurorun --cfg hydra` shows them).")


def group_choice_error(argv: Sequence[str]) -> str | None:
    """Why an override of ``argv`` that picks a config group's option is refused before Hydra
    reads it: anything but one name (`algo=[pgpe]`, `debug=null`, `logger=true`), which Hydra
    merges as several options, or meets with a TypeError or ValueError and its traceback; or
    the removal (`~experiment`) of a group another group's choice is named after, which ends
    in Hydra's interpolation error."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    groups = config_groups()
    defaults = _default_choices()
    followed = {name for choice in defaults.values() if isinstance(choice, str)
                for name in re.findall(r"\$\{(\w+)\}", choice)}
    parser = OverridesParser.create()
    for arg in argv:
        try:
            override = parser.parse_override(arg)
        except HydraException:
            continue  # said as unparsable once Hydra reads it
        group = override.key_or_group
        if group not in groups or override.is_sweep_override():
            continue
        default_none = group in defaults and defaults[group] is None
        leave_out = f", or leave {group}= out (none is picked by default)" if default_none else ""
        if override.is_delete() and group in followed:
            return (f"{arg}: the config group {group} cannot be removed: other groups' choices "
                    f"are named after it. Fix: {group}=<name> (`neurorun --help` lists them)"
                    f"{leave_out}.")
        value = override.value()
        if override.is_delete() or isinstance(value, str):
            continue
        what = "a list or mapping" if isinstance(value, list | dict) else shown(value)
        return (f"{arg}: {group}= takes the name of one option of the config group {group}, "
                f"not {what}. Fix: {group}=<name> (`neurorun --help` lists them){leave_out}, "
                f"or -m {group}=<name>,<name> to sweep over several.")
    return None


def _default_choices() -> dict[str, str | None]:
    """Each group's choice in the primary config's defaults list, as written (``${env}/${algo}``
    for env_algo, None for a group that picks none unless told)."""
    config = OmegaConf.load(resources.files("neurorun.conf") / "config.yaml")
    entries = OmegaConf.to_container(config.defaults, resolve=False)
    choices: dict[str, str | None] = {}
    for entry in entries:
        if isinstance(entry, dict):
            for key, choice in entry.items():
                choices[key.removeprefix("optional ").strip()] = choice
    return choices


def report_like_hydra(error: CompactHydraException) -> None:
    """What Hydra prints for an error it reports in short (exit status 1)."""
    print(str(error), file=sys.stderr)
    if error.__cause__ is not None:
        print(str(error.__cause__), file=sys.stderr)
    print("\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
          file=sys.stderr)
    sys.exit(1)


def yaml_error_line(error: Exception) -> str:
    """`<file>, line L, column C: <problem>. Fix: ...` for a config file YAML cannot read."""
    mark = getattr(error, "problem_mark", None)
    where = (f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None
             else "a config file")
    problem = getattr(error, "problem", None) or one_line(error, first_line=True)
    return (f"{where}: not YAML ({problem}). Fix: correct the file (indent with spaces, not "
            "tabs), or leave its folder out of --config-dir.")


def _missing_option(error: MissingConfigException, argv: Sequence[str]) -> str:
    """`algo=pgep: no option pgep of the group algo; did you mean pgpe? ...`"""
    group, _, name = str(error.missing_cfg_file or "").rpartition("/")
    options = [str(option) for option in error.options or []]
    given = next((arg for arg in argv if arg.lstrip("+~").partition("=")[0] == group
                  and arg.partition("=")[2] == name), f"{group}={name}")
    if not group:  # the primary config (--config-name) or a file a default names
        return f"{one_line(error, first_line=True)}. Fix: check the config's name."
    close = difflib.get_close_matches(name, options, n=3)
    hint = f"; did you mean {', '.join(f'{group}={c}' for c in close)}?" if close else "."
    shown = ", ".join(options) if options else "none"
    return (f"{given}: no option {name!r} of the group {group}{hint} Fix: one of {shown} "
            "(`neurorun --help` lists every group's options).")


def _unknown_key(cause: ConfigAttributeError | ConfigKeyError, argv: Sequence[str]) -> str:
    """`algo.popsiz=10: no key algo.popsiz (algo=pgpe); did you mean algo.popsize? ...`"""
    path = str(cause.full_key)
    section, _, key = path.rpartition(".")
    parent = cause.parent_node
    keys = list(parent) if isinstance(parent, DictConfig) else []
    close = difflib.get_close_matches(key, keys, n=1)
    given = next((arg for arg in argv if arg.partition("=")[0] == path), path)
    owners = algorithms_with(key) if section == "algo" else []
    swept = _swept_algorithms(argv)
    if owners and swept:  # Hydra composes a sweep's config with the default algorithm first
        lacking = [name for name in swept if name not in owners]
        missing = (f"; {', '.join('algo=' + name for name in lacking)} of the sweep lack"
                   f"{'s' if len(lacking) == 1 else ''} it too" if lacking else "")
        return (f"{given}: a sweep over {', '.join('algo=' + name for name in swept)} is "
                f"composed first with the default algo={parent.get('name')}, which has no "
                f"option {key} (an option of {', '.join('algo=' + n for n in owners)}"
                f"{missing}). Fix: ++{given} adds it to each job (a job whose algorithm lacks "
                "it is refused), or sweep only the algorithms that have it.")
    if owners and "name" in keys:  # another algorithm's option (`experiment=hopper algo=cmaes`)
        return (f"{given}: algo={parent.get('name')} has no option {key} (an option of "
                f"{', '.join('algo=' + name for name in owners)}). Fix: leave it out, or choose "
                "that algorithm.")
    if section == "parallel" and key in RAY_KEYS:  # declared by parallel=ray only
        return refused_on_local(given)
    algo = f" (algo={parent.get('name')})" if section == "algo" and "name" in keys else ""
    hint = f"; did you mean {section + '.' if section else ''}{close[0]}?" if close else "."
    return (f"{given}: no key {path}{algo}{hint} Fix: check the spelling (`neurorun --cfg job` "
            "shows every key).")


def _swept_algorithms(argv: Sequence[str]) -> list[str]:
    """The algorithms of a sweep's ``algo=a,b`` override, or none."""
    for arg in argv:
        key, sep, value = arg.partition("=")
        if key == "algo" and sep and "," in value:
            return [name.strip() for name in value.split(",") if name.strip()]
    return []


def _env_path(argv: Sequence[str]) -> str | None:
    """Why an `env=` option of ``argv`` (one of a sweep's too) is refused: a name with path
    parts, which can name a packaged file outside env/ (`env=../config`)."""
    for arg in argv:
        key, sep, value = arg.lstrip("+~").partition("=")
        if key == "env" and sep:
            said = next(filter(None, map(env_path_error, value.split(","))), None)
            if said is not None:
                return said
    return None


def _unparsable(argv: Sequence[str]) -> str | None:
    """The first override Hydra's grammar cannot read, and how to quote it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for arg in argv:
        try:
            parser.parse_override(arg)
        except HydraException:
            key, sep, value = arg.partition("=")
            fix = (f"""quote the value: '{key}="{value}"'""" if sep and not set("'\"") & set(value)
                   else "quote the value (key=\"value\", the whole override in the shell's '')")
            return (f"{arg!r} cannot be parsed as an override: Hydra reads non-ASCII letters, "
                    f"spaces and most symbols only inside quotes. Fix: {fix}.")
    return None
