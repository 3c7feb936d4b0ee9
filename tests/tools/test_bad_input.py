"""Bad input: one line on stderr, exit status 2, existing outputs left as they were."""

from __future__ import annotations

import errno
import io
import json
import os
import pickle
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from neurorun.tools import compare, evaluate, plot
from neurorun.tools.common import ToolError, write_output

from .helpers import PLOT_TOOL, TOOLS, fails_with, save_checkpoint


def old_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(b"old")
    return path


@pytest.mark.parametrize("tool", [PLOT_TOOL, "compare", "eval", "render"])
def test_folder_without_metrics_or_checkpoints(tool, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = old_file(tmp_path, "out.gif" if tool == "render" else "out.png")
    argv = [str(empty)] + (["--out", str(out), "--force"] if tool in ("plot", "render") else [])
    word = "no metrics" if tool in ("plot", "compare") else "no checkpoint"
    fails_with(capsys, tool, argv, word)
    assert out.read_bytes() == b"old"


def test_missing_path(tmp_path, capsys):
    fails_with(capsys, "eval", [str(tmp_path / "nope")], "does not exist")
    fails_with(capsys, "compare", [str(tmp_path / "nope")], "does not exist")


@pytest.mark.parametrize("tool", ["eval", "render", "export"])
def test_a_checkpoint_choice_for_a_file_is_refused(run_dir, tmp_path, capsys, tool):
    """--checkpoint picks within a run folder: given a file's path it went unread (best.pt
    was played where last was asked)."""
    out = {"render": ["--out", str(tmp_path / "p.gif")],
           "export": ["--out", str(tmp_path / "p.pt"), "--format", "torchscript"]}.get(tool, [])
    best = run_dir / "checkpoints" / "best.pt"
    fails_with(capsys, tool, [str(best), "--checkpoint", "last", *out],
               f"--checkpoint last picks a checkpoint of a run folder, and '{best}' is a file: "
               "pass the run folder, or leave --checkpoint out")
    assert not list(tmp_path.glob("p.*"))


def test_metrics_without_rows(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.csv").write_text("generation,mean_eval\n")
    fails_with(capsys, "compare", [str(tmp_path / "run")], "no metrics rows")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
@pytest.mark.parametrize("tool", ["eval", "render"])
def test_corrupt_or_truncated_pickle(run_dir, tmp_path, capsys, damage, tool):
    data = (run_dir / "checkpoints" / "best.pkl").read_bytes()
    bad = tmp_path / "bad.pkl"
    bad.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x00not a pickle" * 9,
                     "empty": b""}[damage])
    out = old_file(tmp_path, "policy.gif")
    argv = [str(bad), "--trust-pickle"] + (["--out", str(out), "--force"] if tool == "render"
                                           else [])
    fails_with(capsys, tool, argv, "bad.pkl", "truncated or not a pickle")
    assert out.read_bytes() == b"old"


