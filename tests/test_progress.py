"""Console progress lines read from the training jobs' logs (replicate/console.py)."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest

from replicate import console
from replicate.errors import ReplicateError

# the Trainer's two line forms (replicate/lstm/train.py, _progress and the end of an epoch)
BATCH = "[small_wt/seed1] epoch 3/13 batch 400/1327 loss 4.950 ppl 141.2 lr 1 1650 tok/s ETA 1h20m (training only)"
EPOCH = "[small_wt/seed1] epoch 2/13 lr 1 train ppl 150.10 valid ppl 140.21 (600 s, 1650 tok/s; eval 20 s)"


def test_a_job_line_says_position_speed_eta_and_last_valid_ppl():
    job = console.JobProgress()
    assert job.read(EPOCH) and job.read(BATCH) and not job.read("[small_wt/seed1] 2,653,200 parameters")
    assert job.line("press_wolf/small_wt/seed1") == ("progress press_wolf/small_wt/seed1: epoch 3/13, batch 400/1327, "
                                                     "1,650 tok/s, ETA 1h20m, last valid ppl 140.21")


def _write(path, *lines, mode="a"):
    with open(path, mode, encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in lines))


def test_watcher_prints_one_line_per_moving_log_and_nothing_for_idle_or_old_ones(tmp_path):
    logs = tmp_path / "logs"
    (logs / "press_wolf" / "small").mkdir(parents=True)
    old = logs / "press_wolf" / "old.log"
    _write(old, BATCH)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    emitted = []
    watcher = console.ProgressWatcher(logs, emitted.append, interval=60)
    a, b = logs / "press_wolf" / "small" / "seed1.log", logs / "press_wolf" / "small_wt.log"
    _write(a, EPOCH, BATCH, BATCH)
    _write(b, "setting up")
    assert watcher.check() == ["progress press_wolf/small/seed1: epoch 3/13, batch 400/1327, 1,650 tok/s, ETA 1h20m, "
                               "last valid ppl 140.21"]
    assert watcher.check() == [], "a log that did not move prints nothing"
    _write(b, BATCH.replace("400/", "401/"))
    assert [line.split(":")[0] for line in watcher.check()] == ["progress press_wolf/small_wt"]
    _write(a, "[small/seed1] epoch 1/13 batch 5/1327 loss 9 ppl 9000 lr 1 900 tok/s ETA 9h (training only)", mode="w")
    assert watcher.check()[0].endswith("epoch 1/13, batch 5/1327, 900 tok/s, ETA 9h"), "a rerun's log starts over"
    assert len(emitted) == 3


def test_half_written_line_waits(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(BATCH[:40])
    follower = console.LogFollower(log)
    assert not follower.poll()
    _write(log, BATCH[40:])
    assert follower.poll() and follower.progress.batch == "400/1327"


def test_interval_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(console.ENV_INTERVAL, "0")
    assert console.start(tmp_path, print) is None
    monkeypatch.setenv(console.ENV_INTERVAL, "soon")
    with pytest.raises(ReplicateError, match="REPLICATE_PROGRESS_SECONDS"):
        console.start(tmp_path, print)


DONE = "[small_wt/seed1] done: train 60.00 (clean 58.00) valid 130.00 test 125.00"


def test_a_job_that_ended_is_not_listed_and_a_new_run_in_its_log_is(tmp_path):
    """The runner's done line (or the CLI's error / interrupted line) ends a job: its last batch line
    ("ETA 0h00m00s") is not printed as if it still ran."""
    logs = tmp_path / "logs"
    logs.mkdir()
    watcher = console.ProgressWatcher(logs, lambda line: None, interval=60)
    log = logs / "small_wt.log"
    _write(log, BATCH.replace("400/1327", "1327/1327").replace("3/13", "13/13").replace("1h20m", "0h00m00s"), DONE)
    assert watcher.check() == []
    _write(log, BATCH)  # the next run of a point job (another seed) in the same log
    assert [line.split(":")[0] for line in watcher.check()] == ["progress small_wt"]
    _write(log, BATCH, "error: run small_wt/seed1: non-finite result")
    assert watcher.check() == []


def test_the_run_line_adds_up_the_planned_jobs_done_and_running(tmp_path):
    """Three planned jobs of 60, 120 and 240 one-thread minutes: the first wrote its output since the start
    (done), the second's log is at epoch 2 of 4, batch 50 of 100 (3/8 reached), the third has not started."""
    logs = tmp_path / "logs"
    logs.mkdir()
    out = tmp_path / "a.json"
    plan = [console.PlannedJob(logs / "a.log", 60, (out,)),
            console.PlannedJob(logs / "b.log", 120, (tmp_path / "b",)),
            console.PlannedJob(logs / "c.log", 240, (tmp_path / "c",))]
    watcher = console.ProgressWatcher(logs, lambda line: None, interval=60, plan=plan, cores=2)
    _write(logs / "a.log", BATCH)
    out.write_text("{}")
    _write(logs / "b.log", "[b] epoch 2/4 batch 50/100 loss 5 ppl 150 lr 1 1650 tok/s ETA 1h00m00s (training only)")
    lines = watcher.check()
    assert [line.split(":")[0] for line in lines] == ["progress b", "progress run"], "a finished job is not listed"
    assert lines[-1] == ("progress run: about 1.8 of 7.0 estimated one-thread hours done (25 %), 5.2 h left (at least "
                         "2.6 h on 2 cores); 1 of 3 estimated jobs done, 1 running")
    assert watcher.check() == [], "nothing moved: no line, the run's neither"


def test_planned_takes_the_jobs_with_an_estimate():
    job = SimpleNamespace(log=["logs/x.log"], output=["results/x.json"], resources={"one_thread_min": 90})
    cheap = SimpleNamespace(log=[], output=["t.csv"], resources={})
    assert console.planned([job, cheap]) == [console.PlannedJob(console.Path("logs/x.log"), 90.0,
                                                                  (console.Path("results/x.json"),))]
