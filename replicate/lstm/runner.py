"""One training run from a flat spec: what the CLI and other experiments call.

``spec`` = {"name": str, "settings": {"size": ..., **overrides}, "config": <resolved config slice
for provenance>}. Writes ``out_dir/metrics.json`` (with provenance), ``history.csv`` and
``checkpoint.pt`` (kept so that rerunning the target resumes or only re-evaluates).

Before a resume, the checkpoint is checked against its checksum (``checkpoint.pt.sha256``, written by
``replicate.io.torch_save``); a checkpoint written before checksums resumes unchecked, and says so. Before
each checkpoint save, the checkpoint it replaces is kept as ``checkpoint.prev.pt`` (when its checksum checks),
so a checkpoint garbled later has an intact one beside it; a finished run drops it. Before
``metrics.json`` is written, every number of the result must be finite: a run whose perplexity overflowed
(it diverged) fails with a named error and writes no result. A run stopped by a numerical fault records it in
``fault.json``; a rerun with the same fingerprint would resume the kept checkpoint and hit the same fault, so
it is refused until a setting changes or the file is deleted. ``stop_at_batch_end``: SIGINT and SIGTERM stop a
training job after a checkpoint at the end of its current batch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pandas as pd

from replicate import devices, provenance
from replicate import io as rio
from replicate.errors import ReplicateError
from replicate.finite import nonfinite_keys, not_finite
from replicate.lstm import kernels
from replicate.lstm.config import resolve
from replicate.lstm.model import LSTMLM
from replicate.lstm.train import CHECKPOINT, HISTORY, Trainer, seed_everything

# settings that do not change the trained weights: a checkpoint stays valid when they change
NOT_MATH = ("checkpoint_minutes", "log_every", "eval_window", "eval_max_tokens")
FAULT = "fault.json"  # the numerical fault that stopped the run's last attempt
PREVIOUS = "checkpoint.prev.pt"  # the checkpoint before the current one, while the run trains


class NumericalFault(ReplicateError):
    """A run stopped by a non-finite loss, gradient, weight or result."""


def build(settings: dict[str, Any], vocab_size: int):
    """(model, model_cfg, train_cfg) from settings; the model is initialised from the run's seed."""
    model_cfg, train_cfg = resolve(settings, vocab_size)
    seed_everything(train_cfg.seed)
    return LSTMLM(model_cfg), model_cfg, train_cfg


def train_run(spec: dict[str, Any], corpus, out_dir: str | Path, threads: int | None = None,
              device: str = "auto", allow_tf32: bool = False, log=print, trainer_cls: type[Trainer] = Trainer,
              **hooks) -> dict[str, Any]:
    """Train (or resume) one run and write its outputs; ``hooks`` go to the trainer (extra_loss, on_epoch,
    on_step, and what a ``trainer_cls`` subclass adds, e.g. the scale study's early stopping)."""
    started = provenance.now()
    # what this process computes with, read once at the start (the checkout may change while it trains)
    git = provenance.git_state()
    math, fast = provenance.code_modules(Trainer)  # the Trainer and what it imports; its kernels apart
    versions = {"code_version": provenance.source_hash(*math), "kernel_version": provenance.source_hash(*fast),
                "kernels": kernels.backend()}
    dev = devices.resolve_device(device)
    devices.setup(threads, allow_tf32)
    model, model_cfg, train_cfg = build(spec["settings"], len(corpus.vocab))
    out_dir = Path(out_dir)
    resolved = {"model": dataclasses.asdict(model_cfg), "train": dataclasses.asdict(train_cfg)}
    log(f"[{spec['name']}] {model.num_parameters():,} parameters; settings {resolved}")
    fingerprint = {k: {f: v for f, v in d.items() if f not in NOT_MATH} for k, d in resolved.items()}
    # A checkpoint written by other training code is never resumed silently (a rerun after a code
    # change would otherwise serve the old code's weights under the new code's name).
    fingerprint["code_version"] = versions["code_version"]
    fault = out_dir / FAULT
    check_fault(fault, fingerprint, spec["name"])
    trainer = trainer_cls(model, train_cfg, corpus.train, corpus.valid, corpus.test, run_dir=out_dir,
                          name=spec["name"], device=dev, log=log, fingerprint=fingerprint, **hooks)
    check_checkpoint(out_dir / CHECKPOINT, spec["name"], log)
    keep_previous_checkpoint(trainer)
    with faults_recorded(trainer, fault):
        metrics = trainer.run()
        check_finite(spec["name"], metrics, train_cfg)
    result = {"run": spec["name"], "settings": spec["settings"], "resolved": resolved, **metrics,
              **versions, "provenance": provenance.collect(spec.get("config", spec), started, str(dev), git)}
    # The trainer writes history.csv after every epoch; a rerun that resumes a finished checkpoint only
    # re-evaluates, so write it here too (Snakemake deletes a job's outputs before it reruns the job).
    rio.write_csv(out_dir / HISTORY, pd.DataFrame(metrics["history"]))
    rio.write_json(out_dir / "metrics.json", result)
    fault.unlink(missing_ok=True)  # a fault of other settings or code, superseded
    for path in (out_dir / PREVIOUS, rio.checksum_path(out_dir / PREVIOUS)):  # the finished run needs only its last
        path.unlink(missing_ok=True)
    log(f"[{spec['name']}] done: train {metrics['train_ppl']:.2f} (clean {metrics['train_clean_ppl']:.2f}) "
        f"valid {metrics['valid_ppl']:.2f} test {metrics['test_ppl']:.2f}")
    return result


