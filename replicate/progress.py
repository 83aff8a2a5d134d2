"""Short progress lines on Snakemake's console: one per running training job, and the whole run's.

A training job writes its Trainer's lines to its own log (``<results>/logs/...``); the console showed
only "N of M steps". ``ProgressWatcher`` runs in the Snakemake process (started by the workflow's
``onstart``): every ``interval`` seconds it reads what the job logs gained since its last look and
prints one line per running job whose log moved, then one line for the whole run, e.g.

    progress press_wolf/small_wt/seed1: epoch 3/13, batch 400/1327, 1,650 tok/s, ETA 1h20m, last valid ppl 140.21
    progress run: about 8.1 of 26.7 estimated one-thread hours done (30 %), 18.6 h left (at least 9.3 h on
      2 cores); 2 of 14 estimated jobs done, 2 running

A log that did not move prints nothing, and a job that ended (its ``done:`` or ``error:`` line, or its
outputs written since the run started) is not listed, so several jobs give one line each per interval, not
a flood. The run's line weighs each planned job by its estimated one-thread minutes (``one_thread_min``,
replicate/resources.py) and counts a running job by the epochs and batches its log has reached. It reads
the Trainer's line forms (replicate/lstm/train.py: the batch line, the end-of-epoch line; the runner's
``done:`` line) and nothing else; jobs are not changed. ``REPLICATE_PROGRESS_SECONDS`` sets the interval
(default 60; 0 turns it off)."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

ENV_INTERVAL = "REPLICATE_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 60.0

# "[name] epoch 3/13 batch 400/1327 loss 4.9 ppl 140.2 lr 1 1650 tok/s ETA 1h20m (training only)"
_BATCH = re.compile(r"\] epoch (\d+)/(\d+) batch (\d+)/(\d+) .*?(\d+) tok/s ETA (\S+)")
# "[name] epoch 3/13 lr 1 train ppl 150.1 valid ppl 140.21 (600 s, 1650 tok/s; eval 20 s)"
_EPOCH = re.compile(r"\] epoch (\d+)/(\d+) .*?valid ppl ([0-9.]+|nan|inf)")
# the job ended: the runner's last line ("[name] done: train ..."), or the CLI's on a failure or Ctrl-C
_ENDED = re.compile(r"\] done: |^error: |^interrupted \(")


@dataclass
class JobProgress:
    """What a job's log said last: position, speed, time left, the last validation perplexity."""

    epoch: str = ""
    batch: str = ""
    tok_s: int | None = None
    eta: str = ""
    valid_ppl: str = ""
    ended: bool = False

    def read(self, line: str) -> bool:
        """Update from one log line; True if it was a Trainer line (a new run in the same log starts again)."""
        if m := _BATCH.search(line):
            self.epoch, self.batch = f"{m[1]}/{m[2]}", f"{m[3]}/{m[4]}"
            self.tok_s, self.eta, self.ended = int(m[5]), m[6], False
            return True
        if m := _EPOCH.search(line):
            self.epoch, self.batch, self.valid_ppl, self.ended = f"{m[1]}/{m[2]}", "end", m[3], False
            return True
        self.ended |= bool(_ENDED.search(line))
        return False

    def fraction(self) -> float:
        """How much of its training the log has reached: 1 once ended, else by epochs and batches."""
        if self.ended:
            return 1.0
        if not self.epoch:
            return 0.0
        epoch, epochs = map(int, self.epoch.split("/"))
        batch, batches = (1, 1) if self.batch == "end" else map(int, self.batch.split("/"))
        return min(1.0, (epoch - 1 + batch / max(batches, 1)) / max(epochs, 1))

    def line(self, name: str) -> str:
        parts = [f"epoch {self.epoch}"]
        if self.batch and self.batch != "end":
            parts.append(f"batch {self.batch}")
        if self.tok_s is not None:
            parts.append(f"{self.tok_s:,} tok/s")
        if self.eta:
            parts.append(f"ETA {self.eta}")
        if self.valid_ppl:
            parts.append(f"last valid ppl {self.valid_ppl}")
        return f"progress {name}: " + ", ".join(parts)


class LogFollower:
    """Reads only what one log gained since the last call (starts over when a rerun truncated it)."""

    def __init__(self, path: Path):
        self.path, self.offset, self.progress = path, 0, JobProgress()

    def poll(self) -> bool:
        """Read the new lines; True if one of them was a Trainer line."""
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # the job was rerun: its log starts again
                self.offset, self.progress = 0, JobProgress()
            if size == self.offset:
                return False
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(size - self.offset)
        except OSError:
            return False
        cut = data.rfind(b"\n") + 1  # a half-written last line waits for the next poll
        self.offset += cut
        moved = False
        for raw in data[:cut].decode("utf-8", "replace").splitlines():
            moved |= self.progress.read(raw)
        return moved


