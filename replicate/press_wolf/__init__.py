"""Press & Wolf 2017 (with Zaremba et al. 2014's sizes): their table cells on the shared LSTM engine.

- ``cells``: the rows of Tables 5 and 6 as engine settings, ``cell@key=value`` ablations;
- ``table``: our perplexities beside the paper's; ``bench``: engine speed vs a plain PyTorch loop;
- ``cli``: ``python -m replicate press-wolf <train|table|bench>``.
The model, kernels and training loop are the engine's (``replicate.lstm``).
"""

from replicate.lstm import KERNEL_MODULES, MATH_MODULES

BENCH_MODULES = ("press_wolf.bench", "inan.losses", "inan.train", "inan.trainer", *MATH_MODULES, *KERNEL_MODULES)
"""The code a speed figure measures: its ``code_version`` (the JSON) and the rule's rerun trigger."""