def check_checkpoint(path: Path, name: str, log=print) -> None:
    """Refuse to resume from a checkpoint whose bytes are not those its checksum file records (garbled on
    disk or in a copy); a checkpoint without a checksum file (written before they were) resumes unchecked."""
    status = rio.checksum_status(path) if path.is_file() else True
    if status is None:
        log(f"[{name}] {path} has no checksum ({rio.checksum_path(path).name}: written before checkpoints carried "
            "one); resuming from it unchecked")
    elif not status:
        sidecar, previous = rio.checksum_path(path), path.with_name(PREVIOUS)
        back = (f"to resume from the checkpoint before it (intact: its checksum checks), move {previous} and its "
                f"{rio.checksum_path(previous).name} over {path.name} and {sidecar.name}; "
                if previous.is_file() and rio.checksum_status(previous) else "")
        raise ReplicateError(f"run {name}: checkpoint {path} does not match its checksum in {sidecar} (its bytes "
                             "changed after it was written: a disk or copy fault, or an edit); not resumed",
                             f"{back}delete {path} and {sidecar} to train the run from scratch; or, to resume from "
                             f"this checkpoint anyway, delete {sidecar} only (it then resumes unchecked)")


def keep_previous_checkpoint(trainer: Trainer) -> None:
    """Before each of the trainer's checkpoint saves, keep the checkpoint it replaces, if intact, as
    ``checkpoint.prev.pt`` with its checksum file (hard links: the save writes a new file, so no bytes are copied)."""
    save, current = trainer.save_checkpoint, trainer.checkpoint_path
    if current is None:
        return
    previous = current.with_name(PREVIOUS)

    def save_keeping_previous() -> None:
        if current.is_file() and rio.checksum_status(current):
            for src, dst in ((rio.checksum_path(current), rio.checksum_path(previous)), (current, previous)):
                tmp = dst.with_name(dst.name + ".link")
                tmp.unlink(missing_ok=True)
                os.link(src, tmp)
                os.replace(tmp, dst)
        save()

    trainer.save_checkpoint = save_keeping_previous


# the numbers of a result that must be finite (per epoch: HISTORY_METRICS of each history row)
FINAL_METRICS = ("train_ppl", "train_clean_ppl", "valid_ppl", "test_ppl", "train_tokens_per_s")
HISTORY_METRICS = ("train_ppl", "valid_ppl")


