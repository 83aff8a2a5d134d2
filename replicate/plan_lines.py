"""Short lines in Snakemake's console plan: a logging filter the Snakefile puts on Snakemake's logger.

A job's run spec travels on its command line (``--spec '<JSON>'``, the rule's ``params.spec``, which is
also its rerun trigger) and aggregation rules read dozens of files, so the plain plan had lines of
thousands of characters. The filter rewrites only what is *printed*; what runs and what Snakemake
compares to decide a rerun are untouched:

- a JSON spec in a printed command becomes ``<spec sha256 0123456789ab, N chars>`` (the hash changes
  whenever the spec does), a run of file paths in it (an aggregation's inputs) its first few and a count,
  and a command still over ``MAX_LINE`` characters is continued over lines (`` \\``), one option a line;
- a job's input, output and log lists and the file lists in its reason keep their first files and say
  how many more there are; a training job whose run folder holds a checkpoint adds where it resumes to its
  reason ("resumes from .../checkpoint.pt at epoch 2, batch 106");
- any other plain line longer than ``MAX_LINE`` is wrapped, and a spec in it (a failed command) shortened;
- a job that Ctrl-C or SIGTERM stopped prints one line (its rule, output, log and how to resume) instead of a
  RuleException / CalledProcessError block and an "Error in rule" block, and the closing WorkflowError says
  how to resume.

``REPLICATE_FULL_PLAN=1`` turns it off (full commands, e.g. to copy a spec)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import textwrap
from pathlib import Path

ENV_FULL_PLAN = "REPLICATE_FULL_PLAN"
MAX_LINE = 400
KEEP_FILES = 3
SPEC_MIN_CHARS = 80  # a quoted JSON object shorter than this is printed as it is

# a single-quoted JSON object as shlex.quote writes it (a quote inside is closed, escaped, reopened)
_QUOTED_JSON = re.compile(r"'\{(?:[^']|'\"'\"')*\}'")
INTERRUPTED = "Terminating processes on user request"  # Snakemake's line when Ctrl-C stops a run
# how a job's command ends when a signal stopped it: killed by it, or (our commands) exit 130 / 143 on it
_STOPPED = re.compile(r"died with <Signals\.(SIGINT|SIGTERM): \d+>|returned non-zero exit status (130|143)\b")
_HOW = {"SIGINT": "Ctrl-C", "130": "Ctrl-C", "SIGTERM": "SIGTERM", "143": "SIGTERM"}
RESUME = "to resume, run the same snakemake command again"
DRY_RUN = "This was a dry-run"  # Snakemake's last line of a plan (-n)
CHECKPOINT = "checkpoint.pt"  # replicate.lstm.train.CHECKPOINT (not imported here: it imports torch)


SPEC_MARK = "<spec sha256 "


def spec_placeholder(spec_text: str) -> str:
    """The printed stand-in of a JSON spec: its sha256 prefix (changes with any setting) and length."""
    digest = hashlib.sha256(spec_text.encode()).hexdigest()[:12]
    return f"{SPEC_MARK}{digest}, {len(spec_text):,} chars>"


def shorten_specs(text: str) -> str:
    """``text`` with every long quoted JSON object replaced by its spec_placeholder."""

    def replace(match: re.Match) -> str:
        word = match.group(0)
        if len(word) < SPEC_MIN_CHARS:
            return word
        return spec_placeholder(word[1:-1].replace("'\"'\"'", "'"))  # shlex.quote undone

    return _QUOTED_JSON.sub(replace, text)


def shorten_command(cmd: str) -> str:
    """``cmd`` with its specs shortened (shorten_specs) and every run of file paths (an aggregation's
    inputs) shortened like shorten_files."""
    words, run = [], []
    for word in [*shorten_specs(cmd).split(" "), None]:
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


def shorten_reason(reason: str, keep: int = KEEP_FILES) -> str:
    """A Snakemake reason ("Missing output files: a, b; Input files updated by another job: c, d, e")
    with each file list shortened."""
    parts = []
    for part in reason.split("; "):
        label, sep, files = part.partition(": ")
        parts.append(f"{label}{sep}{', '.join(shorten_files(files.split(', '), keep))}" if sep else part)
    return "; ".join(parts)


def resume_note(outputs: list[str]) -> str:
    """Where a job resumes, for the reason of a job whose output's folder (a training run's) holds a checkpoint:
    "; resumes from <path> at epoch E, batch B", as the trainer logs it when it resumes; else ''."""
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
    out = []
    for line in text.split("\n"):
        if len(line) <= MAX_LINE:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(textwrap.fill(line.strip(), width, initial_indent=indent, subsequent_indent=indent,
                                 break_on_hyphens=False))
    return "\n".join(out)


class ShortPlanFilter(logging.Filter):
    """Rewrites Snakemake's job-info, shell-command, job-error and plain records to short lines. A job that
    Ctrl-C or SIGTERM stopped (after Snakemake's Ctrl-C line, or a command that died of / exited on the
    signal) gives one line naming its log instead of its error blocks (the job printed its own one-line
    summary there: replicate/cli.py); the only records dropped are those blocks' exception text."""

    def __init__(self):
        super().__init__()
        self.interrupted = False  # Snakemake said Ctrl-C stopped the run
        self.how: str | None = None  # the signal that stopped the job whose "Error in rule" comes next
        self.stopped = 0  # jobs reported stopped
        self.output: str | None = None  # the first output of the job whose command comes next

    def filter(self, record: logging.LogRecord) -> bool:
        event = str(getattr(record, "event", "") or "")
        if event == "job_info":
            outputs = getattr(record, "output", None)
            self.output = outputs[0] if isinstance(outputs, list) and outputs else None
            if isinstance(getattr(record, "reason", None), str):
                record.reason = shorten_reason(record.reason) + resume_note(outputs if isinstance(outputs, list) else [])
            for key in ("input", "output", "log"):
                if isinstance(getattr(record, key, None), list):
                    setattr(record, key, shorten_files(getattr(record, key)))
        elif event == "shellcmd":
            if isinstance(getattr(record, "shellcmd", None), str):
                record.shellcmd = self._copyable(shorten_command(record.shellcmd))
            if isinstance(record.msg, str):
                record.msg = self._copyable(shorten_command(record.msg))
        elif event == "job_error":
            if isinstance(getattr(record, "shellcmd", None), str):
                record.shellcmd = shorten_specs(record.shellcmd)
            if self.interrupted or self.how:
                self._one_line(record, self.how or "Ctrl-C")
        elif event in ("", "error") and isinstance(record.msg, str) and not record.args:  # plain lines, errors
            self.interrupted |= record.msg.startswith(INTERRUPTED)
            exception = getattr(record, "exception", None)
            if exception == "RuleException" and (m := _STOPPED.search(record.msg)):
                self.how = _HOW[m.group(1) or m.group(2)]
                return False  # the job's "Error in rule" record says it in one line
            if exception == "WorkflowError" and self.stopped and "did not complete" in record.msg:
                record.msg = f"stopped: {self.stopped} job(s) interrupted; {RESUME} (training resumes from its " \
                             "last checkpoint)"
            record.msg = wrap_long_lines(shorten_specs(record.msg))
        return True

    def _copyable(self, cmd: str) -> str:
        """A command whose spec was shortened cannot be pasted: add the one that reruns the job."""
        if SPEC_MARK not in cmd or not self.output:
            return cmd
        return f"{cmd}\n    rerun this job alone: snakemake --cores 1 --force {self.output}"

    def _one_line(self, record: logging.LogRecord, how: str) -> None:
        """Turn a stopped job's "Error in rule" record into one plain line."""
        output = shorten_files(list(getattr(record, "output", None) or []), keep=1)
        log = ", ".join(getattr(record, "log", None) or []) or "none"
        record.event, record.args, self.how = None, None, None
        record.msg = (f"interrupted ({how}): rule {getattr(record, 'rule_name', '?')}"
                      f"{f' ({output[0]})' if output else ''}, its log: {log}; {RESUME}")
        self.stopped += 1


class PlanCostFilter(logging.Filter):
    """Adds what running the plan costs (replicate.costs.headline) above a dry run's last line, from the
    ``one_thread_min`` resource of every job the plan printed."""

    def __init__(self, cores: int | None = None):
        super().__init__()
        self.cores, self.jobs = cores, []

    def filter(self, record: logging.LogRecord) -> bool:
        if str(getattr(record, "event", "") or "") == "job_info":
            get = getattr(getattr(record, "resources", None), "get", lambda key: None)
            self.jobs.append((getattr(record, "rule_name", ""), get("one_thread_min")))
        elif isinstance(record.msg, str) and record.msg.startswith(DRY_RUN) and self.jobs:
            from replicate.costs import headline

            record.msg = f"{wrap_long_lines(headline(self.jobs, self.cores))}\n{record.msg}"
        return True


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
