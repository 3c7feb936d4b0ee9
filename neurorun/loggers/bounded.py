"""A tracker behind a time bound: its calls run on a thread of its own, each within
``logger.<name>.timeout_s``.

A tracking server that accepts connections and never answers held an MLflow run silent for
minutes (MLflow's and W&B's own timeouts and retries, minutes of them, are for a server that
answers slowly or went away), and a full disk made TensorBoard's writer fail at every flush.
Before the run's first generation, a tracker that fails or does not answer in time stops the run
with one line naming the setting and the fix, as any tracker that cannot start. After it, such a
tracker is dropped with one warning line and the run goes on without it: its metrics.csv and
metrics.jsonl keep every generation, and the tracker's own files (or server) what it had logged.
A call left running on its thread is abandoned there (a daemon thread, ended with the process).
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neurorun.common.errors import one_line
from neurorun.common.settings import setting
from neurorun.common.values import is_number
from neurorun.loggers.base import Logger

log = logging.getLogger(__name__)

TIMEOUT_S = 60.0  # logger.<name>.timeout_s where the section sets none
# its largest: a call that takes a day has hung; threading's waits overflow past ~292 years
MAX_TIMEOUT_S = 86400.0


class TrackerError(ValueError):
    """A tracker could not start: names the setting and the fix."""


class NoAnswerError(TimeoutError):
    """A tracker's call did not end within its time bound."""


def check_timeout(value: Any) -> None:
    """``timeout_s``: a number of seconds > 0, at most MAX_TIMEOUT_S (ValueError otherwise)."""
    if not (is_number(value) and math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
        raise ValueError(f"timeout_s={value!r}: expected a number of seconds > 0 and at most "
                         f"{MAX_TIMEOUT_S:g} (a day). Fix: timeout_s={TIMEOUT_S:g}")


@dataclass(frozen=True)
class TrackerSettings:
    """``logger.<tracker>.*`` that every tracker has."""

    enabled: bool = False
    timeout_s: Any = setting(TIMEOUT_S, rule=check_timeout)  # a number: the rule says which


class Bounded(Logger):
    """The tracker ``build()`` makes, built, started, logged to and closed on its own thread,
    each call within ``timeout_s`` (see the module docstring); ``fix`` says what to check when
    it does not answer."""

    def __init__(self, name: str, build: Callable[[], Logger], *, timeout_s: float, fix: str):
        self.name, self.timeout_s, self.fix = name, timeout_s, fix
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=f"neurorun-{name}", daemon=True).start()
        self.tracker: Logger | None = self._starting(build)

    def start(self, config: Mapping[str, Any]) -> None:
        tracker = self.tracker
        if tracker is not None:
            self._starting(lambda: tracker.start(config))

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        self._running(f"logged generation {generation}", lambda t: t.log(generation, status))

    def video(self, generation: int, path: Path) -> None:
        self._running(f"took the video of generation {generation}",
                      lambda t: t.video(generation, path))

    def sync(self) -> None:
        self._running("synced", lambda t: t.sync())

    def close(self, summary: Mapping[str, Any]) -> None:
        self._running("closed", lambda t: t.close(summary))
        self._drop()

    def _serve(self) -> None:
        while True:
            call, answer, done = self._calls.get()
            if call is None:
                return
            try:
                answer.append((True, call()))
            except BaseException as error:  # raised on the caller's thread
                answer.append((False, error))
            done.set()

    def _call(self, call: Callable[[], Any]) -> Any:
        """``call()``'s value on the tracker's thread; NoAnswerError past ``timeout_s``."""
        answer: list[tuple[bool, Any]] = []
        done = threading.Event()
        self._calls.put((call, answer, done))
        if not done.wait(self.timeout_s):
            raise NoAnswerError(f"no answer within {self.timeout_s:g} s")
        ok, value = answer[0]
        if not ok:
            raise value
        return value

    def _starting(self, call: Callable[[], Any]) -> Any:
        try:
            return self._call(call)
        except NoAnswerError:
            self._drop()
            raise TrackerError(f"logger.{self.name} did not answer within {self.timeout_s:g} s "
                               f"as it started. Fix: {self.fix}, raise logger.{self.name}."
                               f"timeout_s, or set logger.{self.name}.enabled=false.") from None
        except BaseException:
            self._drop()
            raise

    def _running(self, what: str, call: Callable[[Logger], Any]) -> None:
        tracker = self.tracker
        if tracker is None:  # dropped
            return
        try:
            self._call(lambda: call(tracker))
        except Exception as error:
            self._drop()
            said = (f"did not answer within {self.timeout_s:g} s as it {what}"
                    if isinstance(error, NoAnswerError)
                    else f"failed as it {what} ({one_line(error, with_type=True)})")
            log.warning("logger.%s %s: the run goes on without it (metrics.csv holds every "
                        "generation). Fix: %s, or set logger.%s.enabled=false", self.name, said,
                        self.fix, self.name)

    def _drop(self) -> None:
        """No more calls: the thread ends after the one it runs (if it ever returns)."""
        self.tracker = None
        self._calls.put((None, None, None))
