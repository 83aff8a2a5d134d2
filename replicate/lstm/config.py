"""Hyperparameters: model/training configs, the Zaremba / Press & Wolf size presets, named cells.

Paper facts (../shared/reference/PAPERS.md sections 1-2) live here as presets; a run is a preset
plus overrides. Cells are the rows of Press & Wolf Tables 5 and 6 (and Zaremba's medium).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from replicate.errors import ReplicateError

TYING = ("untied", "tied", "tied_nobias")
DROPOUT = ("none", "zaremba", "variational", "inan")


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
    init_scale: float = 0.1  # uniform(-s, s) for every parameter

    def __post_init__(self):
        if self.tying not in TYING:
            raise ReplicateError(f"unknown tying {self.tying!r}", f"use one of {TYING}")
        if self.dropout not in DROPOUT:
            raise ReplicateError(f"unknown dropout {self.dropout!r}", f"use one of {DROPOUT}")
        for name in ("dropout_rate", "dropout_word", "dropout_input", "dropout_hidden", "dropout_output"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ReplicateError(f"{name}={getattr(self, name)} is outside [0, 1)", "use a rate in [0, 1)")


@dataclasses.dataclass
class TrainConfig:
    """Optimisation and protocol (the reference code's SGD loop)."""

    batch_size: int = 20
    bptt: int = 20
    lr: float = 1.0
    max_epoch: int = 4  # epochs at the initial lr
    decay: float = 0.5  # per-epoch lr factor afterwards
    epochs: int = 13
    clip: float = 5.0  # global gradient norm
    weight_decay: float = 0.0
    pr_lambda: float = 0.15  # used only when the model has a projection
    pr_form: str = "paper"  # paper: lambda*||P||^2 | code: ||P||^2/2/(batch_size*6.5) (released code)
    seed: int = 1
    eval_batch_size: int = 1
    eval_window: int = 1000  # tokens per evaluation window (batch 1: same numbers as step by step)
    max_batches: int | None = None  # cap on training batches per epoch (smoke)
    eval_max_tokens: int | None = None  # truncate evaluation splits (smoke)
    max_train_tokens: int | None = None  # train on the first N tokens of the train split
    checkpoint_minutes: float = 10.0
    log_every: int = 100  # batches between progress lines

    def __post_init__(self):
        if self.pr_form not in ("paper", "code"):
            raise ReplicateError(f"unknown pr_form {self.pr_form!r}", "use paper or code")


def lr_at(cfg: TrainConfig, epoch: int) -> float:
    """Learning rate of 0-based ``epoch``: the first ``max_epoch`` epochs at ``lr``, then x ``decay``
    per epoch (TF PTB tutorial: lr * decay ** max(i + 1 - max_epoch, 0))."""
    return cfg.lr * cfg.decay ** max(epoch + 1 - cfg.max_epoch, 0)


# Zaremba et al. 2014 sizes (non-regularised small, medium, large) and Press & Wolf's BD large.
PRESETS: dict[str, dict[str, Any]] = {
    "small": dict(hidden_size=200, init_scale=0.1, bptt=20, max_epoch=4, decay=0.5, epochs=13, clip=5.0),
    "medium": dict(hidden_size=650, init_scale=0.05, bptt=35, max_epoch=6, decay=1 / 1.2, epochs=39,
                   clip=5.0, dropout="zaremba", dropout_rate=0.5),
    "large": dict(hidden_size=1500, init_scale=0.04, bptt=35, max_epoch=14, decay=1 / 1.15, epochs=55,
                  clip=10.0, dropout="zaremba", dropout_rate=0.65),
    "large_bd": dict(hidden_size=1500, init_scale=0.04, bptt=35, max_epoch=10, decay=1 / 1.15, epochs=55,
                     clip=10.0, dropout="variational", dropout_word=0.3, dropout_input=0.5,
                     dropout_hidden=0.3, dropout_output=0.5, weight_decay=1e-7),
}

# Named cells: rows of Press & Wolf Table 6 (small, no dropout) and Table 5 (large), plus medium.
CELLS: dict[str, dict[str, Any]] = {
    "small": dict(size="small"),
    "small_wt": dict(size="small", tying="tied"),
    "small_pr": dict(size="small", projection=True),
    "small_wt_pr": dict(size="small", tying="tied", projection=True),
    "medium": dict(size="medium"),
    "medium_wt": dict(size="medium", tying="tied"),
    "large": dict(size="large"),
    "large_wt": dict(size="large", tying="tied"),
    "large_bd_wd": dict(size="large_bd"),
    "large_bd_wt": dict(size="large_bd", tying="tied", weight_decay=0.0),
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


def parse_cell(cell: str) -> tuple[str, dict[str, Any]]:
    """Split a cell name ``base`` or ``base@key=value@key=value`` into (base, overrides).

    The ``@`` form is the one-command ablation: e.g. ``small_wt_pr@pr_lambda=0.05`` is the
    small+WT+PR row with lambda 0.05, written to its own result folder. Values are parsed as
    int, float, bool or string."""
    base, *items = cell.split("@")
    if base not in CELLS:
        raise ReplicateError(f"unknown Press & Wolf cell {base!r}", f"use one of {sorted(CELLS)}")
    overrides = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or key not in OVERRIDABLE:
            raise ReplicateError(f"bad cell override {item!r} in {cell!r}",
                                 f"write key=value with a key in {OVERRIDABLE}")
        overrides[key] = _parse_value(raw)
    return base, overrides


def cell_settings(cell: str, common: dict[str, Any] | None = None, seed: int | None = None) -> dict[str, Any]:
    """Settings of one run: the cell's row < config-wide overrides < the cell's @overrides < seed."""
    base, overrides = parse_cell(cell)
    settings = {**CELLS[base], **(common or {}), **overrides}
    if seed is not None:
        settings["seed"] = int(seed)
    return settings


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw
