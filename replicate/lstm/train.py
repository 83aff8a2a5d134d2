"""Training and evaluation exactly as the reference code (Zaremba's TF PTB tutorial / Torch code).

Per batch the loss minimised is the SUM over the unrolled steps of the batch-MEAN token NLL
(total NLL / batch size), plus the PR term and an optional extra loss; global-norm clipping of
the whole gradient, plain SGD, then weight decay as the Lua BD code (p <- p * (1 - wd), not scaled
by lr); per-epoch lr schedule (``config.lr_at``). The hidden
state starts at zero every epoch and every evaluation and is carried (detached) across windows.
Evaluation: no dropout, long windows, hidden state carried from zero; the split as ``valid_batch_size``
streams for valid and clean train (the reference scripts: the training batch) and as one stream for test.

The trainer checkpoints atomically at every epoch end and every ``checkpoint_minutes`` (model,
lr, RNG states, carried hidden state, position inside the epoch, running sums, history, callback
states); ``run()`` resumes from ``run_dir/checkpoint.pt`` and ends bit-identical to an
uninterrupted run on CPU.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from replicate import io as rio
from replicate.errors import ReplicateError
from replicate.lstm.config import TrainConfig, lr_at
from replicate.lstm.model import LSTMLM

CHECKPOINT = "checkpoint.pt"
HISTORY = "history.csv"


def batchify(data: torch.Tensor, batch_size: int) -> torch.Tensor:
    """[N] -> [N // B, B]: B contiguous streams side by side (the tail is dropped)."""
    n = data.numel() // batch_size
    return data[: n * batch_size].view(batch_size, n).t().contiguous()


def num_windows(rows: int, bptt: int) -> int:
    """Full training windows per epoch, as the reference reader: (rows - 1) // bptt."""
    return (rows - 1) // bptt


@dataclasses.dataclass
class StepInfo:
    """What ``on_step`` sees: gradients are in ``p.grad``; the step is ``p <- (p - lr * grad) * (1 - wd)``."""

    model: LSTMLM
    inputs: torch.Tensor
    targets: torch.Tensor
    lr: float
    weight_decay: float
    epoch: int  # 1-based
    batch: int  # 0-based within the epoch
    step: int  # global, 0-based


def _rng_state() -> dict:
    np_state = np.random.get_state()
    return {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *np_state[2:]],
            "python": random.getstate()}


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    kind, keys, *rest = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), *rest))
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))


@torch.no_grad()
def clip_global_norm_(params, max_norm: float) -> float:
    """Scale all gradients by max_norm / max(norm, max_norm), as TF clip_by_global_norm and the Torch/Lua
    reference code. Unlike torch.nn.utils.clip_grad_norm_: no 1e-6 added to the norm, and the norm is a
    cascade sum of squares (float32 vector_norm over a 10k x 200 gradient is off by ~1e-4 relative,
    which moves every clipped step by that much)."""
    grads = [p.grad for p in params if p.grad is not None]
    norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
    if norm > max_norm:
        torch._foreach_mul_(grads, max_norm / norm)
    return norm


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def perplexity(mean_nll: float) -> float:
    """exp(mean NLL), inf where exp overflows (a diverging run's progress line must not crash)."""
    return math.exp(mean_nll) if mean_nll < 709.0 else math.inf


