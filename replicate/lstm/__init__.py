"""The shared LSTM language-model engine (Zaremba et al. 2014 / Press & Wolf 2017 / Inan et al. 2017).

- ``config``: ModelConfig, TrainConfig, size presets, lr schedule.
- ``model``: LSTMLM (tying untied | tied | tied_nobias; dropout none | zaremba | variational | inan; PR).
- ``reference``: the math of an LSTM layer and of the output layer, written plainly (defines the results).
- ``kernels``: fast paths for that math (torch's LSTM kernel, fused autograd functions), proven equal
  to ``reference`` in float64 by the tests.
- ``train``: Trainer (reference protocol, checkpoint-resume, hooks), batchify, evaluation.
- ``runner``: train_run(spec, corpus, out_dir) — one run with metrics.json + provenance.
The math modules (config, reference, model, train) are hashed into every checkpoint and result (the math
version): a run resumes only under the math that started it. ``kernels`` is hashed apart (the kernel
version, recorded in provenance): a kernel change proven equal by the tests refuses nothing. Experiments (``replicate.press_wolf``, ``replicate.inan``, the scale
study) build on this package.
"""

# Importing this package loads nothing heavy (the workflow reads these lists when it builds the DAG).
MATH_MODULES = ("lstm.config", "lstm.reference", "lstm.model", "lstm.train")
"""The engine's training math: its hash goes into every checkpoint and result (a run resumes only under it)."""
KERNEL_MODULES = ("lstm.kernels",)
"""How fast the math is computed: hashed apart as the kernel version (provenance only; reruns nothing)."""
RUN_MODULES = (*MATH_MODULES, "lstm.runner", "data", "devices")
"""What a training job's results depend on: the rules' code-version param (editing any of them reruns the
job). The kernels are left out on purpose: they are proven equal to ``reference`` in float64."""
