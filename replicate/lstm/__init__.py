"""The shared LSTM language-model engine (Zaremba et al. 2014 / Press & Wolf 2017 / Inan et al. 2017).

- ``config``: ModelConfig, TrainConfig, size presets, lr schedule.
- ``model``: LSTMLM (tying untied | tied | tied_nobias; dropout none | zaremba | variational | inan; PR).
- ``kernels``: fused LSTM-sequence and output-layer+NLL autograd functions (same math, faster).
- ``train``: Trainer (reference protocol, checkpoint-resume, hooks), batchify, evaluation.
- ``runner``: train_run(spec, corpus, out_dir) — one run with metrics.json + provenance.
The math modules (config, kernels, model, train) are hashed into every checkpoint: a run resumes only
under the code that started it. Experiments (``replicate.press_wolf``, ``replicate.inan``, the scale
study) build on this package.
"""

# Importing this package loads nothing heavy (the workflow reads these lists when it builds the DAG).
MATH_MODULES = ("lstm.config", "lstm.kernels", "lstm.model", "lstm.train")
"""The engine's training math: its hash goes into every checkpoint and result (a run resumes only under it)."""
RUN_MODULES = (*MATH_MODULES, "lstm.runner", "data", "devices")
"""Everything a training job runs: the rules' code-version param (editing any of them reruns the job)."""