def check_finite(name: str, metrics: dict[str, Any], train_cfg, output: str = "metrics.json") -> None:
    """Raise a NumericalFault naming the metric when a number of the result is not finite (a perplexity
    overflows to inf once the mean loss passes ~709 nats: the run diverged); ``output`` is not written then."""
    bad = nonfinite_keys(metrics, FINAL_METRICS)
    bad += [f"{k} of epoch {row.get('epoch')} = {row.get(k)}" for row in metrics.get("history") or []
            for k in HISTORY_METRICS if not_finite(row.get(k))]
    if bad:
        listed = ", ".join(bad[:4]) + (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
        raise NumericalFault(f"run {name}: non-finite result ({listed}): the run diverged (lr {train_cfg.lr:g}, "
                             f"clip {train_cfg.clip:g}); no {output} is written",
                             "lower the learning rate or the clip value (for a Press & Wolf cell: @lr=... or "
                             "@clip=..., its own run folder); a rerun with the same settings resumes the kept "
                             "checkpoint and ends the same way, so delete the run folder first")


# how to go on after a numerical fault: change what moves the trajectory, or retry deliberately
CHANGE = ("lower the learning rate or the clip value (for a Press & Wolf cell @lr=... or @clip=..., a run folder of "
          "its own), or check the data")


@contextlib.contextmanager
def faults_recorded(trainer: Trainer, path: Path):
    """Record in ``path`` (fault.json: the fault, the trainer's fingerprint, the checkpoint kept) a numerical
    fault that stops the block: the Trainer's own (``_fault``) or a NumericalFault; a rerun under the same
    fingerprint is then refused (``check_fault``)."""
    fault = trainer._fault  # noqa: SLF001 - the Trainer's numerical faults, raised as ReplicateError

    def numerical(what: str) -> None:
        try:
            fault(what)
        except ReplicateError as exc:
            raise NumericalFault(exc.cause, exc.fix) from None

    trainer._fault = numerical
    try:
        yield
    except NumericalFault as exc:
        kept = trainer.checkpoint_path
        rio.write_json(path, {"fault": exc.cause, "checkpoint": str(kept) if kept.is_file() else None,
                              "fingerprint": _as_json(trainer.fingerprint), "when": provenance.now()})
        raise ReplicateError(exc.cause, f"{CHANGE}. A rerun of the same settings and code is refused ({path} "
                             "records this fault: it would hit it again); delete that file to retry anyway") from None


def check_fault(path: Path, fingerprint: dict, name: str) -> None:
    """Refuse a rerun whose last attempt stopped on a numerical fault under the same fingerprint (settings and
    code): training is deterministic, so resuming its checkpoint would end in the same fault."""
    record = rio.read_json(path) if path.is_file() else {}
    if not record or record.get("fingerprint") != _as_json(fingerprint):
        return
    kept = f"resume its checkpoint {record['checkpoint']}" if record.get("checkpoint") else "train from scratch"
    raise ReplicateError(f"run {name} is not rerun: its last attempt ({record.get('when')}) stopped on a numerical "
                         f"fault, and with the same settings and code it would {kept} and hit it again. The fault: "
                         f"{record['fault']}", f"{CHANGE}; or delete {path} to retry anyway")


def _as_json(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


@contextlib.contextmanager
def stop_at_batch_end():
    """While this block runs, SIGINT and SIGTERM stop a training job after a checkpoint at the end of the current
    batch, so an interrupt or a cluster preemption loses at most one batch, and the rerun resumes bit-identically.

    The signal only asks the Trainer on the interrupted call stack for that checkpoint: its ``checkpoint_minutes``
    (not in the fingerprint) becomes 0, and it stops after its next mid-epoch checkpoint (or, if the epoch ends
    first, after the next epoch's first batch or before the final evaluation) the way the signal's previous handler
    does (KeyboardInterrupt, or the attempt's ``Terminated``; exit status 128 + signal without one). A second
    signal, or one with no Trainer training (set-up, the final evaluation, writing results), stops at once."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers: the main thread only
        yield
        return
    previous = {s: handler for s in (signal.SIGINT, signal.SIGTERM)
                if (handler := signal.getsignal(s)) is not signal.SIG_IGN}
    asked = []

    def stop(signum: int) -> None:
        handler = previous[signum]
        if callable(handler):
            handler(signum, None)
        raise SystemExit(128 + signum)

    def on_signal(signum: int, frame) -> None:
        trainer = None if asked else _training(frame)
        if trainer is None:
            stop(signum)
        asked.append((trainer.epoch + 1, trainer.batch))
        name, save = signal.Signals(signum).name, trainer.save_checkpoint

        def save_then_stop() -> None:
            save()
            if trainer.batch:  # a mid-epoch checkpoint (an epoch's own is followed by its on_epoch hook's)
                trainer.log(f"[{trainer.name}] {name}: stopped after a checkpoint at epoch {trainer.epoch + 1}, "
                            f"batch {trainer.batch} (the signal came at epoch {asked[0][0]}, batch {asked[0][1]})")
                stop(signum)

        def stop_before_evaluation() -> None:
            trainer.log(f"[{trainer.name}] {name}: stopped before the final evaluation (the checkpoint holds all "
                        f"{trainer.epoch} epochs)")
            stop(signum)

        trainer.cfg.checkpoint_minutes = 0
        trainer.save_checkpoint, trainer.final_metrics = save_then_stop, stop_before_evaluation

    for signum in previous:
        signal.signal(signum, on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _training(frame) -> Trainer | None:
    """The Trainer with a checkpoint folder that the interrupted call stack (innermost ``frame``) trains with;
    None if there is none or it is in its final evaluation (then everything trained is saved already)."""
    trainer = None
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, Trainer):
            if frame.f_code.co_name == "final_metrics":
                return None
            trainer = trainer or owner
        frame = frame.f_back
    return trainer if trainer is not None and trainer.checkpoint_path is not None else None
