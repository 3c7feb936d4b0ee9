"""The command line as given, before Hydra reads it: the overrides that Hydra's grammar or
struct mode would misread are rewritten (a network string's parentheses, a new key under an
open mapping), and a resume's overrides are held back for the run's own config."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neurorun.config.schema import OPEN_MAPPINGS, in_open_mapping

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
    new), or the mapping given whole (`env.env_config={g: 5.0}`), as Hydra's force-add:
    `env.env_config.backend=spring` -> `++env.env_config.backend=spring`. Hydra's struct mode
    would refuse a new key without `+` (a whole mapping is merged into the config's, as
    Hydra merges one); a key spelt with a `+`, `++` or `~` is left as it is."""
    opened = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        whole = key in OPEN_MAPPINGS and value.startswith("{")
        if sep and (whole or in_open_mapping(key)):
            arg = f"++{arg}"
        opened.append(arg)
    return opened


def override_key(override: str) -> str:
    """`+algo.popsize=6` -> "algo.popsize"."""
    return override.lstrip("+~").split("=", 1)[0]


def asks_for_sweep(argv: Sequence[str]) -> bool:
    """Whether the command line asks for a sweep (Hydra's multirun): ``-m``, or an
    ``hparams_search`` preset (each sets ``hydra.mode: MULTIRUN``)."""
    searched = any(override_key(arg) == "hparams_search"
                   and arg.partition("=")[2] not in ("", "null") for arg in argv)
    return searched or bool({"-m", "--multirun", "hydra.mode=MULTIRUN"} & set(argv))


# Hydra's flags that take a value
VALUED_FLAGS = ("--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                "--config-dir", "-cd", "--experimental-rerun")


def shown_config(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """``(the part --cfg/-c asks to print, or None; the overrides of argv)``."""
    shown, overrides, args = None, [], iter(argv)
    for arg in args:
        flag, given, value = arg.partition("=")
        if flag in ("--cfg", "-c"):
            shown = value or next(args, "")
        elif flag in VALUED_FLAGS and not given:
            next(args, None)  # the flag's value, not an override
        elif not arg.startswith("-"):
            overrides.append(arg)
    return shown, overrides


def held_for_resume(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(what Hydra reads, the overrides held back)``: for a single run's `resume=<folder>`,
    the run's overrides are held back from Hydra, which would check them against the packaged
    defaults (an option of the run's algo=cem that algo=pgpe lacks was refused), and apply to
    the run's own saved config (``resume.load_run_config``). Hydra keeps resume=, the hydra
    keys, the flags, and what it will say it cannot parse (or is a sweep); elsewhere it gets
    ``argv`` whole."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    if asks_for_sweep(argv) or given_values(argv).get("resume") in (None, ""):
        return list(argv), []
    parser = OverridesParser.create()
    kept, held = [], []
    for arg in argv:
        try:
            override = None if arg.startswith("-") else parser.parse_override(arg)
        except HydraException:
            override = None
        run_key = override is not None and not override.is_sweep_override() and \
            override.key_or_group != "resume" and not override.key_or_group.startswith("hydra")
        (held if run_key else kept).append(arg)
    return kept, held


def folder_interpolations(argv: Sequence[str]) -> list[str]:
    """The overrides that give a key the run folder is named after (FOLDER_KEYS) an
    interpolation (``${...}``): Hydra resolves them to name the folder."""
    return [arg for arg in argv if "${" in arg and override_key(arg) in FOLDER_KEYS]


def given_values(argv: Sequence[str]) -> dict[str, Any]:
    """``key -> value`` of the overrides as Hydra reads them (its quotes and escapes
    undone); a sweep (`a,b`) and what Hydra cannot parse (it says why) are left out."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    given = {}
    for arg in argv:
        try:
            override = parser.parse_override(arg)
        except HydraException:
            continue
        if not override.is_sweep_override() and not override.is_delete():
            given[override.key_or_group] = override.value()
    return given
