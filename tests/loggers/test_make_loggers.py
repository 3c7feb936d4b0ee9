"""make_loggers builds what the LOGGERS table and the config's logger sections ask for: a new
logger is its class plus one row."""

from dataclasses import dataclass
from importlib import resources

import yaml

from neurorun.common.settings import load_section, setting
from neurorun.config.schema import logger_section
from neurorun.loggers import LOGGERS, ConsoleLogger, Logger, MetricsFiles, make_loggers
from neurorun.loop.status import StopLimits

LIMITS = StopLimits(generations=1)


def typed(settings):
    """``logger.*`` as a run's config hands it over."""
    return load_section(logger_section(), settings, "logger")


@dataclass(frozen=True)
class RecorderSettings:
    enabled: bool = False
    every: int = setting(1, ge=1)


class Recorder(Logger):
    """A logger as a user would add one: its section's settings and the run it logs."""

    Settings = RecorderSettings

    def __init__(self, section, context):
        self.section, self.context = section, context

    @classmethod
    def from_settings(cls, section, context):
        return cls(section, context)

    def log(self, generation, status):
        pass


def test_with_every_tracker_off_the_console_and_the_metric_files_log(tmp_path):
    settings = {"console": {"quiet": True}, "tensorboard": {"enabled": False}}
    group = make_loggers(typed(settings), tmp_path, LIMITS)
    assert [type(logger) for logger in group.loggers] == [ConsoleLogger, MetricsFiles]
    assert group.loggers[0].quiet
    assert (tmp_path / "metrics.csv").is_file()


def test_a_new_row_is_built_from_its_section_when_enabled(tmp_path, monkeypatch):
    monkeypatch.setitem(LOGGERS, "recorder", Recorder)
    settings = {"console": {"quiet": True}, "recorder": {"enabled": True, "every": 3}}
    *_, built = make_loggers(typed(settings), tmp_path, LIMITS).loggers
    assert isinstance(built, Recorder) and built.section == RecorderSettings(True, 3)
    assert (built.context.run_dir, built.context.limits, built.context.offsets) == (
        tmp_path, LIMITS, None)
    settings["recorder"]["enabled"] = False
    assert not any(isinstance(logger, Recorder)
                   for logger in make_loggers(typed(settings), tmp_path, LIMITS).loggers)


def test_every_config_section_is_a_row_and_every_optional_row_has_a_switch():
    """A mapping of logger/default.yaml is a logger's section; a plain value (video_every) is
    a setting of the run's videos, which every logger receives."""
    text = resources.files("neurorun.conf").joinpath("logger/default.yaml").read_text()
    sections = {name: value for name, value in yaml.safe_load(text).items()
                if isinstance(value, dict)}
    assert set(sections) <= set(LOGGERS)
    for name, kind in LOGGERS.items():
        if not kind.always_on:
            assert sections[name]["enabled"] is False, name  # trackers are off by default