def _fmt_time(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m{seconds % 60:02d}s"


class Trainer:
    """Train ``model`` on token streams with the reference protocol; see the module docstring."""

    def __init__(self, model: LSTMLM, cfg: TrainConfig, train: torch.Tensor, valid: torch.Tensor,
                 test: torch.Tensor | None = None, run_dir: str | Path | None = None, name: str = "run",
                 device: str | torch.device = "cpu",
                 extra_loss: Callable[..., torch.Tensor] | None = None,
                 on_epoch: Callable[[int, LSTMLM, dict | None], Any] | None = None,
                 on_step: Callable[[StepInfo], Any] | None = None,
                 log: Callable[[str], Any] = print, fingerprint: Any = None):
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.model.check_tying()
        self.cfg = cfg
        if cfg.max_train_tokens is not None:
            train = train[: cfg.max_train_tokens]
        self.train_data = batchify(train, cfg.batch_size).to(self.device)
        self.valid, self.test, self.train_tokens = valid, test, train
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.name = name
        self.extra_loss, self.on_epoch, self.on_step, self.log = extra_loss, on_epoch, on_step, log
        self.fingerprint = fingerprint  # anything JSON-like identifying the run; a mismatch refuses resume
        self.batches = num_windows(self.train_data.shape[0], cfg.bptt)
        if cfg.max_batches is not None:
            self.batches = min(self.batches, cfg.max_batches)
        if self.batches < 1:
            raise ReplicateError(f"run {name}: training data too short for one window of {cfg.bptt} x "
                                 f"{cfg.batch_size} tokens", "use more training tokens or a smaller bptt")
        # progress state (all of it goes into the checkpoint)
        self.epoch = 0  # completed epochs
        self.batch = 0  # next batch inside the current epoch
        self.step = 0
        self.hidden = None
        self.sums = {"nll": 0.0, "steps": 0, "seconds": 0.0}
        self.history: list[dict] = []

    # ------------------------------------------------------------------ checkpoints
    @property
    def checkpoint_path(self) -> Path | None:
        return self.run_dir / CHECKPOINT if self.run_dir is not None else None

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "optimizer": {"lr": lr_at(self.cfg, self.epoch)},
                "epoch": self.epoch, "batch": self.batch, "step": self.step,
                "hidden": [[t.detach() for t in hc] for hc in self.hidden] if self.hidden is not None else None,
                "sums": dict(self.sums), "history": list(self.history), "rng": _rng_state(),
                "fingerprint": self.fingerprint,
                "callbacks": {k: cb.state_dict() for k, cb in self._stateful_callbacks().items()}}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.model.check_tying()
        self.epoch, self.batch, self.step = state["epoch"], state["batch"], state["step"]
        self.hidden = ([tuple(t.to(self.device) for t in hc) for hc in state["hidden"]]
                       if state["hidden"] is not None else None)
        self.sums, self.history = dict(state["sums"]), list(state["history"])
        for key, cb in self._stateful_callbacks().items():
            cb.load_state_dict(state["callbacks"][key])
        _set_rng_state(state["rng"])

    def _stateful_callbacks(self) -> dict:
        cbs = {"extra_loss": self.extra_loss, "on_epoch": self.on_epoch, "on_step": self.on_step}
        return {k: cb for k, cb in cbs.items() if hasattr(cb, "state_dict") and hasattr(cb, "load_state_dict")}

    def save_checkpoint(self) -> None:
        """Write the checkpoint atomically, only from finite weights (else raise; the last one stays)."""
        if self.checkpoint_path is None:
            return
        bad = [n for n, p in self.model.named_parameters() if not bool(torch.isfinite(p).all())]
        if bad:
            self._fault(f"non-finite weights ({', '.join(bad[:3])}) before a checkpoint save")
        rio.torch_save(self.checkpoint_path, self.state_dict())

    def _fault(self, what: str) -> None:
        """Stop the run on a numerical fault, naming where, the likely cause and the last good checkpoint."""
        where = (f"epoch {self.epoch + 1}, batch {self.batch + 1}/{self.batches}" if self.epoch < self.cfg.epochs
                 else "in the final evaluation")
        path = self.checkpoint_path
        kept = (f"the last good checkpoint is kept: {path}" if path is not None and path.is_file()
                else "no checkpoint was written")
        raise ReplicateError(
            f"run {self.name}: {what} at {where} (lr {lr_at(self.cfg, self.epoch):g}, clip {self.cfg.clip:g}); "
            f"{kept}; no result is written",
            "lower the learning rate or the clip value, or check the data; a rerun with the same settings "
            "resumes from the kept checkpoint, other settings start a new run folder")

    def try_resume(self) -> bool:
        """Load ``run_dir/checkpoint.pt`` if present (weights_only); return whether it resumed."""
        path = self.checkpoint_path
        if path is None or not path.is_file():
            return False
        try:
            state = torch.load(path, map_location=self.device, weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any failure means an unusable file
            raise ReplicateError(f"run {self.name}: checkpoint {path} is unreadable ({exc})",
                                 f"delete {path} to start the run from scratch") from exc
        if state.get("fingerprint") != self.fingerprint:
            raise ReplicateError(f"run {self.name}: checkpoint {path} belongs to different settings or code "
                                 f"({state.get('fingerprint')} != {self.fingerprint})",
                                 f"delete {path} (or the run folder) to start this run from scratch with the "
                                 "current settings and code")
        self.load_state_dict(state)
        self.log(f"[{self.name}] resumed from {path}: epoch {self.epoch + 1}, batch {self.batch}")
        return True

    # ------------------------------------------------------------------ training
    def run(self) -> dict:
        """Train all epochs (resuming if a checkpoint exists), then evaluate; return the metrics."""
        if not self.try_resume():
            seed_everything(self.cfg.seed)
            if self.on_epoch is not None:
                self.on_epoch(0, self.model, None)
        while self.epoch < self.cfg.epochs:
            record = self.train_epoch()
            if self.on_epoch is not None:
                self.on_epoch(self.epoch, self.model, record)
                if hasattr(self.on_epoch, "state_dict"):  # checkpoint again: keep this epoch's callback state
                    self.save_checkpoint()
        return self.final_metrics()

    def _loss(self, inputs, targets):
        """The reference training loss of one window and its token-mean NLL (for perplexity)."""
        T, B = inputs.shape
        features, self.hidden = self.model(inputs, self.hidden)
        if self.extra_loss is None:
            nll = self.model.nll(features, targets)
            loss = nll / B
        else:
            logits = self.model.logits(features)
            nll = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1),
                                                    reduction="sum")
            loss = nll / B + T * self.extra_loss(logits, targets, features, self.model)
        if self.model.projection is not None:
            loss = loss + self.model.pr_penalty(self.cfg.pr_form, self.cfg.pr_lambda, B)
        return loss, nll.detach() / (T * B)

    def train_epoch(self) -> dict:
        """Run (the rest of) epoch ``self.epoch + 1``; checkpoint; return its history row."""
        cfg, model = self.cfg, self.model
        lr, e = lr_at(cfg, self.epoch), self.epoch + 1
        params = list(model.parameters())
        if self.batch == 0:
            self.hidden = model.init_hidden(cfg.batch_size)
            self.sums = {"nll": 0.0, "steps": 0, "seconds": 0.0}
        model.train()
        last_ckpt = t_mark = time.perf_counter()
        tokens_per_batch = cfg.bptt * cfg.batch_size
        while self.batch < self.batches:
            i = self.batch * cfg.bptt
            inputs = self.train_data[i: i + cfg.bptt]
            targets = self.train_data[i + 1: i + 1 + cfg.bptt]
            self.hidden = model.detach_hidden(self.hidden)
            for p in params:
                p.grad = None
            loss, mean_nll = self._loss(inputs, targets)
            loss.backward()
            mean_nll = float(mean_nll)
            if not (math.isfinite(mean_nll) and math.isfinite(float(loss.detach()))):
                self._fault(f"non-finite training loss ({float(loss.detach())})")
            if not math.isfinite(clip_global_norm_(params, cfg.clip)):
                self._fault("non-finite gradient norm")
            if self.on_step is not None:
                self.on_step(StepInfo(model, inputs, targets, lr, cfg.weight_decay, e, self.batch, self.step))
            with torch.no_grad():
                for p in params:
                    if p.grad is None:
                        continue
                    p.add_(p.grad, alpha=-lr)
                    if cfg.weight_decay:  # the Lua BD code: paramx:add(-weight_decay, paramx) after the step
                        p.mul_(1 - cfg.weight_decay)
            self.sums["nll"] += mean_nll
            self.sums["steps"] += 1
            self.batch += 1
            self.step += 1
            now = time.perf_counter()
            self.sums["seconds"] += now - t_mark
            t_mark = now
            if self.batch % cfg.log_every == 0 or self.batch == self.batches:
                self._progress(e, lr)
            if self.batch < self.batches and now - last_ckpt >= 60 * cfg.checkpoint_minutes:
                self.save_checkpoint()
                last_ckpt = time.perf_counter()
                t_mark = last_ckpt
        record = {"epoch": e, "lr": lr, "train_ppl": perplexity(self.sums["nll"] / self.sums["steps"]),
                  "valid_ppl": None, "seconds": self.sums["seconds"],
                  "tokens_per_s": self.sums["steps"] * tokens_per_batch / max(self.sums["seconds"], 1e-9)}
        t0 = time.perf_counter()
        record["valid_ppl"] = self.evaluate(self.valid, batch_size=cfg.valid_batch_size)
        record["eval_seconds"] = time.perf_counter() - t0
        self.log(f"[{self.name}] epoch {e}/{cfg.epochs} lr {lr:.4g} train ppl {record['train_ppl']:.2f} "
                 f"valid ppl {record['valid_ppl']:.2f} ({record['seconds']:.0f} s, "
                 f"{record['tokens_per_s']:.0f} tok/s; eval {record['eval_seconds']:.0f} s)")
        self.history.append(record)
        self.epoch += 1
        self.batch = 0
        self.hidden = None
        self.save_checkpoint()
        self._write_history()
        return record

    def _progress(self, epoch: int, lr: float) -> None:
        s = self.sums
        sec_per_batch = s["seconds"] / max(s["steps"], 1)
        remaining = (self.batches - self.batch) + (self.cfg.epochs - epoch) * self.batches
        tok_s = s["steps"] * self.cfg.bptt * self.cfg.batch_size / max(s["seconds"], 1e-9)
        self.log(f"[{self.name}] epoch {epoch}/{self.cfg.epochs} batch {self.batch}/{self.batches} "
                 f"loss {s['nll'] / s['steps']:.3f} ppl {perplexity(s['nll'] / s['steps']):.1f} lr {lr:.4g} "
                 f"{tok_s:.0f} tok/s ETA {_fmt_time(remaining * sec_per_batch)} (training only)")

    def _write_history(self) -> None:
        if self.run_dir is not None:
            import pandas as pd

            rio.write_csv(self.run_dir / HISTORY, pd.DataFrame(self.history))

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self, tokens: torch.Tensor, max_tokens: int | None = None, batch_size: int | None = None) -> float:
        """Perplexity of ``tokens`` as ``batch_size`` streams (default ``eval_batch_size``: one stream),
        hidden state from zero, no dropout, windows of ``eval_window`` steps (the last one partial)."""
        cfg, model = self.cfg, self.model
        batch_size = cfg.eval_batch_size if batch_size is None else batch_size
        max_tokens = cfg.eval_max_tokens if max_tokens is None else max_tokens
        if max_tokens is not None:
            tokens = tokens[:max_tokens]
        data = batchify(tokens, batch_size).to(self.device)
        was_training = model.training
        model.eval()
        hidden = model.init_hidden(batch_size)
        total, count = 0.0, 0
        for i in range(0, data.shape[0] - 1, cfg.eval_window):
            inputs = data[i: min(i + cfg.eval_window, data.shape[0] - 1)]
            targets = data[i + 1: i + 1 + inputs.shape[0]]
            features, hidden = model(inputs, hidden)
            total += float(model.nll(features, targets))
            count += targets.numel()
        model.train(was_training)
        if not math.isfinite(total):
            self._fault(f"non-finite evaluation loss ({total}) on {tokens.numel():,} tokens")
        return perplexity(total / count)

    def final_metrics(self) -> dict:
        """Perplexities after training: running train ppl of the last epoch (what the TF scripts print and
        Table 6 reports), clean train (no dropout; what the Lua BD scripts print as "Final train set
        perplexity") and valid at ``valid_batch_size`` streams, test at ``eval_batch_size``."""
        last = self.history[-1] if self.history else {}
        out = {"epochs_completed": self.epoch, "train_ppl": last.get("train_ppl"),
               "train_clean_ppl": self.evaluate(self.train_tokens, batch_size=self.cfg.valid_batch_size),
               "valid_ppl": self.evaluate(self.valid, batch_size=self.cfg.valid_batch_size),
               "test_ppl": self.evaluate(self.test) if self.test is not None else None,
               "num_parameters": self.model.num_parameters(),
               "train_tokens_per_s": (sum(r["seconds"] * r["tokens_per_s"] for r in self.history)
                                      / max(sum(r["seconds"] for r in self.history), 1e-9)),
               "history": list(self.history)}
        return out
