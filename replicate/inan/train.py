"""Table 1 and ablation runs: the Press & Wolf engine (replicate.lstm) plus Inan's augmented loss.

Variants (Inan et al. Table 1): ``vd`` = VD-LSTM (untied, VD dropout), ``al`` = + augmented loss,
``re`` = reused embeddings (output weight IS the input embedding, no output bias: the engine's
``tied_nobias``), ``real`` = RE + AL. ``re_bias`` is NOT a Table 1 row: the shared matrix with its own
output bias (the engine's ``tied``, Press & Wolf's WT), a screen variant that separates the bias from the tying. Everything else (data, SGD loop, clipping, schedule,
evaluation, checkpoint/resume) is the engine's ``train_run``.
"""

from __future__ import annotations

from typing import Any

from replicate.errors import ReplicateError
from replicate.lstm import MATH_MODULES

VARIANTS: dict[str, dict[str, Any]] = {
    "vd": {"label": "VD-LSTM", "tying": "untied", "al": False},
    "al": {"label": "+AL", "tying": "untied", "al": True},
    "re": {"label": "+RE", "tying": "tied_nobias", "al": False},
    "real": {"label": "+REAL", "tying": "tied_nobias", "al": True},
    # not a Table 1 row: RE with its own output bias (Press & Wolf's WT), to tell the bias from the tying
    "re_bias": {"label": "+RE with output bias (not the paper's RE)", "tying": "tied", "al": False},
}
PAPER_VARIANTS = ("vd", "al", "re", "real")  # the rows of the paper's Table 1
# Code that decides a Table 1 / ablation run's numbers (the engine's math + the augmented loss)
TRAIN_MODULES = ("inan.losses", "inan.train", "inan.trainer", *MATH_MODULES)
# per-size keys that are Inan's (not engine settings)
AL_KEYS = ("tau", "gamma", "tau_power", "soft_target_grad", "prediction_bias", "target_norm")


class AugmentedLoss:
    """The engine's ``extra_loss``: alpha * J_aug with alpha = gamma * tau ** tau_power (per-token mean; the
    engine scales it by T like the CE).

    ``tau_power`` 1 is the weight as the paper's appendix states it (quoted by the one public implementation,
    an unofficial Keras port: ``loss += gamma * tau * KL``, gamma 0.5-0.8, tau 10-20); 2 scales the KL by
    tau^2 as the paper's own section 6.2 loss does (and Hinton et al.'s distillation). The prediction at temperature tau
    is the paper's y^ = softmax(W h / tau), without the output bias, unless ``prediction_bias`` (the form
    this project used first: softmax((W h + b) / tau)); it only matters for a model with an output bias
    (+AL, not +REAL). ``target_norm`` (None: the paper's y~) rescales every word vector to that norm inside
the soft target only (``replicate.inan.losses.target_embedding``). It has ``state_dict``/``load_state_dict``, so the engine stores its settings in the
    checkpoint and a resume with a different tau / gamma / switch is refused instead of silently mixing
    objectives."""

    def __init__(self, tau: float, gamma: float, soft_target_grad: bool = False, prediction_bias: bool = False,
                 tau_power: float = 1.0, target_norm: float | None = None):
        if tau <= 0 or gamma < 0 or tau_power < 0 or (target_norm is not None and target_norm <= 0):
            raise ReplicateError(f"augmented loss needs tau > 0, gamma >= 0, tau_power >= 0 and target_norm > 0 "
                                 f"or null (got tau={tau}, gamma={gamma}, tau_power={tau_power}, "
                                 f"target_norm={target_norm})",
                                 "fix inan.sizes.<size>.tau / gamma / tau_power / target_norm in the config")
        self.tau, self.gamma, self.soft_target_grad = float(tau), float(gamma), bool(soft_target_grad)
        self.prediction_bias, self.tau_power = bool(prediction_bias), float(tau_power)
        self.target_norm = None if target_norm is None else float(target_norm)
        self.alpha = self.gamma * self.tau ** self.tau_power

    def __call__(self, logits, targets, features, model):
        from replicate.inan.losses import augmented_loss  # torch: imported when training, not by the workflow

        bias = getattr(model, "output_bias", None)
        scores = logits if self.prediction_bias or bias is None else logits - bias
        j_aug = augmented_loss(scores, targets, model.embedding.weight, self.tau, self.soft_target_grad,
                               target_norm=self.target_norm)
        return self.alpha * j_aug

    def output_loss(self, features, targets, model):
        """(summed NLL, summed J_aug) of one window on the engine's fused output-layer kernel: the same
        numbers as ``F.cross_entropy`` + ``__call__`` (tests/test_inan_losses.py), one pass less per term."""
        import torch

        from replicate.inan.losses import target_embedding
        from replicate.lstm import kernels

        flat, tgt = features.reshape(-1, features.shape[-1]), targets.reshape(-1)
        words, idx = torch.unique(tgt, return_inverse=True)
        emb = model.embedding.weight
        emb = target_embedding(emb if self.soft_target_grad else emb.detach(), self.target_norm)
        rows = emb.index_select(0, words) / self.tau  # y~ of word w = softmax(rows[w] @ emb.T)
        return kernels.output_loss(flat, model.output_weight, model.output_bias, tgt, rows, emb, idx,
                                   self.tau, self.prediction_bias)

    def state_dict(self) -> dict:
        return {"tau": self.tau, "gamma": self.gamma, "soft_target_grad": self.soft_target_grad,
                "prediction_bias": self.prediction_bias, "tau_power": self.tau_power, "target_norm": self.target_norm}

    def load_state_dict(self, state: dict) -> None:
        # checkpoints from before these switches: the bias in the prediction, alpha = gamma * tau, the paper's y~
        state = {"prediction_bias": True, "tau_power": 1.0, "target_norm": None, **state}
        if state != self.state_dict():
            raise ReplicateError(f"checkpoint was trained with augmented loss {state}, this run asks for "
                                 f"{self.state_dict()}",
                                 "delete the run folder's checkpoint.pt to retrain with the new settings")


def run_settings(size_cfg: dict[str, Any], size: str, variant: str, seed: int,
                 overrides: dict[str, Any] | None = None) -> tuple[dict[str, Any], AugmentedLoss | None]:
    """Engine settings of one Table 1 cell and its extra loss (None without AL).

    ``size_cfg`` is the config block of one size (engine keys + tau + gamma + soft_target_grad +
    prediction_bias). ``max_epoch``
    counts the epochs at the initial lr unless the block sets another ``schedule``."""
    if variant not in VARIANTS:
        raise ReplicateError(f"unknown Inan variant {variant!r}", f"use one of {sorted(VARIANTS)}")
    cfg = {**size_cfg, **(overrides or {})}
    v = VARIANTS[variant]
    al = (AugmentedLoss(cfg["tau"], cfg["gamma"], cfg.get("soft_target_grad", False), cfg.get("prediction_bias", False),
                        cfg.get("tau_power", 1.0), cfg.get("target_norm")) if v["al"] else None)
    engine = {"schedule": "later", "valid_batch_size": 1,
              **{k: val for k, val in cfg.items() if k not in AL_KEYS and val is not None}}
    preset = size if size in ("small", "medium", "large") else "small"
    engine.update(size=preset, tying=v["tying"], dropout="inan", seed=int(seed))
    return engine, al
