"""``python -m replicate <command> ...`` (only the module of the command run is imported), and what the experiments'
commands share: the config options, log lines, a training attempt's log, a CSV written with its provenance."""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import json
import os
import re
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from replicate import io as rio
from replicate import provenance
from replicate.errors import ReplicateError

COMMANDS = {  # command -> ("module" (its main) or "module:function", help)
    "train": ("replicate.cli:train", "train (or resume) one run of an experiment: train <experiment> <run_id>"),
    "data": ("replicate.data_cli", "fetch, prepare and summarise the data sets"),
    "initial-loss": ("replicate.initial_loss.cli", "initial-loss sweep (Llama-style transformer), theory, model families"),
    "report": ("replicate.report.cli", "assemble results/report/{report.md,index.html}"),
    "press-wolf": ("replicate.press_wolf.cli", "Press & Wolf / Zaremba LSTM LMs: train, table, bench"),
    "inan": ("replicate.inan.cli", "Inan et al.: AL / RE / REAL Table 1, tau x alpha ablation, section 6.2"),
    "scale": ("replicate.scale.cli", "embedding analysis and the when-does-tying-pay-off scale study"),
    "publish": ("replicate.publish.cli", "copy a run's finished results into the tracked bundle paper/measured"),
    "compare-results": ("replicate.compare", "compare two results folders, timings and provenance aside"),
    "check-config": ("replicate.cli:check_config", "check config files as --configfile reads them (file, line, value)"),
    "costs": ("replicate.resources", "a plan's estimated one-thread CPU hours per experiment (any targets and config)"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    usage = "\n".join(["usage: python -m replicate <command> [options]", "", "commands:",
                       *(f"  {name:<16} {help_}" for name, (_, help_) in COMMANDS.items()),
                       "", "Run `python -m replicate <command> --help` for the options of one command."])
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"error: unknown command {argv[0]!r}\n\n{usage}", file=sys.stderr)
        return 2
    module, _, function = COMMANDS[argv[0]][0].partition(":")
    try:
        return int(getattr(importlib.import_module(module), function or "main")(argv[1:]) or 0)
    except ReplicateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = f" writing {exc.filename}" if exc.filename else ""
        print(f"error: no space left on the device{where} ({exc.strerror}); every file written through "
              "replicate/io.py keeps its previous version (a checkpoint, a result), none is truncated\n  fix: free "
              "space (or raise the quota) and rerun the same command or target: training resumes from the last "
              "checkpoint", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted_line(argv), file=sys.stderr)
        return 130


def interrupted_line(argv: list[str]) -> str:
    """The one line a job prints on Ctrl-C instead of a traceback: where it stopped, how to resume."""
    where = _last_logged[0] or "before its first log line"
    return (f"interrupted (Ctrl-C): python -m replicate {' '.join(argv[:2])} stopped at: {where}; to resume, run "
            "the same snakemake command again (a training run goes on from its last checkpoint: the one it wrote at "
            "the end of the batch it was in, unless a second Ctrl-C stopped it at once)")


def _config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE", help="config keys set on top")


def add_config_args(parser: argparse.ArgumentParser, files: str = "default config/config.yaml") -> None:
    """``--configfile F ... --config K=V ...``: the snakemake command's (a rule passes its ``{CONFIG_ARGS}``)."""
    parser.add_argument("--configfile", nargs="+", default=None, metavar="F",
                        help=f"config files, later ones win ({files}); every key: config/README.md")
    _config_args(parser)


def load_view(args: argparse.Namespace, view: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """``view`` of the config of ``args`` (read and checked as ``train`` reads it): the rule's ``spec`` param, keys
    sorted as there (what the job's provenance records)."""
    from replicate import experiments

    return json.loads(experiments.spec_json(view(experiments.load_config(args.configfile, args.config))))


def load_section(args: argparse.Namespace, section: str) -> dict[str, Any]:
    """The global keys and ``section`` of the config of ``args`` (``experiments.section_config``)."""
    from replicate import experiments

    return load_view(args, lambda config: experiments.section_config(config, section))


def train(argv: list[str]) -> int:
    """Train (or resume) one run an experiment declares into ``<results_dir>/<experiment>/<run_id>``, the config read
    and checked as ``snakemake --configfile F --config K=V`` reads it: the command each training rule runs."""
    from replicate import experiments, paths

    parser = argparse.ArgumentParser(prog="python -m replicate train", description=train.__doc__)
    parser.add_argument("experiment", help=", ".join(experiments.DECLARATIONS))
    parser.add_argument("run_id", help="e.g. small_wt/seed1 (press_wolf), table1/ptb/small_real (inan), "
                                       "runs/ptb/p25_h400_tied_drop0/seed1 (scale), runs/d512 (initial_loss)")
    add_config_args(parser)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the experiment's threads)")
    parser.add_argument("--device", default=None, help="auto | cpu | cuda | cuda:N (default: the config's device)")
    parser.add_argument("--allow-tf32", action="store_true", help="allow TF32 matmuls on CUDA (or config allow_tf32)")
    parser.add_argument("--drop-checkpoint", action="store_true",
                        help="delete checkpoint.pt once the results are written (what the rule passes with config "
                             "keep_final_checkpoint: false); a rerun then trains from scratch, not only re-evaluates")
    args = parser.parse_args(argv)
    config = experiments.load_config(args.configfile, args.config)
    run = experiments.resolve_run(config, args.experiment, args.run_id)
    results = Path(config["results_dir"])
    run.refuse_to_overwrite(results / run.folder / "metrics.json", forced=False)
    from replicate.data import load_corpus  # torch: after the checks

    corpus = load_corpus(results / paths.DATA_CORPUS.format(dataset=run.dataset)) if run.dataset else None
    job = {"threads": args.threads or run.threads, "device": args.device or config["device"],
           "allow_tf32": args.allow_tf32 or config["allow_tf32"]}
    attempt = training_attempt(results / run.folder, args.drop_checkpoint) if run.kind.attempt_log else None
    with attempt or contextlib.nullcontext(log) as run_log:
        experiments.declaration(args.experiment).train(run, corpus, results, run_log, **job)
    return 0


def check_config(argv: list[str]) -> int:
    """The config of ``snakemake --configfile FILE --config KEY=VALUE``, read and checked as the Snakefile does (YAML,
    schemas, every configured run's name, settings and memory estimate)."""
    from replicate.experiments import DEFAULT_CONFIGFILE, load_config

    parser = argparse.ArgumentParser(prog="python -m replicate check-config", description=check_config.__doc__)
    parser.add_argument("files", nargs="*", default=[DEFAULT_CONFIGFILE],
                        help=f"config files in --configfile order (later files win); default {DEFAULT_CONFIGFILE}")
    _config_args(parser)
    args = parser.parse_args(argv)
    load_config(args.files, args.config)
    print(f"config valid: {' + '.join(args.files)}")
    return 0


# ---- what the experiments' commands share

_last_logged = [""]  # where an interrupted job stopped


def log(line: str) -> None:
    """One log line, flushed at once (a job's log is read while it runs)."""
    print(line, flush=True)
    _last_logged[0] = line


ATTEMPT_LOG = "train.log"


class Terminated(BaseException):
    """SIGTERM (a cluster time limit, snakemake stopping) as an exception, so that the attempt log records it."""


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep freed memory (no mmap, no trim): a step's large arrays are not zero-filled afresh
    (Inan's +AL step 25 % faster; speed only). Whether it is set (False where libc is not glibc)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_max = -1, -4  # glibc's malloc.h
    return bool(mallopt(m_mmap_max, 0)) and bool(mallopt(m_trim_threshold, 2**31 - 1))


@contextlib.contextmanager
def training_attempt(out_dir: str | Path, drop_checkpoint: bool = False) -> Iterator[Callable[[str], None]]:
    """One attempt of a training run: yields a ``log`` that also appends to ``out_dir/train.log`` between a header and
    how it ended; SIGINT and SIGTERM stop at the end of a batch, after a checkpoint (deleted at the end if asked)."""
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
