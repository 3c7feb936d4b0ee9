"""The command line as given, before Hydra reads it: the overrides that Hydra's grammar or
struct mode would misread are rewritten (a network string's parentheses, a new key under an
open mapping), and the folders it names are checked before Hydra writes into them."""

from __future__ import annotations

from collections.abc import Sequence

from neurorun.config_checks import OPEN_MAPPINGS
from neurorun.resume import require_saved_config
from neurorun.run_folder import (
    refuse_existing_run,
    refuse_existing_sweep,
    require_creatable,
    require_free,
)

NETWORK_STRING_KEYS = ("network.spec",)  # keys whose values are network strings
# what config.yaml's hydra.run.dir and hydra.sweep.subdir name the run folder after
FOLDER_KEYS = ("resume", "env", "env.id", "algo", "algo.name", "seed")


def rewritten(argv: Sequence[str]) -> list[str]:
    """``argv`` as Hydra should read it (``quote_network_strings``, ``open_mapping_overrides``)."""
    return open_mapping_overrides(quote_network_strings(argv))


def quote_network_strings(argv: Sequence[str]) -> list[str]:
    """Quote a network string for Hydra's override grammar as the shell hands it over:
    `network.spec="Linear(obs_length, 32) >> Tanh()"` arrives without its quotes, and Hydra
    reads `(`, `>>` and spaces as syntax. A value Hydra already reads as a string or a sweep
    (`'network.spec="A","B"'`, `network.spec=pkg.mod:Net`) is left as it is."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    quoted = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+~") in NETWORK_STRING_KEYS and value[:1] not in "'\"":
            try:
                parser.parse_override(arg)
            except HydraException:
                escaped = value.replace("'", "\\'")  # Hydra's escape for a quote
                arg = f"{key}='{escaped}'"
        quoted.append(arg)
    return quoted


def open_mapping_overrides(argv: Sequence[str]) -> list[str]:
    """A key under a free-form mapping (OPEN_MAPPINGS: passed on as it is, so any key may be
    new) as Hydra's force-add: `env.env_config.backend=spring` -> `++env.env_config.backend=
    spring`. Hydra's struct mode would refuse a new key without `+`; a key spelt with a
    `+`, `++` or `~` is left as it is."""
    opened = []
    for arg in argv:
        key, sep, _ = arg.partition("=")
        if sep and any(key.startswith(path + ".") for path in OPEN_MAPPINGS):
            arg = f"++{arg}"
        opened.append(arg)
    return opened


def override_key(override: str) -> str:
    """`+algo.popsize=6` -> "algo.popsize"."""
    return override.lstrip("+~").split("=", 1)[0]


def asks_for_sweep(argv: Sequence[str]) -> bool:
    """Whether the command line asks for a sweep (Hydra's multirun)."""
    return bool({"-m", "--multirun", "hydra.mode=MULTIRUN"} & set(argv))


def folder_interpolations(argv: Sequence[str]) -> list[str]:
    """The overrides that give a key the run folder is named after (FOLDER_KEYS) an
    interpolation (``${...}``): Hydra resolves them to name the folder."""
    return [arg for arg in argv if "${" in arg and override_key(arg) in FOLDER_KEYS]


def folder_error(argv: Sequence[str]) -> str | None:
    """What is wrong with the folders named on the command line, checked before Hydra writes
    its files into them: `resume=` must name an earlier run; `hydra.run.dir=` of a new run
    must not hold one, nor `hydra.sweep.dir=` of a sweep a sweep; the run or sweep folder must
    be one that can be made."""
    given = {}
    for arg in argv:
        key, _, value = arg.lstrip("+").partition("=")
        value = value.strip("'\"")  # Hydra's quoting: resume='runs/my run'
        if value not in ("", "null") and "," not in value:
            given[key] = value
    try:
        for key in ("hydra.run.dir", "hydra.sweep.dir"):
            if key in given and "${" not in given[key]:  # interpolated: known once composed
                require_creatable(given[key], key)
        if "resume" in given:
            require_saved_config(given["resume"])
            require_free(given["resume"])
        elif "hydra.run.dir" in given:
            require_free(given["hydra.run.dir"])
            refuse_existing_run(given["hydra.run.dir"], "hydra.run.dir")
        if "hydra.sweep.dir" in given and asks_for_sweep(argv):
            refuse_existing_sweep(given["hydra.sweep.dir"])
    except (FileNotFoundError, ValueError) as error:
        return str(error)
    return None
