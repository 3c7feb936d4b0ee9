"""The errors every part may raise about a run's config or folder, and the exit status the
`neurorun` command gives them."""

CONFIG_ERROR_EXIT = 2  # the exit status of every config error of the `neurorun` command


class ConfigError(ValueError):
    """An invalid config: the message names the key, the value and the fix."""


class FolderInUseError(ConfigError):
    """The run folder belongs to another running process (its files are not ours to touch)."""
