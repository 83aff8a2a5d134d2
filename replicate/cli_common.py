"""What the experiments' commands share: job arguments, the ``--spec`` JSON, log lines, and a CSV written
with its provenance file."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from replicate import io as rio
from replicate import provenance
from replicate.errors import ReplicateError


SPEC_SOURCE = ("Every job's spec in full: REPLICATE_FULL_PLAN=1 snakemake -n -p TARGET; every key, its type and "
               "range: config/README.md (schemas: workflow/schemas/)")


def add_job_args(parser: argparse.ArgumentParser, *, threads: bool = True,
                 spec_help: str = "JSON spec, as the rule builds it") -> argparse.ArgumentParser:
    """``--spec``; ``threads``: ``--threads``."""
    parser.add_argument("--spec", required=True, help=f"{spec_help}. {SPEC_SOURCE}")
    if threads:
        parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    return parser


def load_spec(text: str, section: str | None = None) -> dict[str, Any]:
    """The ``--spec`` JSON; ``section``: a key it must have."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplicateError(f"--spec is not valid JSON ({exc})", "pass the rule's {params.spec:q}") from exc
    if section is not None and section not in spec:
        raise ReplicateError(f"--spec lacks the {section} section", "pass run_config(...) from the rule")
    return spec


_last_logged = [""]


def log(line: str) -> None:
    """One log line, flushed at once (a job's log is read while it runs)."""
    print(line, flush=True)
    _last_logged[0] = line


def last_logged() -> str:
    """The last line ``log`` wrote in this process ('' if none): where an interrupted job stopped."""
    return _last_logged[0]


ATTEMPT_LOG = "train.log"


class Terminated(BaseException):
    """SIGTERM (a cluster time limit or preemption, snakemake stopping) turned into an exception, so that the
    attempt log records how the attempt ended; the atomic writers never leave a half-written file either way."""


def keep_freed_memory() -> bool:
    """Have glibc's malloc serve every allocation from its heap and keep what is freed for the next one.

    A training step allocates and frees the same large arrays (logits, softmax, gathered rows) at every
    step. By default glibc maps each array above 128 KiB (up to 32 MiB, adaptively) afresh and unmaps it
    when freed, and the kernel zero-fills every page again on first touch: measured on a 2-core machine,
    a 28 MB gather took 9-18 ms instead of 1.5 ms, and Inan's +AL step ran 25 % faster with this policy.
    Speed only: no number changes. Returns whether it is set (False where the C library is not glibc)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_max = -1, -4  # glibc's malloc.h
    return bool(mallopt(m_mmap_max, 0)) and bool(mallopt(m_trim_threshold, 2**31 - 1))


@contextlib.contextmanager
def training_attempt(out_dir: str | Path, drop_checkpoint: bool = False) -> Iterator[Callable[[str], None]]:
    """One attempt of one training run: yields a ``log`` that also appends every line to
    ``out_dir/train.log`` under a header for this attempt, and a closing line (finished, interrupted,
    terminated or failed) after it. Snakemake deletes a job's ``log:`` file before each attempt; the run
    folder's ``train.log`` keeps all of them. ``drop_checkpoint``: delete ``checkpoint.pt`` once finished.
    SIGINT and SIGTERM stop the training after a checkpoint at the end of its current batch (a second one at
    once): ``replicate.lstm.runner.stop_at_batch_end``."""
    # the engine's file name and its clean stop (a training command imports torch anyway)
    from replicate.lstm.runner import stop_at_batch_end
    from replicate.lstm.train import CHECKPOINT

    keep_freed_memory()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ATTEMPT_LOG
    previous = path.read_text(errors="replace") if path.is_file() else ""
    number = len(re.findall(r"^=== attempt \d+ started ", previous, flags=re.MULTILINE)) + 1
    git = provenance.git_state()
    commit = (git["commit"] or "no git")[:12] + ("+uncommitted" if git["dirty"] else "")
    resumes = "resumes from checkpoint.pt" if (out / CHECKPOINT).is_file() else "starts from scratch"
    with open(path, "a", encoding="utf-8") as fh:
        def attempt_log(line: str) -> None:
            log(line)
            fh.write(line + "\n")
            fh.flush()

        fh.write(f"\n=== attempt {number} started {provenance.now()} · {socket.gethostname()} pid {os.getpid()} · "
                 f"code {commit} · {resumes} ===\n")
        fh.flush()

        def on_term(signum, frame):  # noqa: ARG001 - signal handler signature
            raise Terminated()

        main_thread = threading.current_thread() is threading.main_thread()  # signals: main thread only
        old = signal.signal(signal.SIGTERM, on_term) if main_thread else None
        try:
            with stop_at_batch_end():
                yield attempt_log
            if drop_checkpoint:
                (out / CHECKPOINT).unlink(missing_ok=True)
                rio.checksum_path(out / CHECKPOINT).unlink(missing_ok=True)
            ending = "finished" + (" (checkpoint.pt deleted: --drop-checkpoint)" if drop_checkpoint else "")
        except KeyboardInterrupt:
            ending = "interrupted (Ctrl-C); rerun the target to resume from the last checkpoint"
            raise
        except Terminated:
            ending = "terminated (SIGTERM); rerun the target to resume from the last checkpoint"
            raise SystemExit(143) from None
        except BaseException as exc:
            ending = f"failed: {type(exc).__name__}: {exc}"
            raise
        finally:
            if main_thread:
                signal.signal(signal.SIGTERM, old)
            fh.write(f"=== attempt {number} ended {provenance.now()}: {ending} ===\n")


def write_csv_with_provenance(path, frame, config: Any, started: str, device: str | None = None,
                              **fields: Any) -> None:
    """``frame`` as CSV at ``path``, and ``<path>.provenance.json`` with ``fields`` and the provenance block."""
    rio.write_csv(path, frame)
    rio.write_json(f"{path}.provenance.json", {**fields, "provenance": provenance.collect(config, started, device)})
