"""Section 6.2 of Inan et al.: does the augmented loss pull W's column space onto L^T's?

One run = a random contiguous slice of PTB train (``slice_words`` tokens; its start is drawn from
the run's seed), a 2-layer untied LSTM (300 units, no dropout, no weight decay), the input embedding
projected back onto its norm constraint before every forward pass (``embedding_norm``: every word
vector at unit norm, every row of the d x |V| matrix L at unit norm, or none; so every update is
followed by the projection, and the final matrix is measured projected), trained with

    J = beta * J_aug * tau^2 * |V| + (1 - beta) * CE

by the Press & Wolf engine's Trainer (same SGD loop, clipping, lr schedule, checkpoint/resume). The
engine minimises T * (CE + extra); we pass extra = beta * (tau^2 |V| J_aug - CE), so the minimised
loss is exactly T * J (CE and J_aug both per-token means); at beta = 0 no extra loss is given
(pure CE, the engine's fused path).

Metrics (replicate.inan.subspace), after each epoch, of L^T = embedding.weight (|V| x d) and W = output
weight (|V| x d): the relative residual ||W - P_L W||_F / ||W||_F (the reported ``distance``, the paper's
wording) and the principal-angle distance (``angle_distance``).

``output_bias: false`` holds the output bias at 0 and out of training (the paper's analysis of the 6.2
loss assumes W h with no bias); the default keeps the engine's trained bias.
"""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from replicate import io as rio
from replicate import provenance
from replicate.errors import ReplicateError
from replicate.inan.losses import augmented_loss, subspace_experiment_loss
from replicate.inan.readings import fmt, points
from replicate.inan.subspace import angle_distance, residual_distance
from replicate.lstm import MATH_MODULES as ENGINE_MATH_MODULES

# Modules whose code decides a run's numbers (ours + the engine's): a finished seed is reused only
# under the same code.
MATH_MODULES = ("inan.losses", "inan.subspace", "inan.subspace_exp", *ENGINE_MATH_MODULES)
# Settings of one run that are passed to the engine (replicate.lstm.config.resolve keys).
ENGINE_KEYS = ("hidden_size", "num_layers", "init_scale", "batch_size", "bptt", "lr", "max_epoch", "decay",
               "schedule", "epochs", "clip", "eval_max_tokens", "max_batches", "log_every")
EMBEDDING_NORMS = ("word_vectors", "dimensions", "none")


def slice_start(n_tokens: int, slice_words: int, seed: int) -> int:
    """Start of the random contiguous slice of a run (uniform over all valid starts)."""
    if slice_words > n_tokens:
        raise ReplicateError(f"slice_words={slice_words} exceeds the {n_tokens} training tokens",
                             "lower inan.subspace.slice_words")
    return random.Random(f"inan-6.2-slice-{seed}").randrange(0, n_tokens - slice_words + 1)


@torch.no_grad()
def normalize_rows_(weight: torch.Tensor) -> None:
    """Project every row onto the unit sphere, in place."""
    weight.div_(weight.norm(dim=1, keepdim=True).clamp_min(1e-12))


@torch.no_grad()
def project_embedding_(weight: torch.Tensor, norm: str) -> None:
    """Apply the reading's constraint to E = L^T (|V| x d): ``word_vectors`` = unit rows of E (the word
    vectors); ``dimensions`` = unit columns of E (the d rows of L); ``none`` = nothing."""
    if norm == "word_vectors":
        normalize_rows_(weight)
    elif norm == "dimensions":
        weight.div_(weight.norm(dim=0, keepdim=True).clamp_min(1e-12))
    elif norm != "none":
        raise ReplicateError(f"unknown embedding_norm {norm!r}", f"use one of {EMBEDDING_NORMS}")


def unit_norm_hook(model, norm: str = "word_vectors"):
    """Forward pre-hook: project the input embedding onto its constraint before every forward pass."""
    def hook(module, args):
        project_embedding_(module.embedding.weight, norm)
    return model.register_forward_pre_hook(hook)


def make_extra_loss(beta: float, tau: float, soft_target_grad: bool = False):
    """The engine's extra_loss for the 6.2 objective, or None at beta = 0 (pure CE)."""
    if beta == 0.0:
        return None

    def extra(logits, targets, features, model):
        vocab = logits.shape[-1]
        ce = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        j_aug = augmented_loss(logits, targets, model.embedding.weight, tau, soft_target_grad)
        return subspace_experiment_loss(ce, j_aug, beta, tau, vocab) - ce

    return extra


