"""Reading the YAML a run folder holds (``.hydra/config.yaml``, ``overrides.yaml``) as data.

A run folder may come from anyone, and YAML is more than data: anchors and aliases make a 1 KB
file expand to 10**9 nodes, and a config's ``${oc.env:NAME}`` resolves to this process's
environment variables (which a message or a metric could then print). neurorun writes neither
aliases nor (unless a user typed one) an environment read into a run folder, so its files are
read here with bounds, before OmegaConf builds or resolves anything:

- :func:`read_yaml` refuses what is not a regular file (``common.files``, which the tools
  read each file of a run with: a FIFO would block the reader for good), a file over
  ``MAX_BYTES``, text that is not UTF-8, aliases, nesting deeper than ``MAX_DEPTH`` and
  control characters in keys or values, which messages would print to the terminal (checked
  on the parser's events, which expand nothing);
- :func:`env_reads` lists the keys whose value reads the environment: ``resume=`` refuses them
  unless the command line says ``trust_code=true`` (``resume.load_run_config``), and the
  tools blank them (:func:`without_env_reads`) so that nothing they resolve reaches it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from neurorun.common import files
from neurorun.common.errors import one_line

MAX_BYTES = 4 << 20  # a saved config is a few KB
MAX_DEPTH = 64  # neurorun's configs nest 4 levels; env_config and network_args a few more
# a resolver that reads this process's environment (oc.env; env: its old name), nested or not
ENV_READ = re.compile(r"\$\{\s*(?:oc\.env|env)\s*:")
# what a value may not hold: control characters (ESC starts the terminal's escape sequences),
# tabs and newlines aside (a network string may span lines)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FIX = "Fix: restore it from an intact copy of the run, or start a new run."


class SavedFileError(ValueError):
    """A YAML file of a run folder that neurorun does not read (one line naming it)."""


class NotRegularFileError(SavedFileError, files.NotRegularFileError):
    """A saved file that is a FIFO, socket, device or folder (one line naming it)."""


def read_yaml(path: str | Path) -> Any:
    """The DictConfig or ListConfig in the YAML file ``path``, or None when it holds nothing.

    Raises:
        SavedFileError: not a regular file, too large, not UTF-8, not YAML, aliases, or
            nested too deeply.
        OSError: it cannot be opened (missing, no permission).
    """
    path = Path(path)
    try:
        data = files.read_bounded(path, MAX_BYTES)
    except files.NotRegularFileError as error:
        raise NotRegularFileError(f"{error}; a saved config is a file neurorun wrote. "
                                  f"{FIX}") from None
    except files.FileTooLargeError as error:
        raise SavedFileError(f"{error}; a saved config is a few KB. {FIX}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SavedFileError(f"{str(path)!r} is not UTF-8 text (byte {error.start}). "
                             f"{FIX}") from None
    top = _top_node(text, path)
    if top is None or isinstance(top, yaml.ScalarEvent) and top.value in ("", "~", "null"):
        return None
    if isinstance(top, yaml.ScalarEvent):
        raise SavedFileError(f"{str(path)!r} holds the single value {top.value[:60]!r}, "
                             f"where a mapping or a list belongs. {FIX}")
    try:
        return OmegaConf.create(text)
    except Exception as error:  # yaml's ConstructorError (tags, duplicate keys), OmegaConf's own
        raise SavedFileError(f"{str(path)!r} is not a config neurorun reads "
                             f"({one_line(error, with_type=True)}). {FIX}") from None


def _top_node(text: str, path: Path) -> yaml.NodeEvent | None:
    """The event of the document's top node (None: an empty document), once every event was
    checked for aliases and depth."""
    top, depth = None, 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise SavedFileError(
                    f"{str(path)!r} uses a YAML alias ({event.anchor!r}, line "
                    f"{event.start_mark.line + 1}); neurorun never writes them, and aliases can "
                    f"expand a small file past any memory. {FIX}")
            if isinstance(event, yaml.ScalarEvent) and CONTROL.search(event.value):
                raise SavedFileError(
                    f"{str(path)!r} holds a terminal control character "
                    f"({CONTROL.search(event.value).group()!r}, line "
                    f"{event.start_mark.line + 1}); neurorun never writes one, and printed it "
                    f"could rewrite what the terminal shows. {FIX}")
            if isinstance(event, yaml.NodeEvent) and top is None:
                top = event
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise SavedFileError(f"{str(path)!r} nests deeper than {MAX_DEPTH} levels "
                                         f"(line {event.start_mark.line + 1}). {FIX}")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as error:
        raise SavedFileError(f"{str(path)!r} is not valid YAML ({one_line(error)}). {FIX}") \
            from None
    return top


def read_config(path: str | Path) -> DictConfig:
    """A run's saved config (a mapping), read with :func:`read_yaml`'s bounds.

    Raises:
        SavedFileError: as read_yaml, or the file is empty or holds no mapping.
    """
    config = read_yaml(path)
    if config is None:
        raise SavedFileError(f"{str(path)!r} is empty; expected the run's saved config (a "
                             f"mapping of its settings). {FIX}")
    if not isinstance(config, DictConfig):
        raise SavedFileError(f"{str(path)!r} is not a mapping (it holds a list); expected "
                             f"the run's saved config. {FIX}")
    return config


def env_reads(config: Any) -> dict[str, str]:
    """The keys of ``config`` (dotted) whose value reads the environment, with that value."""
    found: dict[str, str] = {}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, f"{key}.{name}" if key else str(name))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{key}[{index}]")
        elif isinstance(value, str) and ENV_READ.search(value):
            found[key] = value

    walk(OmegaConf.to_container(config, resolve=False), "")
    return found


def without_env_reads(config: DictConfig | ListConfig) -> DictConfig | ListConfig:
    """A copy of ``config`` whose values that read the environment are missing (``???``): a
    key that needs one fails to resolve instead of reading the environment."""
    def blank(value: Any) -> Any:
        if isinstance(value, dict):
            return {name: blank(item) for name, item in value.items()}
        if isinstance(value, list):
            return [blank(item) for item in value]
        return "???" if isinstance(value, str) and ENV_READ.search(value) else value

    return OmegaConf.create(blank(OmegaConf.to_container(config, resolve=False)))


def refuse_env_reads(reads: dict[str, str], source: str | Path, opt_in: str) -> None:
    """SavedFileError (one line) when ``reads`` (key -> value, read from the file ``source``)
    is not empty; ``opt_in`` says how the user trusts the file."""
    if reads:
        listed = ", ".join(f"{key}={value!r}" for key, value in reads.items())
        raise SavedFileError(
            f"{str(source)!r} reads this process's environment variables ({listed}), and a "
            f"file from elsewhere could print them: not resolved. Fix: give "
            f"{' and '.join(f'{key}=...' for key in reads)} on the command line, or if you "
            f"trust where the file came from, {opt_in}")
