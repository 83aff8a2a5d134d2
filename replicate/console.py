"""What Snakemake's console shows of a run, through a logging filter and a thread the workflow starts (what runs and
what decides a rerun are untouched): the plan in short lines (file lists as their first files and a count, where a
training job resumes, long lines wrapped, a job stopped by Ctrl-C or SIGTERM in one line; ``REPLICATE_FULL_PLAN=1``:
all in full), what the plan costs above a dry run's last line, and a progress line per running training job and for
the whole run, every ``REPLICATE_PROGRESS_SECONDS`` (default 60; 0: none), read from the jobs' logs."""

from __future__ import annotations

import logging
import os
import re
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from replicate.errors import ReplicateError
from replicate.resources import EXPERIMENTS, MEASURED_ON

ENV_FULL_PLAN = "REPLICATE_FULL_PLAN"
MAX_LINE = 400
KEEP_FILES = 3
INTERRUPTED = "Terminating processes on user request"  # Snakemake's line when Ctrl-C stops a run
# how a job's command ends when a signal stopped it: killed by it, or (our commands) exit 130 / 143 on it
_STOPPED = re.compile(r"died with <Signals\.(SIGINT|SIGTERM): \d+>|returned non-zero exit status (130|143)\b")
_HOW = {"SIGINT": "Ctrl-C", "130": "Ctrl-C", "SIGTERM": "SIGTERM", "143": "SIGTERM"}
RESUME = "to resume, run the same snakemake command again"
DRY_RUN = "This was a dry-run"  # Snakemake's last line of a plan (-n)
CHECKPOINT = "checkpoint.pt"  # replicate.lstm.train.CHECKPOINT (not imported here: it imports torch)
AGGREGATES = ("all", *EXPERIMENTS)  # target rules that only collect other jobs' outputs


def shorten_command(cmd: str) -> str:
    """``cmd`` with every run of file paths (an aggregation's inputs) shortened."""
    words, run = [], []
    for word in [*cmd.split(" "), None]:
        if word is not None and "/" in word and not word.startswith(("-", "<", "'", ">", "|")):
            run.append(word)
            continue
        words.extend(shorten_files(run))
        run = []
        if word is not None:
            words.append(word)
    short = " ".join(words)
    # still too long (a command with many options): one option per line, as a shell continuation
    return short if len(short) <= MAX_LINE else short.replace(" --", " \\\n    --")


def shorten_files(files: list[str], keep: int = KEEP_FILES) -> list[str]:
    """The first ``keep`` files and a count of the rest."""
    files = list(files)
    if len(files) <= keep + 1:
        return files
    return [*files[:keep], f"... {len(files) - keep} more ({len(files)} files)"]


def shorten_reason(reason: str) -> str:
    """A Snakemake reason ("Missing output files: a, b; Input files updated by another job: c") with short lists."""
    return "; ".join(f"{label}{sep}{', '.join(shorten_files(files.split(', ')))}" if sep else label
                     for label, sep, files in (part.partition(": ") for part in reason.split("; ")))


def resume_note(outputs: list[str]) -> str:
    """"; resumes from <path> at epoch E, batch B" for a job whose output's folder holds a checkpoint, else ''."""
    path = next((p for p in (Path(o).parent / CHECKPOINT for o in outputs) if p.is_file()), None)
    if path is None:
        return ""
    import torch  # only when a checkpoint is there to read (mmap: its tensors are not read)

    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - the job names the fault and its fix
        return f"; {path} is unreadable ({type(exc).__name__}): the job says what to do"
    epochs = ((state.get("fingerprint") or {}).get("train") or {}).get("epochs")
    if epochs is not None and state["epoch"] >= epochs:
        return f"; {path} holds all {epochs} epochs: the job only evaluates"
    return f"; resumes from {path} at epoch {state['epoch'] + 1}, batch {state['batch']}"


def wrap_long_lines(text: str, width: int = 100) -> str:
    """Lines over MAX_LINE characters wrapped at ``width``, continuation lines keeping the indent."""
    def wrap(line: str) -> str:
        indent = line[: len(line) - len(line.lstrip())]
        return textwrap.fill(line.strip(), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)

    return "\n".join(line if len(line) <= MAX_LINE else wrap(line) for line in text.split("\n"))


