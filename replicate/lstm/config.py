"""Hyperparameters: model/training configs, the Zaremba / Press & Wolf size presets, named cells.

The sizes of Zaremba et al. 2014 (section 4) and Press & Wolf 2017 (Table 5, BD) live here as presets; a
run is a preset plus overrides (the experiments' named runs, e.g. Press & Wolf's cells, build on them).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from replicate.errors import ReplicateError

TYING = ("untied", "tied", "tied_nobias")
DROPOUT = ("none", "zaremba", "variational", "inan")
# tf: one bias per gate starting at 0 (TF BasicLSTMCell, the Table 6 scripts); torch: two uniform biases
# per gate (nn.Linear input + recurrent maps: Zaremba's Torch code, the Lua BD scripts, nn.LSTM)
GATE_BIAS = ("tf", "torch")
# variational dropout masks of layer inputs and recurrent state: per_gate = one mask per gate (B x 4H, Gal's
# released Lua code); shared = one mask for all four gates (B x H; Gal's comment: quicker, worse results)
VARIATIONAL_MASKS = ("per_gate", "shared")
# Learning-rate schedule: "r0.8" = lr * decay ** max(i - max_epoch, 0) for 0-based epoch i, i.e. the first
# max_epoch + 1 epochs at lr (TF r0.8 PTB tutorial behind Press & Wolf's Table 6 scripts; Zaremba's Torch
# and the Lua BD code decay after epoch max_epoch + 1 too); "later" = max(i + 1 - max_epoch, 0), the first
# max_epoch epochs at lr (later TF tutorial versions); "interval" = x decay once every decay_interval epochs,
# as the one public (unofficial, Keras) implementation of Inan et al. does: at the start of every 0-based
# epoch i >= 1 with (i + 1) % decay_interval == 0 (max_epoch unused).
SCHEDULES = ("r0.8", "later", "interval")
# Projection-regularisation penalty, added to the per-window cost (sum over steps of the batch-mean NLL):
# authors_code: lambda * ||P||_F^2 / 2 / batch_size, lambda = 1/6.5 (Press & Wolf's released TF script:
#     tf.nn.l2_loss(proj) / (batch_size * 6.5));
# squared: lambda * ||P||_F^2, lambda = 0.15 (the paper's sentence read literally; ~40x stronger);
# unsquared: lambda * ||P||_F, lambda = 0.15 (a third-party PyTorch port's reading).
PR_FORMS = {"authors_code": 1 / 6.5, "squared": 0.15, "unsquared": 0.15}


@dataclasses.dataclass
class ModelConfig:
    """Architecture of an LSTM language model (embedding size = hidden size)."""

    vocab_size: int = 10000
    hidden_size: int = 200
    num_layers: int = 2
    tying: str = "untied"  # untied | tied (P&W, own bias) | tied_nobias (Inan RE)
    projection: bool = False  # P&W PR: square projection with bias before the output layer
    dropout: str = "none"  # none | zaremba | variational | inan
    dropout_rate: float = 0.0  # zaremba and inan
    dropout_word: float = 0.0  # variational: word types (same word -> same mask within a sequence)
    dropout_input: float = 0.0  # variational: inputs of every LSTM layer
    dropout_hidden: float = 0.0  # variational: recurrent state
    dropout_output: float = 0.0  # variational: before the output layer
    embedding_dropout: bool = False  # inan: also mask the embedding output (the paper: no embedding dropout)
    variational_masks: str = "per_gate"  # variational: per_gate (Gal's code) | shared
    init_scale: float = 0.1  # uniform(-s, s) for every parameter (tf gate biases: 0)
    gate_bias: str = "torch"  # tf | torch, see GATE_BIAS

    def __post_init__(self):
        for name, allowed in (("tying", TYING), ("dropout", DROPOUT), ("gate_bias", GATE_BIAS),
                              ("variational_masks", VARIATIONAL_MASKS)):
            if getattr(self, name) not in allowed:
                raise ReplicateError(f"unknown {name} {getattr(self, name)!r}", f"use one of {allowed}")
        for name in ("dropout_rate", "dropout_word", "dropout_input", "dropout_hidden", "dropout_output"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ReplicateError(f"{name}={getattr(self, name)} is outside [0, 1)", "use a rate in [0, 1)")


@dataclasses.dataclass
class TrainConfig:
    """Optimisation and protocol (the reference code's SGD loop)."""

    batch_size: int = 20
    bptt: int = 20
    lr: float = 1.0
    max_epoch: int = 4  # epochs at the initial lr: max_epoch + 1 under schedule r0.8, max_epoch under later
    decay: float = 0.5  # per-epoch lr factor afterwards
    schedule: str = "r0.8"  # r0.8 | later | interval, see SCHEDULES
    decay_interval: int = 1  # schedule interval only: epochs between two decays
    epochs: int = 13
    clip: float = 5.0  # global gradient norm
    weight_decay: float = 0.0  # as the Lua BD code: after the SGD step, p <- p - weight_decay * p (not x lr)
    pr_form: str = "authors_code"  # used only when the model has a projection, see PR_FORMS
    pr_lambda: float | None = None  # None: the form's own value (PR_FORMS)
    seed: int = 1
    eval_batch_size: int = 1  # test split (the reference scripts: batch 1)
    valid_batch_size: int = 1  # valid split and clean train perplexity (the reference scripts: the training batch)
    eval_window: int = 1000  # tokens per evaluation window (batch 1: same numbers as step by step)
    max_batches: int | None = None  # cap on training batches per epoch (smoke)
    eval_max_tokens: int | None = None  # truncate evaluation splits (smoke)
    max_train_tokens: int | None = None  # train on the first N tokens of the train split
    checkpoint_minutes: float = 10.0
    log_every: int = 100  # batches between progress lines

    def __post_init__(self):
        if self.pr_form not in PR_FORMS:
            raise ReplicateError(f"unknown pr_form {self.pr_form!r}", f"use one of {sorted(PR_FORMS)}")
        if self.schedule not in SCHEDULES:
            raise ReplicateError(f"unknown schedule {self.schedule!r}", f"use one of {SCHEDULES}")
        if int(self.decay_interval) < 1:
            raise ReplicateError(f"decay_interval={self.decay_interval} is below 1", "use a whole number of epochs >= 1")
        if self.pr_lambda is None:
            self.pr_lambda = PR_FORMS[self.pr_form]


def lr_at(cfg: TrainConfig, epoch: int) -> float:
    """Learning rate of 0-based ``epoch``: ``lr`` for the first max_epoch + 1 (schedule r0.8) or max_epoch
    (later) epochs, then x ``decay`` per epoch; under interval, x ``decay`` once for every epoch j in
    1..epoch with (j + 1) % decay_interval == 0, i.e. floor((epoch + 1) / n) - floor(1 / n) times."""
    if cfg.schedule == "interval":
        n = int(cfg.decay_interval)
        return cfg.lr * cfg.decay ** ((epoch + 1) // n - 1 // n)
    held = cfg.max_epoch if cfg.schedule == "r0.8" else cfg.max_epoch - 1
    return cfg.lr * cfg.decay ** max(epoch - held, 0)


# Zaremba et al. 2014 sizes (non-regularised small, medium, large) and Press & Wolf's BD large. The reference
# scripts evaluate the valid split (and the Lua code its clean train check) with the training batch of 20
# streams, the test split with batch 1.
PRESETS: dict[str, dict[str, Any]] = {
    "small": dict(hidden_size=200, init_scale=0.1, bptt=20, max_epoch=4, decay=0.5, epochs=13, clip=5.0,
                  valid_batch_size=20),
    "medium": dict(hidden_size=650, init_scale=0.05, bptt=35, max_epoch=6, decay=1 / 1.2, epochs=39,
                   clip=5.0, dropout="zaremba", dropout_rate=0.5, valid_batch_size=20),
    "large": dict(hidden_size=1500, init_scale=0.04, bptt=35, max_epoch=14, decay=1 / 1.15, epochs=55,
                  clip=10.0, dropout="zaremba", dropout_rate=0.65, valid_batch_size=20),
    "large_bd": dict(hidden_size=1500, init_scale=0.04, bptt=35, max_epoch=10, decay=1 / 1.15, epochs=55,
                     clip=10.0, dropout="variational", dropout_word=0.3, dropout_input=0.5,
                     dropout_hidden=0.3, dropout_output=0.5, weight_decay=1e-7, valid_batch_size=20),
}

_MODEL_KEYS = {f.name for f in dataclasses.fields(ModelConfig)}
_TRAIN_KEYS = {f.name for f in dataclasses.fields(TrainConfig)}
OVERRIDABLE = sorted((_MODEL_KEYS | _TRAIN_KEYS) - {"vocab_size"})


def resolve(settings: dict[str, Any], vocab_size: int) -> tuple[ModelConfig, TrainConfig]:
    """Build the configs from ``{"size": preset, **overrides}`` (overrides win over the preset)."""
    settings = dict(settings)
    size = settings.pop("size", "small")
    if size not in PRESETS:
        raise ReplicateError(f"unknown size preset {size!r}", f"use one of {sorted(PRESETS)}")
    merged = {**PRESETS[size], **settings}
    unknown = set(merged) - set(OVERRIDABLE)
    if unknown:
        raise ReplicateError(f"unknown LSTM setting(s) {sorted(unknown)}", f"valid keys: {OVERRIDABLE}")
    model = ModelConfig(vocab_size=vocab_size, **{k: v for k, v in merged.items() if k in _MODEL_KEYS})
    train = TrainConfig(**{k: v for k, v in merged.items() if k in _TRAIN_KEYS})
    return model, train