def test_corrupt_weights_file(run_dir, tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_bytes((run_dir / "checkpoints" / "best.pt").read_bytes()[:100])
    (tmp_path / "bad.json").write_text((run_dir / "checkpoints" / "best.json").read_text())
    line = fails_with(capsys, "eval", [str(bad)], f"{str(bad)!r} is not a whole checkpoint",
                      "restore it from a copy")
    assert "miniz" not in line


def test_weights_without_their_json(run_dir, tmp_path, capsys):
    alone = tmp_path / "policy.pt"
    alone.write_bytes((run_dir / "checkpoints" / "best.pt").read_bytes())
    fails_with(capsys, "eval", [str(alone)], "policy.json")


@pytest.mark.parametrize("env", ["NoSuchEnv-v0", "no_such_package.envs:make_env"])
def test_env_not_installed_weights(run_dir, tmp_path, capsys, env):
    folder = tmp_path / "moved"
    folder.mkdir()
    (folder / "best.pt").write_bytes((run_dir / "checkpoints" / "best.pt").read_bytes())
    meta = json.loads((run_dir / "checkpoints" / "best.json").read_text())
    (folder / "best.json").write_text(json.dumps({**meta, "env": env}))
    # a factory is code: it is looked for only once the user trusts it (tests/common/test_trust.py)
    fails_with(capsys, "eval", [str(folder / "best.pt"), "--trust-code"], repr(env),
               "cannot be made here", "--env")


def test_env_not_installed_pickle(run_dir, tmp_path, capsys):
    with open(run_dir / "checkpoints" / "best.pkl", "rb") as file:
        saved = pickle.load(file)
    saved["env"] = "no_such_package.envs:make_env"
    path = tmp_path / "policy.pkl"
    path.write_bytes(pickle.dumps(saved))
    fails_with(capsys, "eval", [str(path), "--trust-pickle"], "cannot be made here")
    fails_with(capsys, "eval", [str(path)], "--trust-pickle")  # one line, nothing unpickled
    out = old_file(tmp_path, "policy.gif")
    fails_with(capsys, "render", [str(path), "--out", str(out), "--trust-pickle", "--force"],
               "cannot be made here")
    assert out.read_bytes() == b"old"


@pytest.mark.parametrize("name", ["best.pt", "best.pkl"])
def test_another_env_with_as_many_weights_but_other_sizes_is_refused(run_dir, capsys, name):
    # CartPole's Linear(4, 2) and InvertedDoublePendulum's Linear(9, 1) both have 10 weights
    fails_with(capsys, "eval", [str(run_dir / "checkpoints" / name), "--trust-pickle",
                                "--env", "InvertedDoublePendulum-v5"],
               "trained on 'CartPole-v1' with 4 observations and 2 actions",
               "'InvertedDoublePendulum-v5' has 9 and 1")


def test_env_override_rescues_it(run_dir, tmp_path, capsys):
    meta = json.loads((run_dir / "checkpoints" / "best.json").read_text())
    (run_dir / "checkpoints" / "best.json").write_text(json.dumps({**meta, "env": "Nope-v0"}))
    assert evaluate.main([str(run_dir), "--episodes", "1", "--env", "CartPole-v1"]) == 0


@pytest.mark.parametrize("tool", [PLOT_TOOL, "render", "compare"])
def test_unwritable_output(tool, run_dir, sweep, tmp_path, capsys):
    blocker = old_file(tmp_path, "a_file")
    out = blocker / ("out.gif" if tool == "render" else "out.png")
    argv = {"plot": [str(sweep), "--out", str(out)],
            "render": [str(run_dir), "--out", str(out)],
            "compare": [str(sweep), "--csv", str(out)]}[tool]
    fails_with(capsys, tool, argv, "cannot write", str(out))
    assert blocker.read_bytes() == b"old"


def test_failed_write_keeps_the_old_file(tmp_path):
    out = old_file(tmp_path, "curves.png")

    def broken(temporary: Path) -> None:
        temporary.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(ToolError, match="No space left"):
        write_output(out, broken, "plot")
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # no temporary left behind


def test_bad_video_suffix(run_dir, tmp_path, capsys):
    fails_with(capsys, "render", [str(run_dir), "--out", str(tmp_path / "x.avi")], ".gif")


@pytest.mark.parametrize("tool", ["eval", "render"])
@pytest.mark.parametrize("value", ["0", "-5"])
def test_max_steps_below_one_is_refused(tool, value, run_dir, tmp_path, capsys):
    argv = [str(run_dir), "--max-steps", value] + (
        ["--out", str(tmp_path / "v.gif")] if tool == "render" else [])
    with pytest.raises(SystemExit) as exited:
        TOOLS[tool](argv)
    assert exited.value.code == 2
    assert f"--max-steps: {value}: expected an integer >= 1" in capsys.readouterr().err


# a checkpoint .json key of the wrong type is one line naming the .json,
# the key and the type expected (a TypeError traceback before)
@pytest.mark.parametrize(("key", "value", "expected"), [
    ("network_args", [1], "a JSON object or null"),
    ("env_config", [1, 2], "a JSON object or null"),
    ("architecture", ["Linear(obs_length, act_length)"], "a string"),
    ("env", 5, "a string"),
    ("obs_length", "abc", "a whole number >= 1"),  # int('abc') was a traceback
    ("act_length", [2], "a whole number >= 1"),
])
def test_a_json_key_of_the_wrong_type_is_named(run_dir, capsys, key, value, expected):
    meta_path = run_dir / "checkpoints" / "best.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, key: value}))
    fails_with(capsys, "eval", [str(run_dir), "--episodes", "1"], str(meta_path),
               f"{key}={value!r}", expected)


# a network string in the .json that does not parse is the network's fault,
# not the env's (it said the env cannot be made and advised installing mujoco)
def test_a_bad_architecture_in_the_json_names_the_network(run_dir, capsys):
    meta_path = run_dir / "checkpoints" / "best.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "architecture": "Foo()"}))
    line = fails_with(capsys, "eval", [str(run_dir), "--episodes", "1"], "network 'Foo()'",
                      "architecture", "best.json", "Foo")
    assert "cannot be made" not in line and "install" not in line


# a --seed that episode seeds cannot take is one argparse line naming --seed
# and the range, before anything is loaded (-1 and 2**64 failed inside the env, 2**63-1 with two
# episodes wrapped round to a negative seed)
@pytest.mark.parametrize("tool", ["eval", "render"])
@pytest.mark.parametrize("value", ["-1", str(2**64)])
def test_a_seed_outside_the_range_is_refused(tool, value, tmp_path, capsys):
    argv = [str(tmp_path / "nope"), "--seed", value] + (
        ["--out", str(tmp_path / "v.gif")] if tool == "render" else [])
    with pytest.raises(SystemExit) as exited:
        TOOLS[tool](argv)
    assert exited.value.code == 2
    assert f"--seed: {value}: expected an integer from 0 to {2**63 - 1}" in capsys.readouterr().err


@pytest.mark.parametrize("tool", ["eval", "render"])
def test_episode_seeds_past_the_range_are_refused(tool, run_dir, tmp_path, capsys):
    out = old_file(tmp_path, "v.gif")
    argv = [str(run_dir), "--seed", str(2**63 - 1), "--episodes", "2"] + (
        ["--out", str(out)] if tool == "render" else [])
    fails_with(capsys, tool, argv, f"--seed {2**63 - 1} with --episodes 2",
               f"pass a --seed from 0 to {2**63 - 2}")
    assert out.read_bytes() == b"old"


# a metrics.jsonl line that is JSON but not an object is skipped as a cut
# line is (a TypeError traceback before)
@pytest.mark.parametrize("tool", [PLOT_TOOL, "compare"])
def test_jsonl_lines_that_are_not_objects_are_skipped(tool, tmp_path, capsys):
    from neurorun.tools.runs import read_metrics

    run = tmp_path / "run"
    run.mkdir()
    rows = [{"generation": 1, "mean_eval": 2.0}, {"generation": 2, "mean_eval": 5.0}]
    lines = [json.dumps(rows[0]), "5", "null", "[1, 2]", '"text"', json.dumps(rows[1]), '{"gen']
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="5 of its 7 lines are no JSON object"):
        metrics = read_metrics(run)
    assert metrics["generation"].tolist() == [1, 2] and metrics["mean_eval"].tolist() == [2, 5]
    argv = [str(run)] + (["--out", str(tmp_path / "curves.png")] if tool == "plot" else [])
    assert TOOLS[tool](argv) == 0, capsys.readouterr().err


