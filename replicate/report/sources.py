"""Read the pipeline's result files into one ``Results`` object for the report.

A result the pipeline did not produce in this protocol is ``None`` (the report then says "not run
in this protocol"). A file that exists but lacks a column the report needs is an error naming the
file and the column (formats drift; the report must not silently show less).

The files and their paths are ``replicate.paths``'s (the rules write the same names); the columns read
are named where each file is read below (formats of the scale study's files: results/README.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from replicate import paths as P
from replicate.errors import ReplicateError
from replicate.report import noise

BENCHMARK_GLOB = "benchmarks/**/*.tsv"


@dataclass
class Results:
    """Canonical frames (see claims.py) plus the raw frames the sections display."""
    root: Path = Path("results")
    # canonical frames for the claims
    pw_table6: pd.DataFrame | None = None
    pw_table5: pd.DataFrame | None = None
    inan_table1: pd.DataFrame | None = None
    inan_figure1: pd.DataFrame | None = None
    initial_loss: pd.DataFrame | None = None
    families: pd.DataFrame | None = None
    scale_claims: pd.DataFrame | None = None
    embedding_similarity: pd.DataFrame | None = None
    # displayed as is
    raw: dict[str, pd.DataFrame] = field(default_factory=dict)      # name -> the CSV as written
    paths: dict[str, str] = field(default_factory=dict)             # name -> path relative to the root's parent
    il_memory: dict | None = None
    benchmarks: pd.DataFrame | None = None
    speed: pd.DataFrame | None = None                               # the engine vs a plain loop
    throughput: list[dict] = field(default_factory=list)
    provenance: list[dict] = field(default_factory=list)            # {"path": ..., "provenance": {...}}
    pools: dict[str, Any] = field(default_factory=dict)             # protocol -> noise.Pool (repeated runs)


def _need(frame: pd.DataFrame, cols, path: Path) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ReplicateError(f"{path} lacks the column(s) {missing} the report reads "
                             f"(it has {list(frame.columns)})",
                             "rebuild it with the current pipeline, or update replicate/report/sources.py "
                             "if the format changed on purpose")


def _read_csv(path: Path, **kw) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ReplicateError(f"cannot read {path}: {exc}", "rerun the rule that writes it") from exc


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root.parent))
    except ValueError:
        return str(path)


def _table(res: "Results", root: Path, key: str, rel: str, cols, **read_kw) -> pd.DataFrame | None:
    """Read ``root/rel`` if it exists, check it has ``cols``, register it as ``res.raw[key]`` (the
    frame shown in the report) with its path; None when the result was not produced."""
    path = root / rel
    if not path.is_file():
        return None
    frame = _read_csv(path, **read_kw)
    _need(frame, cols, path)
    res.raw[key], res.paths[key] = frame, _rel(root, path)
    return frame


def load(root: str | Path = "results") -> Results:
    root = Path(root)
    res = Results(root=root)

    # ------------------------------------------------------------------ Press & Wolf tables
    for name, rel in P.PW_TABLES.items():
        frame = _table(res, root, f"press_wolf_{name}", rel, ["cell", "row", "protocol", "train_ours",
                       "valid_ours", "test_ours", "train_paper", "valid_paper", "test_paper"])
        if frame is None:
            continue
        canon = frame.rename(columns={"cell": "model", "train_ours": "train_ppl", "valid_ours": "valid_ppl",
                                      "test_ours": "test_ppl", "train_paper": "paper_train_ppl",
                                      "valid_paper": "paper_valid_ppl", "test_paper": "paper_test_ppl"})
        canon = canon[["model", "train_ppl", "valid_ppl", "test_ppl", "paper_train_ppl", "paper_valid_ppl",
                       "paper_test_ppl", "protocol"] + (["n_seeds"] if "n_seeds" in canon.columns else [])]
        setattr(res, "pw_" + name, canon)

    # ------------------------------------------------------------------------ initial loss
    frame = _table(res, root, "initial_loss_summary", P.IL_SUMMARY,
                   ["token_dist", "branches", "init", "std", "head", "tied", "rescale", "mixer", "d", "n",
                    "loss_mean", "reference_kind", "reference_loss", "diff", "rel_diff", "protocol"],
                   dtype={"std": str})
    if frame is not None:
        for col in ("tied", "rescale"):
            frame[col] = frame[col].astype(str).str.lower().map({"true": True, "false": False})
        res.initial_loss = frame
    _table(res, root, "initial_loss_theory", P.IL_THEORY, [])
    res.families = _table(res, root, "model_families", P.IL_FAMILIES, ["model", "vocab_size", "d_model",
                          "n_layers", "tied", "total_params", "embedding_share", "source"])
    if (root / P.IL_MEMORY).is_file():
        res.il_memory = json.loads((root / P.IL_MEMORY).read_text())

    # -------------------------------------------------------------------------------- Inan
    frame = _table(res, root, "inan_table1", P.INAN_TABLE1, ["dataset", "size", "model", "valid_ppl", "test_ppl",
                                                            "protocol"])
    if frame is not None:
        res.inan_table1 = frame
    _table(res, root, "inan_ablation", P.INAN_ABLATION, ["tau", "alpha", "valid_ppl", "protocol"])
    _table(res, root, "inan_screen", P.INAN_SCREEN, ["model", "tag", "schedule", "valid_ppl", "gain_over_vd",
                                                     "protocol"])
    frame = _table(res, root, "inan_figure1", P.INAN_FIGURE1, ["panel", "tau", "beta", "distance_mean", "protocol"])
    if frame is not None:
        res.inan_figure1 = frame.assign(distance=frame["distance_mean"])
    _table(res, root, "inan_figure1_runs", P.INAN_FIGURE1_RUNS, ["panel", "tau", "beta", "distance", "protocol"])
    _table(res, root, "inan_subspace_readings", P.INAN_READINGS, ["reading", "protocol"])

    # ------------------------------------------------------------------------- scale study
    _table(res, root, "scale_data", P.SCALE_DATA, ["train_tokens", "gain", "protocol"])
    _table(res, root, "scale_gain", P.SCALE_GAIN, ["study", "hidden", "embedding_share_untied", "gain_mean", "protocol"])
    res.scale_claims = _table(res, root, "scale_claims", P.SCALE_CLAIMS,
                              ["claim_id", "verdict", "value", "ci_low", "ci_high", "n", "evidence", "protocol"])
    for key, rel, cols in (("scale_transformer", P.SCALE_TRANSFORMER, ["variant", "seed", "protocol"]),
                           ("scale_transformer_comparison", P.SCALE_TRANSFORMER_COMPARISON, ["variant", "protocol"]),
                           ("word_similarity", P.SCALE_WORDSIM, ["benchmark", "status", "protocol"])):
        _table(res, root, key, rel, cols)
    res.embedding_similarity = _table(res, root, "embedding_similarity", P.SCALE_SIMILARITY,
                                      ["comparison", "spearman", "protocol"])

    # ------------------------------------------------------------------------------ compute
    res.benchmarks = load_benchmarks(root)
    res.speed = _table(res, root, "press_wolf_speed", P.PW_SPEED_TABLE,
                       ["cell", "clock", "threads", "idle", "ours_tok_s", "plain_tok_s", "ratio"])
    if res.il_memory is not None:
        res.throughput.append({"path": _rel(root, root / P.IL_MEMORY), "data": res.il_memory})

    # --------------------------------------------------------------------------- provenance
    res.provenance = load_provenance(root)
    res.pools = noise.scan(root)
    return res


def load_benchmarks(root: Path) -> pd.DataFrame | None:
    """One row per Snakemake ``benchmark:`` file (mean over its repeats), with the job it times."""
    rows = []
    for path in sorted(root.glob(BENCHMARK_GLOB)):
        frame = _read_csv(path, sep="\t")
        _need(frame, ["s", "max_rss", "cpu_time", "mean_load"], path)
        for col in ("s", "max_rss", "cpu_time", "mean_load"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce")  # "-" when not measurable
        rel = path.relative_to(root / "benchmarks")
        rows.append({"experiment": rel.parts[0] if len(rel.parts) > 1 else "-",
                     "job": str(rel.with_suffix("")), "path": _rel(root, path),
                     "wall_s": frame["s"].mean(), "cpu_s": frame["cpu_time"].mean(),
                     "mean_load": frame["mean_load"].mean(), "max_rss_mib": frame["max_rss"].max()})
    return pd.DataFrame(rows) if rows else None


def load_provenance(root: Path) -> list[dict[str, Any]]:
    """Every provenance block under ``root``: result JSONs with a ``provenance`` key and
    ``*.provenance.json`` sidecars (the report's own output excluded)."""
    out = []
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root)
        if rel.parts[0] == "report" or any(p.startswith(".") for p in rel.parts):
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ReplicateError(f"cannot read {path}: {exc}", "rerun the rule that writes it") from exc
        if isinstance(data, dict) and isinstance(data.get("provenance"), dict):
            block = data["provenance"]
        elif path.name.endswith(".provenance.json") and isinstance(data, dict) and "git" in data:
            block = data
        else:
            continue
        out.append({"path": _rel(root, path), "provenance": block})
    return out


def run_label(path: str) -> str:
    """A short label for a result path: results/press_wolf/small/seed1/metrics.json -> press_wolf/small/seed1."""
    p = re.sub(r"^results/", "", path)
    p = re.sub(r"(/metrics)?\.json$|\.provenance\.json$", "", p)
    return p