class ShortPlanFilter(logging.Filter):
    """Rewrites Snakemake's job-info, shell-command, job-error and plain records to short lines; a job that Ctrl-C or
    SIGTERM stopped gives one line naming its log instead of its error blocks (whose exception text is dropped)."""

    def __init__(self):
        super().__init__()
        self.interrupted = False  # Snakemake said Ctrl-C stopped the run
        self.how: str | None = None  # the signal that stopped the job whose "Error in rule" comes next
        self.stopped = 0  # jobs reported stopped

    def filter(self, record: logging.LogRecord) -> bool:
        event = str(getattr(record, "event", "") or "")
        if event == "job_info":
            outputs = getattr(record, "output", None)
            if isinstance(getattr(record, "reason", None), str):
                record.reason = shorten_reason(record.reason) + resume_note(outputs if isinstance(outputs, list) else [])
            for key in ("input", "output", "log"):
                if isinstance(getattr(record, key, None), list):
                    setattr(record, key, shorten_files(getattr(record, key)))
        elif event == "shellcmd":
            if isinstance(getattr(record, "shellcmd", None), str):
                record.shellcmd = shorten_command(record.shellcmd)
            if isinstance(record.msg, str):
                record.msg = shorten_command(record.msg)
        elif event == "job_error" and (self.interrupted or self.how):  # a stopped job's "Error in rule": one line
            output = shorten_files(list(getattr(record, "output", None) or []), keep=1)
            log = ", ".join(getattr(record, "log", None) or []) or "none"
            record.msg = (f"interrupted ({self.how or 'Ctrl-C'}): rule {getattr(record, 'rule_name', '?')}"
                          f"{f' ({output[0]})' if output else ''}, its log: {log}; {RESUME}")
            record.event, record.args, self.how = None, None, None
            self.stopped += 1
        elif event in ("", "error") and isinstance(record.msg, str) and not record.args:  # plain lines, errors
            self.interrupted |= record.msg.startswith(INTERRUPTED)
            exception = getattr(record, "exception", None)
            if exception == "RuleException" and (m := _STOPPED.search(record.msg)):
                self.how = _HOW[m.group(1) or m.group(2)]
                return False  # the job's "Error in rule" record says it in one line
            if exception == "WorkflowError" and self.stopped and "did not complete" in record.msg:
                record.msg = f"stopped: {self.stopped} job(s) interrupted; {RESUME} (training resumes from its " \
                             "last checkpoint)"
            record.msg = wrap_long_lines(record.msg)
        return True


class PlanCostFilter(logging.Filter):
    """Adds what the plan costs (from each printed job's ``one_thread_min``) above a dry run's last line."""

    def __init__(self, cores: int | None = None):
        super().__init__()
        self.cores, self.jobs = cores, []

    def filter(self, record: logging.LogRecord) -> bool:
        if str(getattr(record, "event", "") or "") == "job_info":
            get = getattr(getattr(record, "resources", None), "get", lambda key: None)
            self.jobs.append((getattr(record, "rule_name", ""), get("one_thread_min")))
        elif isinstance(record.msg, str) and record.msg.startswith(DRY_RUN) and self.jobs:
            record.msg = f"{wrap_long_lines(headline(self.jobs, self.cores))}\n{record.msg}"
        return True


def headline(jobs: list[tuple[str, int | None]], cores: int | None) -> str:
    """A plan's cost in one paragraph (one-thread hours, a wall-clock floor on ``cores``, the longest job) from the
    (rule, one_thread_min or None) of each job to run."""
    jobs = [(rule, minutes) for rule, minutes in jobs if rule not in AGGREGATES]
    timed = [(int(minutes), rule) for rule, minutes in jobs if minutes is not None]
    total = sum(m for m, _ in timed) / 60
    longest, rule = max(timed, default=(0, "none"))
    rest = len(jobs) - len(timed)
    if not timed:
        return f"Estimated cost: {len(jobs)} cheap jobs (tables, figures, data steps), no training."
    # a cluster run (--jobs, no --cores) has no core count: its wall clock is the cluster's
    wall = f"on {cores} core(s) at least {max(total / int(cores), longest / 60):.1f} h of wall clock" if cores else \
        "wall clock as the cluster runs the jobs"
    return (f"Estimated cost: {total:.1f} one-thread CPU hours in {len(jobs)} jobs"
            + (f" ({rest} of them cheap tables, figures or data steps without an estimate)" if rest else "")
            + f"; {wall}; longest job: {rule}, "
            f"{longest / 60:.1f} one-thread h. Rates: {MEASURED_ON} (replicate/resources.py; "
            "per experiment: python -m replicate costs --remaining TARGETS).")


