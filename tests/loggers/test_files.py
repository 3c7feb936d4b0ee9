"""metrics.csv and metrics.jsonl: one row per generation, appended exactly on resume."""

import csv
import json
import os

import pytest

from neurorun.loggers import MetricsFiles


def status(generation, **extra):
    return {"generation": generation, "mean_eval": generation * 1.5, "center_eval": None, **extra}


def test_rows_and_lines_hold_the_status(tmp_path):
    files = MetricsFiles(tmp_path)
    files.log(1, status(1))
    files.log(2, status(2, center_eval=float("nan")))
    with open(tmp_path / "metrics.csv", newline="") as file:
        assert list(csv.reader(file)) == [["generation", "mean_eval", "center_eval"],
                                          ["1", "1.5", ""], ["2", "3.0", "nan"]]
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert lines == [{"generation": 1, "mean_eval": 1.5, "center_eval": None},
                     {"generation": 2, "mean_eval": 3.0, "center_eval": None}]  # NaN -> null


def test_offsets_are_the_file_sizes_and_resume_cuts_back_to_them(tmp_path):
    files = MetricsFiles(tmp_path)
    files.log(1, status(1))
    offsets = files.offsets()
    assert offsets == {"metrics.csv": os.path.getsize(tmp_path / "metrics.csv"),
                       "metrics.jsonl": os.path.getsize(tmp_path / "metrics.jsonl"), "rows": 1}
    files.log(2, status(2))  # written after the checkpoint: replaced on resume
    resumed = MetricsFiles(tmp_path, offsets)
    resumed.log(2, status(2, mean_eval=7.0))
    with open(tmp_path / "metrics.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [(r["generation"], r["mean_eval"]) for r in rows] == [("1", "1.5"), ("2", "7.0")]
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2


def test_a_fresh_run_starts_fresh_files(tmp_path):
    (tmp_path / "metrics.csv").write_text("old\n")
    MetricsFiles(tmp_path).log(1, status(1))
    assert "old" not in (tmp_path / "metrics.csv").read_text()


@pytest.mark.parametrize("damage", ["delete", "cut", "rewrite"])
def test_resume_refuses_metric_files_that_do_not_match_the_checkpoint(tmp_path, damage):
    files = MetricsFiles(tmp_path)
    for generation in (1, 2, 3):
        files.log(generation, status(generation))
    offsets = files.offsets()
    path = tmp_path / "metrics.csv"
    if damage == "delete":
        path.unlink()
    elif damage == "cut":
        path.write_bytes(path.read_bytes()[:20])
    else:  # same size, one row fewer: a line break replaced
        data = path.read_bytes()
        path.write_bytes(data[:-1].replace(b"\n", b" ", 1) + data[-1:])
    size = path.stat().st_size if path.exists() else None
    with pytest.raises(ValueError, match="metrics.csv") as info:
        MetricsFiles(tmp_path, offsets)
    assert "\n" not in str(info.value)
    assert (path.stat().st_size if path.exists() else None) == size  # untouched: no NULs


# a metric file that cannot be written (read-only, immutable) in a
# resumed run was "the run failed: PermissionError" with a traceback: one line naming it and the
# fix, and neither file cut (metrics.csv was cut before metrics.jsonl failed to open)
def test_a_metric_file_that_cannot_be_written_is_one_line_and_nothing_is_cut(tmp_path,
                                                                            monkeypatch):
    files = MetricsFiles(tmp_path)
    files.log(1, status(1))
    offsets = files.offsets()
    files.log(2, status(2))  # after the checkpoint: what a resume would cut
    before = {name: (tmp_path / name).read_bytes() for name in ("metrics.csv", "metrics.jsonl")}
    unwritable = str(tmp_path / "metrics.jsonl")
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):  # as root, chmod a-w would not refuse
        if str(path) == unwritable and flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(1, "Operation not permitted", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    with pytest.raises(ValueError) as info:
        MetricsFiles(tmp_path, offsets)
    assert str(info.value).startswith(f"{unwritable} cannot be written (Operation not "
                                      "permitted)")
    assert f"Fix: make it writable (chmod u+w {unwritable}" in str(info.value)
    assert "\n" not in str(info.value)
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


def test_a_full_disk_at_the_metric_files_stays_an_os_error(tmp_path, monkeypatch):
    """Only a refused permission is said as 'cannot be written ... chmod u+w': a full disk (or
    no descriptors left) goes on as the OSError the command says as a full disk."""
    import errno

    def full(path, flags, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(os, "open", full)
    with pytest.raises(OSError) as info:
        MetricsFiles(tmp_path)
    assert info.value.errno == errno.ENOSPC and not isinstance(info.value, ValueError)
