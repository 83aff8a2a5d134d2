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


def __getattr__(name: str):  # TRANSFORMER_RUN_MATH: for transformer.py only (its bytes are hashed)
    if name != "TRANSFORMER_RUN_MATH":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from replicate.provenance import code_modules

    return code_modules("scale.transformer")[0]
