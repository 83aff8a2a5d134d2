"""Early stopping on top of the LSTM engine: each run trains until its valid perplexity has not improved for
``patience`` epochs, or until the epoch cap (the engine's ``epochs``), whichever comes first.

The engine is unchanged (its modules are hashed into every result). The rule is a selection on top of it:
the learning rate of an epoch depends only on the epoch's index (``lstm.config.lr_at``), so the trajectory
of a run up to epoch k does not depend on when it stops, and stopping is decided from the run's own
history after every epoch. Resume is therefore exact: a killed run resumes from the engine's checkpoint
(bit-identical on CPU, the engine's own guarantee), and a rerun of a run that already stopped finds the
stop in its checkpoint's history and trains no further epoch. The patience is not part of the
checkpoint's fingerprint, on purpose: a rerun with a larger patience continues the same trajectory.

With ``anneal`` (a factor > 1) the learning rate is also annealed on plateau, as pytorch/examples
``word_language_model`` does (its factor is 4): every epoch that brings no new best valid perplexity divides
the lr of all later epochs by the factor. The lr of an epoch is then a function of the run's own history
before it (``annealed_lr``), so the trajectory still does not depend on when the run stops, a resumed run
recomputes the same lr from its checkpoint's history, and the factor is part of the checkpoint's fingerprint.
Without it, a run held at lr 1 stops on the epoch-to-epoch noise of SGD at a high lr, not at its best.

Reported: the epoch it stopped at, the best epoch (lowest valid perplexity, the earliest of ties), and why
it stopped (``patience`` or ``cap``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from replicate.errors import ReplicateError
from replicate.lstm.train import Trainer, seed_everything

PATIENCE, CAP = "patience", "cap"


def best_epoch(history: list[dict]) -> tuple[int | None, float]:
    """(1-based epoch, valid ppl) of the lowest valid perplexity in ``history``; the earliest of ties."""
    best, best_e = math.inf, None
    for row in history:
        v = row.get("valid_ppl")
        if v is not None and v < best:
            best, best_e = float(v), int(row["epoch"])
    return best_e, best


def stop_reason(history: list[dict], patience: int | None, cap: int) -> str | None:
    """Why a run with this history stops now: ``patience`` when its last ``patience`` epochs brought no new
    best valid perplexity, ``cap`` when it has trained ``cap`` epochs, None while it goes on. At the cap a
    run that has also run out of patience counts as stopped by patience (it had stopped improving)."""
    if patience is not None and int(patience) < 1:
        raise ReplicateError(f"patience {patience} is below 1", "use a whole number of epochs >= 1, or none")
    done = len(history)
    best_e, _ = best_epoch(history)
    if patience is not None and best_e is not None and done - best_e >= int(patience):
        return PATIENCE
    if done >= cap:
        return CAP
    return None


def annealed_lr(history: list[dict], lr: float, factor: float) -> float:
    """The lr of the next epoch: ``lr`` divided by ``factor`` once for every epoch in ``history`` that brought
    no new best (lowest so far) valid perplexity."""
    if not factor > 1:
        raise ReplicateError(f"anneal factor {factor} is not above 1", "use a factor > 1 (4 in word_language_model), "
                             "or none for the engine's own schedule")
    best, plateaus = math.inf, 0
    for row in history:
        v = row.get("valid_ppl")
        if v is not None and v < best:
            best = float(v)
        else:
            plateaus += 1
    return lr / factor ** plateaus


def stopping_record(history: list[dict], patience: int | None, cap: int) -> dict[str, Any]:
    """What a run's outputs record about its stop: epochs trained, best epoch and valid ppl, the reason."""
    best_e, best = best_epoch(history)
    return {"patience": patience, "max_epochs": int(cap), "stopped_epoch": len(history), "best_epoch": best_e,
            "best_valid_ppl": best if best_e is not None else None,
            "stop_reason": stop_reason(history, patience, cap)}


class StoppingTrainer(Trainer):
    """The engine's Trainer whose ``run`` stops by ``stop_reason`` (same loop as ``Trainer.run`` otherwise);
    pass it as ``replicate.lstm.runner.train_run(..., trainer_cls=StoppingTrainer, patience=N, anneal=F)``."""

    def __init__(self, *args, patience: int | None = None, anneal: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.patience, self.anneal, self.base_lr = patience, anneal, self.cfg.lr
        if anneal is not None:  # another factor is another trajectory: never resumed from this one's checkpoint
            self.fingerprint = {**(self.fingerprint or {}), "anneal": float(anneal)}

    def run(self) -> dict:
        """As ``Trainer.run``, but stops by ``stop_reason`` and, with ``anneal``, sets each epoch's lr first."""
        if not self.try_resume():
            seed_everything(self.cfg.seed)
            if self.on_epoch is not None:
                self.on_epoch(0, self.model, None)
        while stop_reason(self.history, self.patience, self.cfg.epochs) is None:
            if self.anneal is not None:  # the engine reads the lr of an epoch from cfg (lstm.config.lr_at)
                self.cfg = dataclasses.replace(self.cfg, lr=annealed_lr(self.history, self.base_lr, self.anneal))
            record = self.train_epoch()
            if self.on_epoch is not None:
                self.on_epoch(self.epoch, self.model, record)
                if hasattr(self.on_epoch, "state_dict"):  # as Trainer.run: keep this epoch's callback state
                    self.save_checkpoint()
        metrics = self.final_metrics()
        metrics["stopping"] = s = stopping_record(self.history, self.patience, self.cfg.epochs)
        self.log(f"[{self.name}] stopped after epoch {s['stopped_epoch']} ({s['stop_reason']}; best epoch "
                 f"{s['best_epoch']}, valid {s['best_valid_ppl']:.2f})")
        return metrics
