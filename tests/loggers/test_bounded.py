"""A tracker behind a time bound: one that does not answer as it starts stops
the run in one line; one that stalls or fails later is dropped with one warning line and the
run goes on without it."""

from __future__ import annotations

import errno
import logging
import re
import threading

import pytest

from neurorun.common.errors import ConfigError
from neurorun.common.settings import load_section
from neurorun.loggers.base import Logger
from neurorun.loggers.bounded import Bounded, TrackerError, TrackerSettings

FIX = "check the server"


class Tracker(Logger):
    """Records its calls; ``stall`` names the call that waits until the test ends, ``fail``
    the one that raises a full disk's OSError."""

    def __init__(self, release: threading.Event, stall: str = "", fail: str = ""):
        self.release, self.stall, self.fail = release, stall, fail
        self.calls: list[str] = []
        self._act("build")

    def _act(self, call: str) -> None:
        self.calls.append(call)
        if call == self.stall:
            self.release.wait()  # a server that never answers
        if call == self.fail:
            raise OSError(errno.ENOSPC, "No space left on device")

    def start(self, config):
        self._act("start")

    def log(self, generation, status):
        self._act(f"log {generation}")

    def close(self, summary):
        self._act("close")


@pytest.fixture
def release():
    event = threading.Event()
    yield event
    event.set()  # the abandoned calls return


@pytest.mark.parametrize("stall", ["build", "start"])
def test_a_tracker_that_does_not_answer_as_it_starts_stops_the_run_in_one_line(release, stall):
    with pytest.raises(TrackerError) as raised:
        bounded = Bounded("mlflow", lambda: Tracker(release, stall=stall), timeout_s=0.2,
                          fix=FIX)
        bounded.start({})
    assert str(raised.value) == ("logger.mlflow did not answer within 0.2 s as it started. "
                                 "Fix: check the server, raise logger.mlflow.timeout_s, or set "
                                 "logger.mlflow.enabled=false.")


def test_an_error_as_it_starts_is_the_trackers_own(release):
    with pytest.raises(OSError, match="No space left"):
        Bounded("tensorboard", lambda: Tracker(release, fail="build"), timeout_s=5, fix=FIX)


@pytest.mark.parametrize(("stall", "fail", "said"), [
    ("log 2", "", "did not answer within 0.2 s as it logged generation 2"),
    ("", "log 2", "failed as it logged generation 2 (OSError: [Errno 28] No space left on "
                  "device)"),
    ("close", "", "did not answer within 0.2 s as it closed"),
])
def test_a_tracker_that_stalls_or_fails_later_is_dropped_with_one_line(release, caplog, stall,
                                                                       fail, said):
    trackers = []

    def build():
        trackers.append(Tracker(release, stall=stall, fail=fail))
        return trackers[-1]

    bounded = Bounded("mlflow", build, timeout_s=0.2, fix=FIX)
    bounded.start({})
    with caplog.at_level(logging.WARNING, logger="neurorun"):
        for generation in (1, 2, 3):
            bounded.log(generation, {"mean_eval": 1.0})
        bounded.close({})
    (tracker,) = trackers
    dropped_at = ["build", "start", "log 1", "log 2", "log 3", "close"].index(stall or fail)
    assert tracker.calls == ["build", "start", "log 1", "log 2", "log 3", "close"][:dropped_at + 1]
    assert [r.getMessage() for r in caplog.records] == [
        f"logger.mlflow {said}: the run goes on without it (metrics.csv holds every "
        "generation). Fix: check the server, or set logger.mlflow.enabled=false"]


# 1e10 passed and overflowed threading's wait (OverflowError)
@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "abc", True, None, 1e10,
                                 86400.5])
def test_a_time_bound_is_a_number_of_seconds_above_zero_and_at_most_a_day(bad):
    def timeout_of(section):
        return load_section(TrackerSettings, section, "logger.wandb").timeout_s

    with pytest.raises(ConfigError, match=rf"logger.wandb.timeout_s={re.escape(repr(bad))}: "
                                          r"expected a number of seconds > 0 and at most 86400 "
                                          r"\(a day\)\. Fix: logger.wandb.timeout_s=60$"):
        timeout_of({"timeout_s": bad})
    assert timeout_of({}) == 60 and timeout_of({"timeout_s": 2}) == 2
    assert timeout_of({"timeout_s": 86400}) == 86400
