"""When does tying pay off? The scale study (LSTM grid, a small transformer) and Press & Wolf's embedding
analysis; ``python -m replicate scale <table|embeddings|transformer-summary>``."""


def __getattr__(name: str):  # TRANSFORMER_RUN_MATH: for transformer.py only (its bytes are hashed)
    if name != "TRANSFORMER_RUN_MATH":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from replicate.provenance import code_modules

    return code_modules("scale.transformer")[0]
