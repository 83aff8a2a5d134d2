"""The shared LSTM language-model engine (Zaremba et al. 2014 / Press & Wolf 2017 / Inan et al. 2017).

- ``config``: ModelConfig, TrainConfig, size presets, lr schedule.
- ``model``: LSTMLM (tying untied | tied | tied_nobias; dropout none | zaremba | variational | inan; PR).
- ``reference``: the math of an LSTM layer and of the output layer, written plainly (defines the results).
- ``kernels``: fast paths for that math (torch's LSTM kernel, fused autograd functions), proven equal
  to ``reference`` in float64 by the tests.
- ``train``: Trainer (reference protocol, checkpoint-resume, hooks), batchify, evaluation.
- ``runner``: train_run(spec, corpus, out_dir) — one run with metrics.json + provenance.
The math (``train`` and what it imports: config, model, reference) is hashed into every checkpoint and
result (``provenance.code_modules``): a run resumes only under the math that started it. ``kernels`` is hashed
apart (the kernel version, recorded in provenance): a kernel change proven equal by the tests refuses nothing.
Experiments (``replicate.press_wolf``, ``replicate.inan``, the scale study) build on this package.
"""


def __getattr__(name: str):  # MATH_MODULES: for inan/train.py and inan/subspace_exp.py only (their bytes are hashed)
    if name != "MATH_MODULES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from replicate.provenance import code_modules

    return code_modules("lstm.train")[0]