# --dpi 0/-5 was a ValueError traceback and --dpi 10000 allocated
# gigabytes (std::bad_alloc): an argparse line naming --dpi and the range
@pytest.mark.parametrize("value", ["0", "-5", "10000"])
def test_a_dpi_outside_the_range_is_refused(value, sweep, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        plot.main([str(sweep), "--out", str(tmp_path / "c.png"), "--dpi", value])
    assert exited.value.code == 2
    assert f"--dpi: {value}: expected an integer from 10 to 1200" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()


class FullStdout(io.TextIOBase):
    """A stdout on a full disk (or a closed pipe): every write fails as the OS says."""

    def __init__(self, code: int = errno.ENOSPC) -> None:
        self.code = code

    def write(self, text: str) -> int:
        raise OSError(self.code, os.strerror(self.code))

    def isatty(self) -> bool:
        return False


# a table, CSV or JSON sent to a full stdout (> /dev/full) or a closed
# pipe was a traceback (or exit 0 with the output lost): one line and a nonzero exit
@pytest.mark.parametrize(("tool", "flags", "code"), [
    ("compare", [], errno.ENOSPC), ("compare", ["--csv"], errno.ENOSPC),
    ("compare", [], errno.EPIPE), ("eval", ["--json", "--episodes", "1"], errno.ENOSPC),
    ("eval", ["--episodes", "1"], errno.ENOSPC)])
def test_a_failed_write_to_stdout_is_one_line(tool, flags, code, run_dir, sweep, monkeypatch,
                                              capsys):
    monkeypatch.setattr(sys, "stdout", FullStdout(code))
    path = sweep if tool == "compare" else run_dir
    fails_with(capsys, tool, [str(path), *flags], "cannot write to stdout", os.strerror(code))


# --csv /dev/full said "wrote /dev/full" and exit 0: the CSV was written to
# a temporary file renamed over the device (as root, /dev/full became a regular file); a device
# or FIFO is written into, and its write errors are one line
def test_an_output_to_a_fifo_is_written_into_it_not_renamed_over_it(sweep, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # the reader's end open before the tool opens its own (a small CSV fits in the pipe's buffer)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert compare.main([str(sweep), "--csv", str(fifo)]) == 0, capsys.readouterr().err
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO, not a regular file
    assert received.startswith(b"group,")


# `--csv /dev/stdout` under a redirection opened the file anew at offset 0: it wrote over the
# file's start (`>>`), or over what the shell had written before it (`{ echo; ...; echo; } >`)
@pytest.mark.parametrize("mode", ["ab", "wb"])
def test_an_output_to_dev_stdout_goes_where_stdout_is(sweep, tmp_path, mode):
    expected = tmp_path / "alone.csv"
    assert compare.main([str(sweep), "--csv", str(expected)]) == 0
    out = tmp_path / "out.txt"
    out.write_bytes(b"line 1\nline 2\nline 3\n" * 40)
    with open(out, mode) as stdout:
        stdout.write(b"before\n")
        stdout.flush()
        script = Path(sys.executable).with_name("neurorun-compare")
        done = subprocess.run([str(script), str(sweep), "--csv", "/dev/stdout"], stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=120)
        stdout.write(b"after\n")
    assert done.returncode == 0, done.stderr
    kept = b"line 1\nline 2\nline 3\n" * 40 if mode == "ab" else b""
    assert out.read_bytes() == kept + b"before\n" + expected.read_bytes() + b"after\n"


# under PYTHONIOENCODING=ascii, a table holding "±" was a UnicodeEncodeError traceback
def test_a_stdout_that_cannot_hold_a_character_gets_a_question_mark(sweep):
    def table(encoding: str) -> str:
        script = Path(sys.executable).with_name("neurorun-compare")
        done = subprocess.run([str(script), str(sweep)], capture_output=True, timeout=120,
                              env={**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "200"})
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode(encoding)

    wide, narrow = table("utf-8"), table("ascii")  # rich draws ASCII borders for ASCII
    assert wide.count("±") > 0 and narrow.count("?") == wide.count("±")
    assert re.findall(r"[\d.]+ \? [\d.]+", narrow) == [
        number.replace("±", "?") for number in re.findall(r"[\d.]+ ± [\d.]+", wide)]


# started with stdout closed (>&-), each tool ended in an AttributeError traceback on None
@pytest.mark.parametrize("tool", ["neurorun-compare", "neurorun-eval"])
def test_a_closed_stdout_is_one_line(tool, sweep, run_dir):
    script = Path(sys.executable).with_name(tool)
    target = sweep if tool == "neurorun-compare" else run_dir
    done = subprocess.run(["bash", "-c", 'exec "$0" "$1" >&-', str(script), str(target)],
                          stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"{tool}: error: cannot write to stdout: stdout is closed; the output is incomplete: "
        "send it to a file or pipe that takes it"]


# neurorun-compare's output errors told the user to pass an --out path: its
# flag is --csv
@pytest.mark.parametrize("target", ["folder", "in_a_file"])
def test_compare_output_errors_name_csv(target, sweep, tmp_path, capsys):
    blocker = old_file(tmp_path, "a_file")
    out = tmp_path if target == "folder" else blocker / "out.csv"
    line = fails_with(capsys, "compare", [str(sweep), "--csv", str(out)], "--csv", str(out))
    assert "--out" not in line


def test_a_pickle_is_refused_naming_the_weights_beside_it_only_where_they_are(run_dir, tmp_path,
                                                                             capsys):
    """A run's best.pkl points at its best.pt; a pickle alone (Problem.save_solution writes
    one) was told to use a .pt that is not there."""
    fails_with(capsys, "eval", [str(run_dir / "checkpoints" / "best.pkl")],
               "not loaded. Use the weights-only best.pt (+ .json) beside it, or pass "
               "--trust-pickle")
    alone = tmp_path / "center.pkl"
    alone.write_bytes(b"not unpickled")
    fails_with(capsys, "eval", [str(alone)],
               "not loaded. No weights-only .pt + .json is beside it (a run folder's "
               "checkpoints/ holds them), or pass --trust-pickle")


def test_a_folder_missing_only_the_json_names_the_json(run_dir, capsys):
    (run_dir / "checkpoints" / "best.json").unlink()
    (run_dir / "checkpoints" / "best.pkl").write_bytes(b"not unpickled")
    fails_with(capsys, "eval", [str(run_dir)], "has no best.json beside its best.pt",
               "--trust-pickle")


@pytest.mark.parametrize("tool", ["compare", PLOT_TOOL])
def test_a_file_other_than_the_metrics_is_not_taken_for_its_folder(run_dir, tmp_path, capsys,
                                                                   tool):
    """`neurorun-compare policy.pt` compared every run beside the file."""
    policy = run_dir / "checkpoints" / "best.pt"
    argv = [str(policy)] + (["--out", str(tmp_path / "c.png")] if tool == "plot" else [])
    fails_with(capsys, tool, argv, f"{str(policy)!r} is a file, not a run's metrics.csv")


def _writing(tool: str, run_dir: Path, sweep: Path, out: Path) -> list[str]:
    """The command line of ``tool`` writing its output to ``out``."""
    return {"plot": [str(sweep), "--out", str(out)],
            "render": [str(run_dir), "--out", str(out), "--max-steps", "3"],
            "compare": [str(sweep), "--csv", str(out)]}[tool]


@pytest.mark.parametrize("tool", [PLOT_TOOL, "render", "compare"])
def test_an_existing_output_needs_force(tool, run_dir, sweep, tmp_path, capsys):
    out = old_file(tmp_path, "out.gif" if tool == "render" else "out.png")
    argv = _writing(tool, run_dir, sweep, out)
    flag = "--csv" if tool == "compare" else "--out"
    fails_with(capsys, tool, argv, f"{flag} {str(out)!r} exists; pass --force")
    assert out.read_bytes() == b"old"
    assert TOOLS[tool]([*argv, "--force"]) == 0
    assert out.read_bytes() != b"old"


@pytest.mark.parametrize("tool", [PLOT_TOOL, "render", "compare"])
def test_an_output_in_a_missing_folder_makes_no_folder(tool, run_dir, sweep, tmp_path, capsys):
    out = tmp_path / "missing" / "sub" / ("out.gif" if tool == "render" else "out.png")
    fails_with(capsys, tool, _writing(tool, run_dir, sweep, out),
               f"the folder {str(out.parent)!r} does not exist")
    assert not (tmp_path / "missing").exists()


# .hydra/config.yaml overwritten by `--csv ... --force` made the run unresumable
@pytest.mark.parametrize("name", ["metrics.csv", "metrics.jsonl", "checkpoints/state.pt",
                                  ".hydra/overrides.yaml", ".hydra/config.yaml",
                                  ".hydra/resumed_2026-11-30_00-00-00/config.yaml",
                                  "../multirun.yaml"])
def test_a_runs_own_file_is_no_output_even_with_force(name, sweep, capsys):
    run = sweep / "0_pgpe_s0"
    if name.startswith("checkpoints/"):
        save_checkpoint(run)  # best.pt beside it
    own = run / name
    if not own.exists():
        own.parent.mkdir(exist_ok=True)
        own.write_bytes(b"the run's")
    before = own.read_bytes()
    fails_with(capsys, "compare", [str(sweep), "--csv", str(own), "--force"],
               "which a resume and the tools read", "pass a --csv outside it")
    assert own.read_bytes() == before


@pytest.mark.parametrize("fps", ["nan", "inf", "0.001", "1e-9", "0", "-1", "101"])
def test_an_fps_outside_the_range_is_refused(fps, run_dir, tmp_path, capsys):
    out = tmp_path / "out.gif"
    fails_with(capsys, "render", [str(run_dir), "--out", str(out), "--fps", fps],
               f"--fps {float(fps)}", "an fps from 0.1 to 100.0")
    assert not out.exists()


@pytest.mark.parametrize("tool", ["eval", "export"])
def test_a_network_that_does_not_fit_its_env_is_blamed_not_the_env(tool, run_dir, tmp_path,
                                                                   capsys):
    """It said the env 'cannot be made here' and to install gymnasium[mujoco] or pass --env
    (which neurorun-export has not)."""
    meta_path = run_dir / "checkpoints" / "best.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "architecture": "Linear(obs_length, 3)"}))
    argv = [str(run_dir)] + (["--out", str(tmp_path / "p.pt"), "--format", "torchscript"]
                             if tool == "export" else [])
    line = fails_with(capsys, tool, argv, "its network 'Linear(obs_length, 3)' does not fit "
                      "'CartPole-v1': the network gives 3 numbers per step",
                      "Fix: restore the architecture the run wrote")
    assert "cannot be made here" not in line and "gymnasium[mujoco]" not in line


def test_a_run_with_only_its_last_policy_is_told_to_ask_for_it(run_dir, capsys):
    for suffix in (".pt", ".json", ".pkl"):
        best = run_dir / "checkpoints" / f"best{suffix}"
        if best.exists():
            best.rename(best.with_name(f"last{suffix}"))
    fails_with(capsys, "eval", [str(run_dir)], "no checkpoint in", "pass --checkpoint last")
    assert evaluate.main([str(run_dir), "--checkpoint", "last", "--episodes", "1"]) == 0


@pytest.mark.parametrize("env, closest", [
    ("Hoper-v5", "Hopper-v5"),
    pytest.param("brax::hoper", "hopper", marks=pytest.mark.extras("jax"))])
def test_a_misspelt_env_gets_the_closest_names_and_no_install_hint(run_dir, capsys, env, closest):
    """`--env brax::nonexist` was told to install gymnasium[mujoco] or brax."""
    line = fails_with(capsys, "eval", [str(run_dir), "--env", env], "cannot be made here",
                      f"unknown {'brax' if '::' in env else 'gymnasium'} env", closest,
                      "(or --env ID)")
    assert "install" not in line
