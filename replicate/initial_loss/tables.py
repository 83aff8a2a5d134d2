"""The initial-loss tables. The sweep: mean over seeds, the reference each configuration should meet, the gap
(``reference_kind``: ``theory`` for tied, zero branches, no mixer; ``theory_rescaled``, the same with the d^-1/2
rescale; ``log_n`` for everything else, uniform tokens only). The model families
(``paper/reference/model_families.csv``, a source per row): embedding parameters n*d tied, 2*n*d untied, their
share, and the bf16 gradient of the tied matrix that pipeline parallelism exchanges every step."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from replicate.errors import ReplicateError
from replicate.initial_loss.theory import initial_loss
from replicate.llama import ModelConfig

KEYS = ["token_dist", "branches", "init", "std", "head", "tied", "rescale", "mixer", "d", "n", "n_layers"]


NORM_EPS = ModelConfig().norm_eps   # the RMSNorm epsilon the sweep's models use


def reference(row) -> tuple[str, float]:
    if row["branches"] == "zero" and row["tied"] and row["mixer"] == "none":
        kind = "theory_rescaled" if row["rescale"] else "theory"
        return kind, float(initial_loss(row["d"], row["sigma"], int(row["n"]), rescale=bool(row["rescale"])))
    return "log_n", math.log(row["n"])


def summarise(tidy: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """One row per configuration: seeds' mean and sd of the loss, reference, difference."""
    g = tidy.groupby(KEYS, sort=True, dropna=False)
    out = g.agg(sigma=("sigma", "first"), loss_mean=("loss", "mean"), loss_sd=("loss", "std"),
                n_seeds=("seed", "nunique"), self_logit_mean=("self_logit_mean", "mean"),
                tokens_per_seed=("tokens", "first")).reset_index()
    refs = out.apply(reference, axis=1, result_type="expand")
    out["reference_kind"], out["reference_loss"] = refs[0], refs[1]
    out["diff"] = out["loss_mean"] - out["reference_loss"]
    # A refined theory for the same rows: RMSNorm epsilon + the spread of the other logits.
    theory_rows = out["reference_kind"].str.startswith("theory")
    out["theory_refined_loss"] = np.where(theory_rows, initial_loss(
        out["d"], out["sigma"], int(out["n"].iloc[0]), rescale=False, eps=NORM_EPS, spread=True), np.nan)
    resc = theory_rows & out["rescale"].astype(bool)
    out.loc[resc, "theory_refined_loss"] = initial_loss(out.loc[resc, "d"], out.loc[resc, "sigma"],
                                                        int(out["n"].iloc[0]), True, NORM_EPS, True)
    out["diff_refined"] = out["loss_mean"] - out["theory_refined_loss"]
    out["rel_diff"] = out["diff"] / out["reference_loss"]
    out["log_n"] = np.log(out["n"].astype(float))
    out["protocol"] = protocol
    return out


def findings(summary: pd.DataFrame) -> dict:
    """The headline numbers for metrics.json and the report (uniform tokens only)."""
    s = summary[summary["token_dist"] == "uniform"]
    res: dict = {}
    for kind in ("theory", "theory_rescaled"):
        part = s[s["reference_kind"] == kind]
        if len(part):
            res[f"max_abs_diff_{kind}"] = {std: float(p["diff"].abs().max()) for std, p in part.groupby("std")}
            res[f"max_abs_diff_{kind}_d_ge_128"] = {
                std: float(p.loc[p["d"] >= 128, "diff"].abs().max()) if (p["d"] >= 128).any() else None
                for std, p in part.groupby("std")}
    refined = s[s["reference_kind"].str.startswith("theory")]
    if len(refined):
        res["max_abs_diff_refined"] = {f"{kind}/{std}": float(p["diff_refined"].abs().max())
                                       for (kind, std), p in refined.groupby(["reference_kind", "std"])}
    normal = s[(s["branches"] == "normal") & (s["mixer"] == "none")]
    if len(normal):
        res["normal_branches_loss_range"] = {
            f"{init}/{std}/{head}": [float(p["loss_mean"].min()), float(p["loss_mean"].max())]
            for (init, std, head), p in normal.groupby(["init", "std", "head"])}
    res["log_n"] = float(s["log_n"].iloc[0]) if len(s) else None
    return res


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
