"""What a compiling program says (tests/problems/test_jax_rollout.py runs the real ones): the
shape it compiles, how long it took last time (the record beside jax's cache), whether jax's
cache had it; and the watch that tells a running compile from a stuck one."""

import json
import logging
import time

import numpy as np
import pytest

pytestmark = pytest.mark.extras("jax")


@pytest.fixture
def cache(tmp_path):
    """jax's persistent cache in a folder of this test's, on, writing every program (jax keeps
    the cache it opened first for the process: reset before and after)."""
    import jax
    from jax._src.compilation_cache import reset_cache

    settings = {"jax_compilation_cache_dir": str(tmp_path),
                "jax_enable_compilation_cache": True,  # a test before may have turned it off
                "jax_persistent_cache_min_compile_time_secs": 0.0,
                "jax_persistent_cache_min_entry_size_bytes": 0}
    before = {name: getattr(jax.config, name) for name in settings}
    for name, value in settings.items():
        jax.config.update(name, value)
    reset_cache()
    yield tmp_path
    for name, value in before.items():
        jax.config.update(name, value)
    reset_cache()


def _program(label, scale):
    import jax
    import jax.numpy as jnp

    from neurorun.problems.jax.compiling import Program

    return Program(jax.jit(lambda x: jnp.sin(x) * scale), label, f"the test program {scale}")


def test_a_program_says_what_it_compiles_and_records_how_long_it_took(cache, caplog):

    from neurorun.problems.jax.compiling import RECORD

    with caplog.at_level(logging.INFO, logger="neurorun"):
        program = _program("label A", 3.0)
        assert float(program(np.float32(0.5))) == pytest.approx(3.0 * 0.479425538604203)
        assert float(program(np.float32(0.0))) == 0.0  # compiled once
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "compiling the test program 3.0, once per shape..."
    assert said[1].startswith("compiled the test program 3.0 in ")
    assert len(said) == 2
    assert caplog.records[0].activity == "compiling the test program 3.0"
    assert caplog.records[1].activity is None
    record = json.loads((cache / RECORD).read_text())
    assert list(record) == ["label A"]
    assert record["label A"]["seconds"] == pytest.approx(program.seconds, abs=0.06)


def test_a_recorded_program_says_its_last_time_and_a_cached_one_that_it_was_loaded(cache,
                                                                                 caplog):
    import jax

    from neurorun.problems.jax.compiling import RECORD

    _program("label B", 2.0)(np.float32(1.0))  # compiled and written to jax's cache
    jax.clear_caches()  # this process forgets it: the next one is read from the cache
    (cache / RECORD).write_text(json.dumps({"label B": {"seconds": 42.0, "date": "x"}}))
    caplog.clear()  # the first compile's lines, where an earlier test left neurorun at INFO
    with caplog.at_level(logging.INFO, logger="neurorun"):
        assert float(_program("label B", 2.0)(np.float32(1.0))) == pytest.approx(
            2.0 * 0.8414709848078965)
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "compiling the test program 2.0 (it took 42 s last time), once per shape..."
    assert said[1].startswith("loaded the test program 2.0 from jax's compilation cache in ")
    assert said[1].endswith(" s)") and "(compiling it took " in said[1]


@pytest.fixture
def unsaid(monkeypatch):
    """The record's warning not yet said in this process (it is said once)."""
    from neurorun.problems.jax import compiling

    monkeypatch.setattr(compiling, "_SAID", set())


def _nested(path):
    path.write_text("[" * 200_000 + "]" * 200_000)