@dataclass(frozen=True)
class PlannedJob:
    """A job of the run with an estimate: its log, its estimated one-thread minutes, its outputs."""

    log: Path | None
    minutes: float
    outputs: tuple[Path, ...]


class ProgressWatcher:
    """Every ``interval`` s, one line (``emit``) per running job whose log under ``logs_dir`` gained Trainer
    lines, then, when ``plan`` (the run's jobs with an estimate) is given, one line for the whole run."""

    def __init__(self, logs_dir: str | Path, emit: Callable[[str], None], interval: float = DEFAULT_INTERVAL,
                 plan: Iterable[PlannedJob] = (), cores: int | None = None):
        self.logs_dir, self.emit, self.interval = Path(logs_dir), emit, interval
        self.plan = [PlannedJob(j.log and Path(j.log).absolute(), j.minutes, tuple(map(Path, j.outputs)))
                     for j in plan]
        self.cores = cores
        self.followers: dict[Path, LogFollower] = {}
        self.started = time.time()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> list[str]:
        """One look at the logs written since the watcher started; returns (and emits) the lines."""
        done = {job.log for job in self.plan if job.log and self._written(job)}
        lines = []
        for path in sorted(self.logs_dir.rglob("*.log")) if self.logs_dir.is_dir() else []:
            if path not in self.followers:
                try:
                    if path.stat().st_mtime < self.started:
                        continue  # a log of an earlier run
                except OSError:
                    continue
                self.followers[path] = LogFollower(path)
            follower = self.followers[path]
            if follower.poll() and not follower.progress.ended and path.absolute() not in done:
                name = path.relative_to(self.logs_dir).with_suffix("").as_posix()
                lines.append(follower.progress.line(name))
        if lines and self.plan:
            lines.append(self.run_line(done))
        for line in lines:
            self.emit(line)
        return lines

    def _written(self, job: PlannedJob) -> bool:
        """Whether the job wrote all its outputs since the run started (Snakemake removes them before a job)."""
        try:
            return bool(job.outputs) and all(p.stat().st_mtime >= self.started for p in job.outputs)
        except OSError:
            return False

    def run_line(self, done: set[Path]) -> str:
        """The whole run: estimated one-thread hours done and left, the jobs done and running."""
        followers = {path.absolute(): f for path, f in self.followers.items()}
        reached, finished, running = 0.0, 0, 0
        for job in self.plan:
            follower = followers.get(job.log)
            share = 1.0 if job.log in done else follower.progress.fraction() if follower else 0.0
            reached += share * job.minutes
            finished += share == 1.0
            running += 0.0 < share < 1.0
        total = sum(job.minutes for job in self.plan)
        left = (total - reached) / 60
        wall = f" (at least {left / self.cores:.1f} h on {self.cores} cores)" if self.cores else ""
        return (f"progress run: about {reached / 60:.1f} of {total / 60:.1f} estimated one-thread hours done "
                f"({100 * reached / max(total, 1e-9):.0f} %), {left:.1f} h left{wall}; {finished} of "
                f"{len(self.plan)} estimated jobs done, {running} running")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def start(self) -> "ProgressWatcher":
        self._thread = threading.Thread(target=self._loop, name="replicate-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()


def interval_from_env() -> float:
    """REPLICATE_PROGRESS_SECONDS (default 60; 0 or less: no progress lines)."""
    text = os.environ.get(ENV_INTERVAL, "").strip()
    try:
        return float(text) if text else DEFAULT_INTERVAL
    except ValueError:
        from replicate.errors import ReplicateError

        raise ReplicateError(f"{ENV_INTERVAL}={text!r} is not a number of seconds",
                             f"set {ENV_INTERVAL} to e.g. 60, or 0 to turn the progress lines off") from None


def start(logs_dir: str | Path, emit: Callable[[str], None], plan: Iterable[PlannedJob] = (),
          cores: int | None = None) -> ProgressWatcher | None:
    """A started watcher of ``logs_dir``, or None when REPLICATE_PROGRESS_SECONDS turns it off."""
    interval = interval_from_env()
    return ProgressWatcher(logs_dir, emit, interval, plan, cores).start() if interval > 0 else None


def planned(jobs: Iterable) -> list[PlannedJob]:
    """The PlannedJob of each Snakemake job with an estimate (resource ``one_thread_min``) among ``jobs``."""
    return [PlannedJob(Path(job.log[0]) if job.log else None, float(job.resources["one_thread_min"]),
                      tuple(Path(p) for p in job.output))
            for job in jobs if job.resources.get("one_thread_min") is not None]
