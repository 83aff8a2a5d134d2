"""Command line entry point: ``python -m replicate <command> ...`` (what the rules call).

Each command lives in its own module with a ``main(argv) -> int``; only the module of the
command being run is imported, so light commands start fast.
"""

from __future__ import annotations

import errno
import importlib
import sys

from replicate.errors import ReplicateError

COMMANDS = {
    "train": ("replicate.train_cli", "train (or resume) one run of an experiment: train <experiment> <run_id>"),
    "data": ("replicate.data_cli", "fetch, prepare and summarise the data sets"),
    "initial-loss": ("replicate.initial_loss.cli", "initial-loss sweep (Llama-style transformer), theory, model families"),
    "report": ("replicate.report.cli", "assemble results/report/{report.md,index.html}"),
    "press-wolf": ("replicate.press_wolf.cli", "Press & Wolf / Zaremba LSTM LMs: train, table, bench"),
    "inan": ("replicate.inan.cli", "Inan et al.: AL / RE / REAL Table 1, tau x alpha ablation, section 6.2"),
    "scale": ("replicate.scale.cli", "embedding analysis and the when-does-tying-pay-off scale study"),
    "publish": ("replicate.publish.cli", "copy a run's finished results into the tracked bundle paper/measured"),
    "compare-results": ("replicate.compare", "compare two results folders, timings and provenance aside"),
    "check-config": ("replicate.config_check", "check config files as --configfile reads them (file, line, value)"),
    "costs": ("replicate.costs", "a plan's estimated one-thread CPU hours per experiment (any targets and config)"),
}


def _usage() -> str:
    lines = ["usage: python -m replicate <command> [options]", "", "commands:"]
    lines += [f"  {name:<16} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run `python -m replicate <command> --help` for the options of one command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"error: unknown command {argv[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    try:
        return int(module.main(argv[1:]) or 0)
    except ReplicateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"error: {disk_full(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted_line(argv), file=sys.stderr)
        return 130


def disk_full(exc: OSError) -> ReplicateError:
    """A full disk (or quota) while a command wrote: named, with what the atomic writers (replicate/io.py)
    left behind: the file being written keeps its previous version."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return ReplicateError(f"no space left on the device{where} ({exc.strerror}); every file written through "
                          "replicate/io.py keeps its previous version (a checkpoint, a result), none is truncated",
                          "free space (or raise the quota) and rerun the same command or target: training "
                          "resumes from the last checkpoint")


def interrupted_line(argv: list[str]) -> str:
    """The one line a job prints on Ctrl-C instead of a traceback: where it stopped, how to resume."""
    from replicate.cli_common import last_logged

    where = last_logged() or "before its first log line"
    return (f"interrupted (Ctrl-C): python -m replicate {' '.join(argv[:2])} stopped at: {where}; to resume, run "
            "the same snakemake command again (a training run goes on from its last checkpoint: the one it wrote at "
            "the end of the batch it was in, unless a second Ctrl-C stopped it at once)")
