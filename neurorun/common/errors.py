"""The errors every part may raise about a run's config or folder, the exit status the
`neurorun` command gives them, and how any error is said inside a one-line message."""

CONFIG_ERROR_EXIT = 2  # the exit status of every config error of the `neurorun` command


class ConfigError(ValueError):
    """An invalid config: the message names the key, the value and the fix."""


class FolderInUseError(ConfigError):
    """The run folder belongs to another running process (its files are not ours to touch)."""


def one_line(error: BaseException | str, *, limit: int | None = 300, with_type: bool = False,
             first_line: bool = False) -> str:
    """An error's message as one line of a message that names it: its lines joined and spaces
    collapsed, at most ``limit`` characters (cut with ``...``; None where the whole message
    matters, one neurorun wrote with its fix at the end).

    Args:
        error: the error, or a message already taken from one (a log record's).
        limit: the longest line returned.
        with_type: ``TypeName: message`` (an error's type says as much as its text).
        first_line: the first line only, for errors whose next lines are context a message
            already says or cannot use (OmegaConf's key and types, torch's C++ frames).

    An error that says nothing is its type's name.
    """
    text = str(error).strip()
    text = " ".join((text.partition("\n")[0] if first_line else text).split())
    name = "" if isinstance(error, str) else type(error).__name__
    if not text:
        text = name
    elif with_type and name:
        text = f"{name}: {text}"
    if limit is not None and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
