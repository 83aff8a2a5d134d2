"""One short progress line per running training job on Snakemake's console.

A training job writes its Trainer's lines to its own log (``<results>/logs/...``); the console showed
only "N of M steps". ``ProgressWatcher`` runs in the Snakemake process (started by the workflow's
``onstart``): every ``interval`` seconds it reads what the job logs gained since its last look and
prints one line per log that moved, e.g.

    progress press_wolf/small_wt/seed1: epoch 3/13, batch 400/1327, 1,650 tok/s, ETA 1h20m, last valid ppl 140.21

A log that did not move prints nothing, so several jobs give one line each per interval, not a flood.
It reads the Trainer's two line forms (replicate/lstm/train.py: the batch line and the end-of-epoch
line) and nothing else; jobs are not changed. ``REPLICATE_PROGRESS_SECONDS`` sets the interval
(default 60; 0 turns it off)."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ENV_INTERVAL = "REPLICATE_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 60.0

# "[name] epoch 3/13 batch 400/1327 loss 4.9 ppl 140.2 lr 1 1650 tok/s ETA 1h20m (training only)"
_BATCH = re.compile(r"\] epoch (\d+)/(\d+) batch (\d+)/(\d+) .*?(\d+) tok/s ETA (\S+)")
# "[name] epoch 3/13 lr 1 train ppl 150.1 valid ppl 140.21 (600 s, 1650 tok/s; eval 20 s)"
_EPOCH = re.compile(r"\] epoch (\d+)/(\d+) .*?valid ppl ([0-9.]+|nan|inf)")


@dataclass
class JobProgress:
    """What a job's log said last: position, speed, time left, the last validation perplexity."""

    epoch: str = ""
    batch: str = ""
    tok_s: int | None = None
    eta: str = ""
    valid_ppl: str = ""

    def read(self, line: str) -> bool:
        """Update from one log line; True if it was a Trainer line."""
        if m := _BATCH.search(line):
            self.epoch, self.batch = f"{m[1]}/{m[2]}", f"{m[3]}/{m[4]}"
            self.tok_s, self.eta = int(m[5]), m[6]
            return True
        if m := _EPOCH.search(line):
            self.epoch, self.batch, self.valid_ppl = f"{m[1]}/{m[2]}", "end", m[3]
            return True
        return False

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


class ProgressWatcher:
    """Every ``interval`` s, one line (``emit``) per job log under ``logs_dir`` that gained Trainer lines."""

    def __init__(self, logs_dir: str | Path, emit: Callable[[str], None], interval: float = DEFAULT_INTERVAL):
        self.logs_dir, self.emit, self.interval = Path(logs_dir), emit, interval
        self.followers: dict[Path, LogFollower] = {}
        self.started = time.time()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> list[str]:
        """One look at the logs written since the watcher started; returns (and emits) the lines."""
        lines = []
        for path in sorted(self.logs_dir.rglob("*.log")) if self.logs_dir.is_dir() else []:
            if path not in self.followers:
                try:
                    if path.stat().st_mtime < self.started:
                        continue  # a log of an earlier run
                except OSError:
                    continue
                self.followers[path] = LogFollower(path)
            if self.followers[path].poll():
                name = path.relative_to(self.logs_dir).with_suffix("").as_posix()
                lines.append(self.followers[path].progress.line(name))
        for line in lines:
            self.emit(line)
        return lines

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


def start(logs_dir: str | Path, emit: Callable[[str], None]) -> ProgressWatcher | None:
    """A started watcher of ``logs_dir``, or None when REPLICATE_PROGRESS_SECONDS turns it off."""
    interval = interval_from_env()
    return ProgressWatcher(logs_dir, emit, interval).start() if interval > 0 else None
