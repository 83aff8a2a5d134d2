"""Press & Wolf 2017 (with Zaremba et al. 2014's sizes): their table cells on the shared LSTM engine.

- ``cells``: the rows of Tables 5 and 6 as engine settings, ``cell@key=value`` ablations;
- ``table``: our perplexities beside the paper's; ``bench``: engine speed vs a plain PyTorch loop;
- ``cli``: ``python -m replicate press-wolf <train|table|bench>``.
The model, kernels and training loop are the engine's (``replicate.lstm``).
"""