def embedding_distances(model) -> dict[str, float | None]:
    """Both metrics of L^T and W (``distance`` = residual, ``angle_distance``); None (undefined, JSON null)
    while W is exactly 0 (reading output_init: zero, at init)."""
    if not model.output_weight.detach().any():
        return {"distance": None, "angle_distance": None}
    e, w = model.embedding.weight, model.output_weight
    return {"distance": residual_distance(e, w), "angle_distance": angle_distance(e, w)}


class AdamPreconditioner:
    """The engine's ``on_step`` hook turned into Adam: it replaces every ``p.grad`` (after the engine's
    clipping) by the bias-corrected Adam direction m_hat / (sqrt(v_hat) + eps); the engine's SGD update
    ``p -= lr * grad`` then IS an Adam step with step size lr. Stateful (moments in the checkpoint).

    Why: the 6.2 objective at beta > 0 is, for large tau, a squared error of size ~|V| per token
    (tau^2 |V| KL ~ 0.5 ||W h + b - L^T u||^2); its gradient norm is ~10^3 at initialisation and plain
    SGD either diverges or, clipped, barely moves W (the paper's optimiser was not recovered)."""

    def __init__(self, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.t, self.m, self.v = 0, {}, {}

    def __call__(self, info):
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        with torch.no_grad():
            for name, p in info.model.named_parameters():
                if p.grad is None:
                    continue
                m = self.m.setdefault(name, torch.zeros_like(p))
                v = self.v.setdefault(name, torch.zeros_like(p))
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                denom = (v / (1 - b2 ** self.t)).sqrt_().add_(self.eps)
                p.grad.copy_(m / (1 - b1 ** self.t) / denom)

    def state_dict(self) -> dict:
        return {"t": self.t, "m": dict(self.m), "v": dict(self.v)}

    def load_state_dict(self, state: dict) -> None:
        self.t, self.m, self.v = int(state["t"]), dict(state["m"]), dict(state["v"])


class DistanceTracker:
    """on_epoch callback: both distances after every epoch (epoch 0 = at initialisation).
    Stateful, so the engine keeps its record across a checkpoint resume."""

    def __init__(self, label: str, log=print, norm: str = "word_vectors"):
        self.label, self.log, self.norm = label, log, norm
        self.distances, self.angle_distances = {}, {}

    def __call__(self, epoch, model, record):
        project_embedding_(model.embedding.weight, self.norm)  # the state after the last update, projected
        d, key = embedding_distances(model), str(int(epoch))
        self.distances[key], self.angle_distances[key] = d["distance"], d["angle_distance"]
        if d["distance"] is None:
            self.log(f"[{self.label}] epoch {epoch}: distances undefined (W is exactly 0)")
        else:
            self.log(f"[{self.label}] epoch {epoch}: residual distance {d['distance']:.4f}, "
                     f"angle distance {d['angle_distance']:.4f}")

    def state_dict(self) -> dict:
        return {"distances": dict(self.distances), "angle_distances": dict(self.angle_distances)}

    def load_state_dict(self, state: dict) -> None:
        self.distances, self.angle_distances = dict(state["distances"]), dict(state["angle_distances"])


def run_one(settings: dict[str, Any], corpus, run_dir: Path, seed: int, tau: float, beta: float,
            device: str = "cpu", log=print) -> dict[str, Any]:
    """Train one 6.2 model; return its record (distance after every epoch, final distance)."""
    from replicate.lstm.runner import build
    from replicate.lstm.train import Trainer

    slice_words = int(settings["slice_words"])
    start = slice_start(len(corpus.train), slice_words, seed)
    train = corpus.train[start:start + slice_words]
    engine = {"schedule": "later", "valid_batch_size": 1,
              **{k: settings[k] for k in ENGINE_KEYS if settings.get(k) is not None}}
    engine.update(size="small", tying="untied", dropout="none", weight_decay=0.0, seed=int(seed))
    model, _, train_cfg = build(engine, vocab_size=len(corpus.vocab))  # seeded init
    model = model.to(device)
    norm = settings.get("embedding_norm", "word_vectors")
    output_init = settings.get("output_init", "uniform")
    if output_init == "zero":
        torch.nn.init.zeros_(model.output_weight)
    elif output_init != "uniform":
        raise ReplicateError(f"unknown output_init {output_init!r}", "use uniform or zero")
    output_bias = bool(settings.get("output_bias", True))
    if not output_bias:
        torch.nn.init.zeros_(model.output_bias)
        model.output_bias.requires_grad_(False)  # grad stays None: the engine's SGD step skips it
    project_embedding_(model.embedding.weight, norm)
    handle = unit_norm_hook(model, norm)
    label = f"6.2 tau={fmt(tau)} beta={fmt(beta)} seed={seed}"
    tracker = DistanceTracker(label, log, norm)
    soft_grad = bool(settings.get("soft_target_grad", False))
    fingerprint = {"engine": engine, "tau": float(tau), "beta": float(beta), "slice_start": start,
                   "slice_words": slice_words, "soft_target_grad": soft_grad, "embedding_norm": norm,
                   "output_init": output_init, "output_bias": output_bias}
    optimizer = settings.get("optimizer", "adam")
    if optimizer not in ("adam", "sgd"):
        raise ReplicateError(f"unknown 6.2 optimizer {optimizer!r}", "use adam or sgd")
    fingerprint["optimizer"] = optimizer
    trainer = Trainer(model, train_cfg, train, corpus.valid, test=None, run_dir=run_dir, name=label,
                      device=device, extra_loss=make_extra_loss(beta, tau, soft_grad), on_epoch=tracker,
                      on_step=AdamPreconditioner() if optimizer == "adam" else None,
                      log=log, fingerprint=fingerprint)
    metrics = trainer.run()
    handle.remove()
    project_embedding_(model.embedding.weight, norm)
    final = embedding_distances(model)
    check_final(label, final, metrics, train_cfg)
    norms = model.embedding.weight.detach().norm(dim=1)
    return {
        "seed": int(seed), "tau": float(tau), "beta": float(beta), "slice_start": start,
        "slice_words": slice_words, **final, "distance_by_epoch": tracker.distances,
        "angle_distance_by_epoch": tracker.angle_distances,
        "output_bias_norm": float(model.output_bias.detach().norm()),
        "embedding_row_norm_max_dev": float((norms - 1).abs().max()),
        "train_ppl": metrics.get("train_ppl"), "train_clean_ppl": metrics.get("train_clean_ppl"),
        "valid_ppl": metrics.get("valid_ppl"), "history": metrics.get("history"),
    }


def check_final(label: str, final: dict[str, float | None], metrics: dict[str, Any], train_cfg) -> None:
    """Refuse a run whose final distances are undefined (W still exactly 0: no epoch trained) or not finite,
    or whose perplexities are not finite (it diverged): nothing of it is written."""
    from replicate.lstm.runner import check_finite

    if final["distance"] is None:
        raise ReplicateError(f"{label}: W is still exactly 0 after {metrics.get('epochs_completed')} epochs, so its "
                             "distance to span(L^T) is undefined; nothing is written",
                             "train at least one epoch (inan.subspace epochs >= 1)")
    bad = [f"{k} = {v}" for k, v in final.items() if not math.isfinite(v)]
    if bad:
        raise ReplicateError(f"{label}: non-finite final distance ({', '.join(bad)}); nothing is written",
                             "lower the learning rate or the clip value of the reading (inan.subspace)")
    check_finite(label, metrics, train_cfg, output="seed record")


def run_point(spec: dict[str, Any], corpus, work_dir: Path, device: str = "cpu", log=print) -> dict[str, Any]:
    """All seeds of one (tau, beta) point. A finished seed is stored in work_dir/seed<N>.json (with
    the settings and the hash of the code it was trained with) and is reused after a kill only if both
    still match; its checkpoint folder is deleted once the seed is done."""
    settings, tau, beta = spec["subspace"], float(spec["tau"]), float(spec["beta"])
    math_settings = {k: v for k, v in settings.items() if k not in ("log_every", "seeds", "panel_a", "panel_b",
                                                                   "threads")}
    code = provenance.source_hash(*MATH_MODULES)
    records = []
    for seed in spec["seeds"]:
        done = Path(work_dir) / f"seed{seed}.json"
        if done.is_file():
            old = rio.read_json(done)
            if old.get("settings") == math_settings and old.get("code_version") == code:
                records.append(old)
                continue
        run_dir = Path(work_dir) / f"seed{seed}"
        shutil.rmtree(run_dir, ignore_errors=True) if done.is_file() else None
        record = run_one(settings, corpus, run_dir, int(seed), tau, beta, device, log)
        record["settings"], record["code_version"] = math_settings, code
        rio.write_json(done, record)
        shutil.rmtree(run_dir, ignore_errors=True)
        records.append(record)
    out = {"reading": spec.get("reading"), "tau": tau, "beta": beta, "n_seeds": len(records)}
    for metric in ("distance", "angle_distance"):
        dist = torch.tensor([r[metric] for r in records], dtype=torch.float64)
        out.update({f"{metric}_mean": float(dist.mean()),
                    f"{metric}_std": float(dist.std()) if len(records) > 1 else 0.0,
                    f"{metric}_min": float(dist.min()), f"{metric}_max": float(dist.max())})
    return {**out, "runs": records}


__all__ = ["DistanceTracker", "run_point", "run_one", "points", "fmt", "slice_start", "make_extra_loss", "unit_norm_hook",
           "normalize_rows_", "project_embedding_", "AdamPreconditioner"]