def _too_large(path):
    from neurorun.problems.jax.compiling import RECORD_BYTES

    entry = {"seconds": 1.0, "date": "2026-01-01T00:00:00"}
    path.write_text(json.dumps({f"label {i}": entry for i in range(RECORD_BYTES // 40)}))


@pytest.mark.parametrize("make, why", [
    (lambda path: path.write_text("[not, json"), "Expecting value"),
    (lambda path: path.write_text("[1, 2]"), "not a JSON object"),
    (_nested, "maximum recursion depth"),
    (_too_large, "is larger than 1048576 bytes"),
])
def test_a_record_neurorun_cannot_read_is_said_once_ignored_and_replaced(cache, caplog, unsaid,
                                                                          make, why):
    from neurorun.problems.jax.compiling import RECORD

    make(cache / RECORD)
    with caplog.at_level(logging.INFO, logger="neurorun"):
        _program("label C", 5.0)(np.float32(1.0))
        _program("label D", 6.0)(np.float32(1.0))
    said = [r.getMessage() for r in caplog.records]
    assert said[0].startswith(f"the record of compile times {cache / RECORD} is not used (")
    assert why in said[0] and said[0].endswith("Fix: remove it (neurorun writes it anew)")
    assert said[1] == "compiling the test program 5.0, once per shape..."
    assert not any("is not used" in line for line in said[1:])
    assert list(json.loads((cache / RECORD).read_text())) == ["label C", "label D"]


@pytest.mark.parametrize("kind", ["fifo", "device link"])
def test_a_record_that_is_not_a_regular_file_is_neither_read_nor_replaced(cache, caplog, unsaid,
                                                                          kind):
    """A FIFO would block the read for good and /dev/zero would fill the memory: the program
    compiles at once, says so, and the record is left as it is."""
    import os
    import threading

    from neurorun.problems.jax.compiling import RECORD

    record = cache / RECORD
    if kind == "fifo":
        os.mkfifo(record)
    else:
        record.symlink_to("/dev/zero")
    called = threading.Thread(target=lambda: _program("label F", 7.0)(np.float32(1.0)),
                              daemon=True)
    with caplog.at_level(logging.INFO, logger="neurorun"):
        called.start()
        called.join(60)
    assert not called.is_alive(), "the compile waited on the record"
    said = [r.getMessage() for r in caplog.records]
    assert "not a regular file" in said[0] and said[1].startswith("compiling the test program")
    assert record.is_fifo() if kind == "fifo" else record.is_symlink()


def test_the_watch_tells_a_busy_process_from_a_stuck_one(caplog):
    from neurorun.problems.jax.compiling import wait_for_compiles, watched

    wait_for_compiles()  # the watch reads the process's CPU time: no compile of another test
    with caplog.at_level(logging.INFO, logger="neurorun"):
        with watched("sleeping", 0.3, heartbeat=""):
            time.sleep(0.7)  # no CPU: stuck
        with watched("spinning", 0.3, heartbeat=" (it took 9 s last time)"):
            end = time.perf_counter() + 0.7
            while time.perf_counter() < end:  # CPU in use: going
                pass
    sleeping = [r for r in caplog.records if r.getMessage().startswith("sleeping")]
    spinning = [r for r in caplog.records if r.getMessage().startswith("spinning")]
    assert sleeping and all(r.levelno == logging.WARNING and "looks stuck" in r.getMessage()
                            for r in sleeping)
    assert spinning and all(r.levelno == logging.INFO for r in spinning)
    assert spinning[0].getMessage().endswith("s so far (it took 9 s last time)")


def test_a_corrupt_cache_entry_is_said_once_and_the_program_compiles(cache, caplog,
                                                                    monkeypatch):
    import jax

    from neurorun.loggers.console import show_library_messages
    from neurorun.problems.jax import compiling

    monkeypatch.setattr(compiling, "_SAID", set())  # said once per process: this test's own
    _program("label D", 7.0)(np.float32(1.0))
    entries = list(cache.glob("*-cache"))
    assert entries
    for entry in entries:
        entry.write_bytes(b"not an executable")
    jax.clear_caches()
    hide = show_library_messages(quiet=False)  # as a run routes library warnings
    try:
        with caplog.at_level(logging.INFO, logger="neurorun"):
            assert float(_program("label D", 7.0)(np.float32(1.0))) == pytest.approx(
                7.0 * 0.8414709848078965)
    finally:
        hide()
    said = [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.name.startswith("neurorun")]
    assert len(said) == 1 and said[0].startswith(
        "jax's compilation cache: an error reading an entry (")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("neurorun")][
        -1].startswith("compiled the test program 7.0 in ")


@pytest.mark.parametrize("make", ["shared", "under a file", "a file"])
def test_a_cache_folder_others_may_write_or_none_can_make_is_not_used_and_said_once(
        tmp_path, caplog, make):
    import jax

    from neurorun.envs.jax_env import use_compilation_cache

    folder = tmp_path / "cache"
    if make == "shared":
        folder.mkdir()
        folder.chmod(0o777)
        why = "another user may write to it"
    elif make == "under a file":
        (tmp_path / "file").write_text("")
        folder = tmp_path / "file" / "cache"
        why = "it cannot be made"
    else:
        folder.write_text("")
        why = "it is not a folder"
    before = (jax.config.jax_compilation_cache_dir, jax.config.jax_enable_compilation_cache)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    try:
        with caplog.at_level(logging.INFO, logger="neurorun"):
            use_compilation_cache()
            use_compilation_cache()
        assert jax.config.jax_enable_compilation_cache is False
    finally:
        jax.config.update("jax_compilation_cache_dir", before[0])
        jax.config.update("jax_enable_compilation_cache", before[1])
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"jax's compilation cache {folder} is not used: {why}")
    assert "every program compiles anew in each run. Fix: " in said


def test_a_program_compiled_ahead_on_a_thread_serves_the_call_without_compiling_again(
        cache, caplog):
    import jax

    program = _program("label E", 4.0)
    with caplog.at_level(logging.INFO, logger="neurorun"):
        program.compile_ahead(jax.ShapeDtypeStruct((), np.float32))
        assert float(program(np.float32(0.5))) == pytest.approx(4.0 * 0.479425538604203)
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "compiling the test program 4.0, once per shape..."
    assert said[1].startswith("compiled the test program 4.0 in ") and len(said) == 2
    assert program.ready and program._ahead is None


def test_a_run_writes_nothing_into_a_cache_folder_it_refuses(tmp_path):
    """Brax and Playground compute with jax as they load, which set
    jax's cache up in the refused folder before the check (its programs were then loaded
    from it): the check runs first."""
    import os
    import subprocess
    import sys

    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    done = subprocess.run(
        [sys.executable, "-m", "neurorun.cli.app", "env=brax::inverted_pendulum", "debug=default",
         "generations=1", f"hydra.run.dir={tmp_path / 'run'}", "logger.console.quiet=true"],
        env={**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache)}, capture_output=True,
        text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"jax's compilation cache {cache} is not used" in done.stderr
    assert list(cache.iterdir()) == []


def test_a_compiled_program_still_traces_for_the_shapes_of_its_results(cache):
    """The drain's argument shapes are traced through the first program, which an earlier
    evaluation may have compiled: a compiled program is still a function jax can trace."""
    import jax

    program = _program(None, 3.0)
    assert float(program(np.float32(0.5))) == pytest.approx(3.0 * 0.479425538604203)
    shape = jax.eval_shape(program.function, jax.ShapeDtypeStruct((2,), np.float32))
    assert (shape.shape, shape.dtype) == ((2,), np.float32)
    assert float(program(np.float32(0.5))) == pytest.approx(3.0 * 0.479425538604203)


def test_a_record_with_a_number_no_float_holds_is_no_failure(cache, unsaid):
    from neurorun.problems.jax.compiling import RECORD

    (cache / RECORD).write_text('{"label G": {"seconds": 1' + "0" * 400 + "}}")
    assert float(_program("label G", 2.0)(np.float32(1.0))) == pytest.approx(
        2.0 * 0.8414709848078965)


def test_a_program_compiled_ahead_is_waited_for(cache):
    import jax

    from neurorun.problems.jax.compiling import compiles_running, wait_for_compiles

    program = _program("label H", 3.0)
    program.compile_ahead(jax.ShapeDtypeStruct((), np.float32))
    wait_for_compiles()
    assert program.ready and not compiles_running()
