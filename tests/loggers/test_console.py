"""The console: plain lines for logs, quiet mode, rich live view, progress on the stop condition."""

import io

import pytest

from neurorun.loggers import ConsoleLogger
from neurorun.loggers.console import config_tree, format_header, format_row
from neurorun.loop.status import StopLimits

STATUS = {"generation": 3, "mean_eval": 12.345, "median_eval": 10.0, "pop_best_eval": 40.0,
          "center_eval": None, "best_sample_eval": 41.0, "popsize": 20, "stdev_mean": 0.5,
          "total_interaction_count": 12345, "steps_per_s": 9876.4, "elapsed_s": 2.25}


def test_row_formats_each_column():
    row = format_row(STATUS).split()
    assert row == ["3", "12.35", "10.00", "40.00", "-", "41.00", "20", "0.5000", "12,345",
                   "9,876", "2.2"]
    assert len(format_row(STATUS)) == len(format_header())  # columns line up


@pytest.mark.parametrize(("limits", "status", "expected"), [
    (StopLimits(generations=10), {"generation": 3}, ("generations", 0.3)),
    (StopLimits(generations=10, max_interactions=1000),
     {"generation": 3, "total_interaction_count": 500}, ("max_interactions", 0.5)),
    (StopLimits(generations=100, max_time=10.0), {"generation": 1, "elapsed_s": 8.0},
     ("max_time", 0.8)),
    (StopLimits(max_time=10.0), {"elapsed_s": 20.0}, ("max_time", 1.0)),
])
def test_progress_follows_the_condition_closest_to_stopping(limits, status, expected):
    name, fraction = limits.progress(status)
    assert name == expected[0] and fraction == pytest.approx(expected[1])


def test_plain_mode_is_automatic_off_a_terminal_and_prints_one_line_per_generation():
    stream = io.StringIO()
    console = ConsoleLogger(StopLimits(generations=5), stream=stream)
    assert console.plain
    console.start({"algo": {"name": "pgpe", "popsize": 20}, "seed": 0})
    console.begin()
    console.log(3, STATUS)
    console.close({"stop_reason": "generations: 5 of 5 done"})
    lines = stream.getvalue().splitlines()
    assert lines[0] == "config" and any("popsize: 20" in line for line in lines)
    assert format_header() in lines
    assert format_row(STATUS) in lines
    assert lines[-1] == "stopped: generations: 5 of 5 done"


def test_quiet_mode_prints_only_why_the_run_stopped():
    stream = io.StringIO()
    console = ConsoleLogger(StopLimits(generations=5), quiet=True, stream=stream)
    console.start({"seed": 0})
    console.begin()
    console.log(1, STATUS)
    console.close({"stop_reason": "generations: 1 of 1 done"})
    assert stream.getvalue() == "stopped: generations: 1 of 1 done\n"  # a cluster job's log too


def test_live_view_prints_rows_above_the_progress_bar():
    stream = io.StringIO()
    console = ConsoleLogger(StopLimits(generations=5, target_score=475), plain=False,
                            show_config=False, stream=stream)
    console.start({"seed": 0})
    console.begin()
    console.log(3, {**STATUS, "center_eval": 100.0})
    assert console.progress.tasks[0].completed == pytest.approx(3 / 5)
    assert "center 100.0 / target 475" in console.progress.tasks[0].description
    console.close({})
    assert format_row({**STATUS, "center_eval": 100.0}) in stream.getvalue()


def test_the_progress_bar_shows_a_compile_while_it_runs_then_the_generations_again(caplog):
    """neurorun's records that carry an ``activity`` (a program compiling: what; done: None)
    take the bar's description while it runs, from the start of the run on."""
    import logging

    caplog.set_level(logging.INFO, logger="neurorun")  # as a run sets it
    console = ConsoleLogger(StopLimits(generations=5), plain=False, show_config=False,
                            stream=io.StringIO())
    console.start({})
    console.begin()
    said = logging.getLogger("neurorun.problems.jax.compiling")
    said.info("compiling ...", extra={"activity": "compiling the queue program of X"})
    assert console.progress.tasks[0].description == "compiling the queue program of X"
    said.info("compiled", extra={"activity": None})
    assert console.progress.tasks[0].description == "starting"
    console.log(1, STATUS)
    generations = console.progress.tasks[0].description
    said.info("compiling ...", extra={"activity": "compiling the drain program of X"})
    said.info("compiled", extra={"activity": None})
    assert console.progress.tasks[0].description == generations
    console.close({})
    said.info("compiling ...", extra={"activity": "after the run"})  # no bar: nothing to show
    assert console.activity not in logging.getLogger("neurorun").handlers


def test_config_tree_has_one_branch_per_group():
    tree = config_tree({"algo": {"name": "pgpe", "stdev_init": None}, "seed": 0})
    assert [str(child.label) for child in tree.children] == ["[bold]algo[/bold]",
                                                           "seed: [cyan]0[/cyan]"]
    assert [str(child.label) for child in tree.children[0].children] == [
        "name: [cyan]pgpe[/cyan]", "stdev_init: [cyan]null[/cyan]"]


def test_library_messages_print_while_shown_and_leave_the_users_level_alone(capsys):
    import logging

    from neurorun.loggers.console import show_library_messages

    library = logging.getLogger("neurorun")
    library.setLevel(logging.ERROR)  # the user's choice
    try:
        hide = show_library_messages(quiet=False)
        logging.getLogger("neurorun.loop.runner").info("picked envpool")
        hide()
        logging.getLogger("neurorun.loop.runner").warning("not shown: handler gone")
        assert capsys.readouterr().err == "neurorun: picked envpool\n"
        assert library.level == logging.ERROR
    finally:
        library.setLevel(logging.NOTSET)


def test_warnings_of_installed_packages_go_to_the_log_and_neurorun_s_print(capsys, caplog):
    """While a run lives, a warning raised in an installed package's file
    (brax's) is a log record only; one raised in neurorun's own code prints one line."""
    import sysconfig
    import warnings
    from pathlib import Path

    import neurorun
    from neurorun.loggers.console import show_library_messages

    installed = str(Path(sysconfig.get_path("purelib")) / "brax" / "io" / "mjcf.py")
    own = str(Path(neurorun.__file__).parent / "envs" / "gym_env.py")
    hide = show_library_messages(quiet=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn_explicit("not actively being maintained", UserWarning, installed, 480)
            warnings.warn_explicit("MuJoCo: settotalmass", RuntimeWarning, own, 64)
    finally:
        hide()
    assert capsys.readouterr().err == "neurorun: RuntimeWarning: MuJoCo: settotalmass\n"
    (record,) = [r for r in caplog.records if r.name == "py.warnings"]
    assert "UserWarning: not actively being maintained" in record.getMessage()
