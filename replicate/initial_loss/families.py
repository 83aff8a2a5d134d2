"""Embedding share of real model families: the essay's scale argument in numbers.

The data (vocabulary n, width d, layers, tied or not, total parameters, a source per row) live in
``paper/reference/model_families.csv``; this module only computes from it:

- embedding parameters: n*d if tied, 2*n*d if untied (input + output matrix);
- their share of all parameters (non-embedding parameters grow like L*d^2, embeddings like n*d);
- the pipeline-parallel cost of tying: the first and the last stage hold the same n x d matrix,
  so its gradient (n*d values, 2 bytes each in bf16) is exchanged between them every step.
  For untied rows the column is the cost tying *would* add.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from replicate.errors import ReplicateError

REQUIRED = ("family", "model", "vocab_size", "d_model", "n_layers", "tied", "total_params", "source")
BF16_BYTES = 2


def load_families(path: str | Path) -> pd.DataFrame:
    """Read and check the model-family table (every row must name its source)."""
    path = Path(path)
    if not path.is_file():
        raise ReplicateError(f"model-family table {path} not found",
                             "run from the repository root or set initial_loss.families_csv in the config")
    frame = pd.read_csv(path)
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ReplicateError(f"{path} lacks columns {missing}", f"add them; required: {list(REQUIRED)}")
    if frame["source"].isna().any() or (frame["source"].astype(str).str.strip() == "").any():
        raise ReplicateError(f"{path}: a row without a source", "every row needs a `source` (URL or citation)")
    frame["tied"] = frame["tied"].astype(str).str.lower().map({"true": True, "false": False})
    if frame["tied"].isna().any():
        raise ReplicateError(f"{path}: `tied` must be true or false", "fix the `tied` column")
    return frame


def embedding_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the computed columns (shares, parameter counts, tied-gradient bytes)."""
    out = frame.copy()
    nd = out["vocab_size"].astype("int64") * out["d_model"].astype("int64")
    out["embedding_params"] = nd * out["tied"].map({True: 1, False: 2})
    out["embedding_share"] = out["embedding_params"] / out["total_params"]
    out["non_embedding_params"] = out["total_params"] - out["embedding_params"]
    out["params_saved_by_tying"] = nd
    out["pp_tied_grad_bytes_bf16"] = nd * BF16_BYTES
    out["pp_tied_grad_mib_bf16"] = out["pp_tied_grad_bytes_bf16"] / 2**20
    return out