def announce(jobs: list[tuple[str, int | None]], cores: int | None, notice_hours: float, log) -> None:
    """Before a run's first job: its headline, and above ``notice_hours`` how to look first without running."""
    if not jobs:
        return
    log(headline(jobs, cores))
    hours = sum(int(m) for r, m in jobs if m is not None and r not in AGGREGATES) / 60
    if notice_hours and hours > notice_hours:
        log(f"This run is above cost_notice_hours ({notice_hours:g} h): it trains for hours. To see the plan "
            "without running anything: snakemake -n TARGETS (or python -m replicate costs --remaining TARGETS); "
            "Ctrl-C stops it, and the same command resumes from the last checkpoints.")


def install(logger: logging.Logger, cores: int | None = None) -> bool:
    """Put a PlanCostFilter and, unless REPLICATE_FULL_PLAN is set, a ShortPlanFilter on ``logger`` (once);
    True if the short plan is on."""
    if not any(isinstance(f, PlanCostFilter) for f in logger.filters):
        logger.addFilter(PlanCostFilter(cores))
    if os.environ.get(ENV_FULL_PLAN, "").strip() not in ("", "0"):
        return False
    if not any(isinstance(f, ShortPlanFilter) for f in logger.filters):
        logger.addFilter(ShortPlanFilter())
    return True


# ---- progress lines, read from the training jobs' logs

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
        """Update from one log line; True if it was a Trainer line."""
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
        """How much of its training the log has reached (1 once ended)."""
        if self.ended:
            return 1.0
        if not self.epoch:
            return 0.0
        epoch, epochs = map(int, self.epoch.split("/"))
        batch, batches = (1, 1) if self.batch == "end" else map(int, self.batch.split("/"))
        return min(1.0, (epoch - 1 + batch / max(batches, 1)) / max(epochs, 1))

    def line(self, name: str) -> str:
        parts = [f"epoch {self.epoch}", self.batch not in ("", "end") and f"batch {self.batch}",
                 self.tok_s is not None and f"{self.tok_s:,} tok/s", self.eta and f"ETA {self.eta}",
                 self.valid_ppl and f"last valid ppl {self.valid_ppl}"]
        return f"progress {name}: " + ", ".join(p for p in parts if p)


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
    """Every ``interval`` s, one line (``emit``) per running job whose log under ``logs_dir`` gained Trainer lines,
    then one for the whole run when ``plan`` (its jobs with an estimate) is given."""

    def __init__(self, logs_dir: str | Path, emit: Callable[[str], None], interval: float = DEFAULT_INTERVAL,
                 plan: Iterable[PlannedJob] = (), cores: int | None = None):
        self.logs_dir, self.emit, self.interval = Path(logs_dir), emit, interval
        self.plan = [PlannedJob(j.log and Path(j.log).absolute(), j.minutes, tuple(map(Path, j.outputs)))
                     for j in plan]
        self.cores = cores
        self.followers: dict[Path, LogFollower] = {}
        self.started = time.time()
        self._stop = threading.Event()

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
        """Whether the job wrote all its outputs since the run started."""
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
        threading.Thread(target=self._loop, name="replicate-progress", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()


def start(logs_dir: str | Path, emit: Callable[[str], None], plan: Iterable[PlannedJob] = (),
          cores: int | None = None) -> ProgressWatcher | None:
    """A started watcher of ``logs_dir`` every REPLICATE_PROGRESS_SECONDS (default 60), None when that is 0 or less."""
    text = os.environ.get(ENV_INTERVAL, "").strip()
    try:
        interval = float(text) if text else DEFAULT_INTERVAL
    except ValueError:
        raise ReplicateError(f"{ENV_INTERVAL}={text!r} is not a number of seconds",
                             f"set {ENV_INTERVAL} to e.g. 60, or 0 to turn the progress lines off") from None
    return ProgressWatcher(logs_dir, emit, interval, plan, cores).start() if interval > 0 else None


def planned(jobs: Iterable) -> list[PlannedJob]:
    """The PlannedJob of each Snakemake job with an estimate (resource ``one_thread_min``) among ``jobs``."""
    return [PlannedJob(Path(job.log[0]) if job.log else None, float(job.resources["one_thread_min"]),
                      tuple(Path(p) for p in job.output))
            for job in jobs if job.resources.get("one_thread_min") is not None]
