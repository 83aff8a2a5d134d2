"""LSTM language models of Zaremba et al. 2014 / Press & Wolf 2017 / Inan et al. 2017 (PTB, WikiText-2).

- ``config``: ModelConfig, TrainConfig, size presets, named cells, lr schedule.
- ``model``: LSTMLM (tying untied | tied | tied_nobias; dropout none | zaremba | variational | inan; PR).
- ``kernels``: fused LSTM-sequence and output-layer+NLL autograd functions (same math, faster).
- ``train``: Trainer (reference protocol, checkpoint-resume, hooks), batchify, evaluation.
- ``runner``: train_run(spec, corpus, out_dir) — one run with metrics.json + provenance.
- ``table``: Press & Wolf tables beside the paper numbers; ``bench``: speed benchmark; ``cli``.
See the README ("Press & Wolf 2017") for the protocol and the knobs.
"""

from replicate.lstm.config import CELLS, PRESETS, ModelConfig, TrainConfig, cell_settings, lr_at, parse_cell, resolve
from replicate.lstm.model import LSTMLM
from replicate.lstm.runner import build, train_run
from replicate.lstm.train import StepInfo, Trainer, batchify

__all__ = ["CELLS", "PRESETS", "ModelConfig", "TrainConfig", "cell_settings", "lr_at", "parse_cell", "resolve", "LSTMLM",
           "build", "train_run", "StepInfo", "Trainer", "batchify"]
