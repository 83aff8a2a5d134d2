"""Table 1 and ablation runs: the Press & Wolf engine (replicate.lstm) plus Inan's augmented loss.

Variants (Inan et al. Table 1): ``vd`` = VD-LSTM (untied, VD dropout), ``al`` = + augmented loss,
``re`` = reused embeddings (output weight IS the input embedding, no output bias: the engine's
``tied_nobias``), ``real`` = RE + AL. Everything else (data, SGD loop, clipping, schedule,
evaluation, checkpoint/resume) is the engine's ``train_run``.
"""

from __future__ import annotations

from typing import Any

from replicate.errors import ReplicateError
from replicate.inan.losses import augmented_loss

VARIANTS: dict[str, dict[str, Any]] = {
    "vd": {"label": "VD-LSTM", "tying": "untied", "al": False},
    "al": {"label": "+AL", "tying": "untied", "al": True},
    "re": {"label": "+RE", "tying": "tied_nobias", "al": False},
    "real": {"label": "+REAL", "tying": "tied_nobias", "al": True},
}
# per-size keys that are Inan's (not engine settings)
AL_KEYS = ("tau", "alpha")


class AugmentedLoss:
    """The engine's ``extra_loss``: alpha * J_aug (per-token mean; the engine scales it by T like the CE).

    It has ``state_dict``/``load_state_dict``, so the engine stores its settings in the checkpoint and
    a resume with a different tau / alpha / switch is refused instead of silently mixing objectives."""

    def __init__(self, tau: float, alpha: float, soft_target_grad: bool = False):
        if tau <= 0 or alpha < 0:
            raise ReplicateError(f"augmented loss needs tau > 0 and alpha >= 0 (got tau={tau}, alpha={alpha})",
                                 "fix inan.*.tau / alpha in the config")
        self.tau, self.alpha, self.soft_target_grad = float(tau), float(alpha), bool(soft_target_grad)

    def __call__(self, logits, targets, features, model):
        j_aug = augmented_loss(logits, targets, model.embedding.weight, self.tau, self.soft_target_grad)
        return self.alpha * j_aug

    def state_dict(self) -> dict:
        return {"tau": self.tau, "alpha": self.alpha, "soft_target_grad": self.soft_target_grad}

    def load_state_dict(self, state: dict) -> None:
        if state != self.state_dict():
            raise ReplicateError(f"checkpoint was trained with augmented loss {state}, this run asks for "
                                 f"{self.state_dict()}",
                                 "delete the run folder's checkpoint.pt to retrain with the new settings")


def run_settings(size_cfg: dict[str, Any], size: str, variant: str, seed: int,
                 overrides: dict[str, Any] | None = None) -> tuple[dict[str, Any], AugmentedLoss | None]:
    """Engine settings of one Table 1 cell and its extra loss (None without AL).

    ``size_cfg`` is the config block of one size (engine keys + tau + alpha + soft_target_grad)."""
    if variant not in VARIANTS:
        raise ReplicateError(f"unknown Inan variant {variant!r}", f"use one of {sorted(VARIANTS)}")
    cfg = {**size_cfg, **(overrides or {})}
    v = VARIANTS[variant]
    al = AugmentedLoss(cfg["tau"], cfg["alpha"], cfg.get("soft_target_grad", False)) if v["al"] else None
    engine = {k: val for k, val in cfg.items() if k not in (*AL_KEYS, "soft_target_grad") and val is not None}
    preset = size if size in ("small", "medium", "large") else "small"
    engine.update(size=preset, tying=v["tying"], dropout="inan", seed=int(seed))
    return engine, al
