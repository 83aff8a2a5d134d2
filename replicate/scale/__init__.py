"""Press & Wolf's embedding analysis and the "when does tying pay off" scale study.

- ``embeddings``: update statistics per embedding row (training hook), cheap per-epoch snapshots,
  similarity between embedding matrices (Spearman of cosine structure, k-NN overlap), word-similarity
  benchmarks (Simlex-999, MEN, ... when the user provides the files).
- ``study``: the grid of the scale study (data fractions, WikiText-2, hidden sizes, dropout levels), the
  tying-gain tables with their intervals and the claims with theirs.
- ``stopping``: early stopping on top of the LSTM engine (each point to its own best valid perplexity).
- ``transformer``: a small Llama-style LM (``replicate.llama``) trained on WikiText-2:
  untied vs tied vs tied + output rescale; learning curves, gradient norms, loss spikes.
- ``cli``: ``python -m replicate scale <train|transformer|embeddings|table|transformer-summary>``.
"""

from replicate.lstm import MATH_MODULES as _ENGINE_MATH

LSTM_RUN_MATH = (*_ENGINE_MATH, "scale.embeddings", "scale.stopping")
"""What a scale-study LSTM run computes with (engine + update/snapshot hooks): its summary's ``code_version``."""
TRANSFORMER_RUN_MATH = ("scale.transformer", "llama", "initial_loss.theory")
"""What a scale-study transformer run computes with: its summary's ``code_version``."""
