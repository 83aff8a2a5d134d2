"""Read the pipeline's result files into one ``Results`` object for the report.

A result the pipeline did not produce in this protocol is ``None`` (the report then says "not run
in this protocol"). A file that exists but lacks a column the report needs is an error naming the
file and the column (formats drift; the report must not silently show less).

The owners' files (paths relative to the results root):
- Press & Wolf (replicate/press_wolf/table.py): tables/press_wolf_table{5,6}.csv with ``cell``, ``row``,
  ``protocol``, ``n_seeds``, ``epochs``, ``params_m_{ours,paper}``, ``{train,valid,test}_{ours,paper,diff,
  rel_diff}``, ``train_clean_ours``, ``schedule``, ``gate_bias``, ``pr_form``, ``pr_lambda``, ``code_version``,
  ``source``; per run press_wolf/<cell>/seed<k>/metrics.json
  (``run``, ``settings``, ``provenance``); history.csv is drawn by the report_learning_curves rule.
- Initial loss (replicate/transformer): tables/initial_loss_summary.csv (one row per configuration,
  ``loss_mean``, ``reference_loss``, ...), tables/initial_loss_theory.csv, tables/model_families.csv,
  initial_loss/metrics.json, initial_loss/memory_benchmark.json.
- Inan (replicate/inan): tables/inan_table1.csv with ``dataset``,
  ``size``, ``model`` (VD-LSTM, +AL, +RE, +REAL), ``valid_ours``/``test_ours`` (or ``valid_ppl``/``test_ppl``),
  ``protocol``, the paper's ``valid_paper``/``test_paper`` (or ``paper_valid_ppl``/``paper_test_ppl``) and
  ``{valid,test}_rel_diff``; Figure 1 data tables/inan_figure1*.csv with ``tau``,
  ``beta``, ``distance`` (or ``distance_mean``), ``protocol`` and ``panel`` (or one file per panel, 1a/1b);
  tables/inan_subspace_readings.csv (one row per reading of the 6.2 setup: ``reading``, its settings, the
  distance per ``beta<b>`` and ``tau<t>_beta1``, the shape checks, ``protocol``).
- Scale study and embedding analysis (replicate/analysis; formats in results/README.md):
  tables/scale_data.csv (``train_tokens``, ``gain``, ``rel_gain`` per (pct, seed)), tables/scale_gain.csv
  (per study point: ``study``, ``hidden``, ``embedding_share_untied``, ``gain_mean``, ...),
  scale/gain_by_seed.csv (per seed: ``study``, ``hidden``, ``rel_gain``), tables/scale_claims.csv (the
  study's own verdicts), tables/scale_transformer.csv, tables/embedding_similarity.csv (``comparison``,
  ``spearman``, ``knn_overlap``), analysis/word_similarity.csv.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from replicate.errors import ReplicateError

PW_TABLES = {"table6": "tables/press_wolf_table6.csv", "table5": "tables/press_wolf_table5.csv"}
IL_SUMMARY = "tables/initial_loss_summary.csv"
IL_THEORY = "tables/initial_loss_theory.csv"
IL_FAMILIES = "tables/model_families.csv"
IL_METRICS = "initial_loss/metrics.json"
IL_MEMORY = "initial_loss/memory_benchmark.json"
INAN_TABLE1 = "tables/inan_table1.csv"
INAN_ABLATION = "tables/inan_ablation.csv"  # the AL settings sweep: tau, alpha (and gamma), valid_ppl, protocol
INAN_FIGURE1_GLOB = "tables/inan_figure1*.csv"  # one file, or one per panel (1a, 1b)
INAN_READINGS = "tables/inan_subspace_readings.csv"  # section 6.2 under each reading of the setup
SCALE_DATA = "tables/scale_data.csv"
SCALE_GAIN = "tables/scale_gain.csv"
SCALE_BY_SEED = "scale/gain_by_seed.csv"
SCALE_CLAIMS = "tables/scale_claims.csv"
SCALE_TRANSFORMER = "tables/scale_transformer.csv"
SCALE_SIMILARITY = "tables/embedding_similarity.csv"
SCALE_WORDSIM = "analysis/word_similarity.csv"
THROUGHPUT_GLOB = ("benchmarks/**/throughput*.json", "benchmarks/**/bench*.json")
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
    scale_data: pd.DataFrame | None = None
    scale_model: pd.DataFrame | None = None
    embedding_similarity: pd.DataFrame | None = None
    # displayed as is
    raw: dict[str, pd.DataFrame] = field(default_factory=dict)      # name -> the CSV as written
    paths: dict[str, str] = field(default_factory=dict)             # name -> path relative to the root's parent
    il_metrics: dict | None = None
    il_memory: dict | None = None
    benchmarks: pd.DataFrame | None = None
    throughput: list[dict] = field(default_factory=list)
    provenance: list[dict] = field(default_factory=list)            # {"path": ..., "provenance": {...}}


def _need(frame: pd.DataFrame, cols, path: Path) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ReplicateError(f"{path} lacks the column(s) {missing} the report reads "
                             f"(it has {list(frame.columns)})",
                             "rebuild it with the current pipeline, or update replicate/report/sources.py "
                             "if the format changed on purpose")


def _aliased(frame: pd.DataFrame, path: Path, names: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """A copy of ``frame`` with each canonical column taken from the first alias present."""
    out = frame.copy()
    for canon, aliases in names.items():
        found = next((a for a in aliases if a in frame.columns), None)
        if found is None:
            raise ReplicateError(f"{path} has none of the columns {list(aliases)} the report reads as {canon!r} "
                                 f"(it has {list(frame.columns)})",
                                 "rebuild it with the current pipeline, or update replicate/report/sources.py")
        out[canon] = frame[found]
    return out


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
    for name, rel in PW_TABLES.items():
        frame = _table(res, root, f"press_wolf_{name}", rel, ["cell", "row", "protocol", "train_ours",
                       "valid_ours", "test_ours", "train_paper", "valid_paper", "test_paper"])
        if frame is None:
            continue
        canon = frame.rename(columns={"cell": "model", "train_ours": "train_ppl", "valid_ours": "valid_ppl",
                                      "test_ours": "test_ppl"})[["model", "train_ppl", "valid_ppl", "test_ppl",
                                                                 "protocol"]]
        setattr(res, "pw_" + name, canon)

    # ------------------------------------------------------------------------ initial loss
    frame = _table(res, root, "initial_loss_summary", IL_SUMMARY,
                   ["token_dist", "branches", "init", "std", "head", "tied", "rescale", "mixer", "d", "n",
                    "loss_mean", "reference_kind", "reference_loss", "diff", "rel_diff", "protocol"],
                   dtype={"std": str})
    if frame is not None:
        for col in ("tied", "rescale"):
            frame[col] = frame[col].astype(str).str.lower().map({"true": True, "false": False})
        res.initial_loss = frame
    _table(res, root, "initial_loss_theory", IL_THEORY, [])
    res.families = _table(res, root, "model_families", IL_FAMILIES, ["model", "vocab_size", "d_model",
                          "n_layers", "tied", "total_params", "embedding_share", "source"])
    if (root / IL_METRICS).is_file():
        res.il_metrics = json.loads((root / IL_METRICS).read_text())
    if (root / IL_MEMORY).is_file():
        res.il_memory = json.loads((root / IL_MEMORY).read_text())

    # -------------------------------------------------------------------------------- Inan
    path = root / INAN_TABLE1
    if path.is_file():
        frame = _read_csv(path)
        canon = _aliased(frame, path, {"valid_ppl": ("valid_ours", "valid_ppl"), "test_ppl": ("test_ours", "test_ppl")})
        _need(canon, ["dataset", "size", "model", "protocol"], path)
        res.raw["inan_table1"], res.paths["inan_table1"] = frame, _rel(root, path)
        res.inan_table1 = canon
    _table(res, root, "inan_ablation", INAN_ABLATION, ["tau", "alpha", "valid_ppl", "protocol"])
    fig1 = []
    for path in sorted(root.glob(INAN_FIGURE1_GLOB)):
        frame = _read_csv(path)
        canon = _aliased(frame, path, {"distance": ("distance", "distance_mean", "mean_distance")})
        if "panel" not in canon.columns:  # one file per panel: ..._figure1a.csv / ..._figure1b.csv
            canon["panel"] = path.stem.removeprefix("inan_figure1").strip("_") or "a"
        _need(canon, ["tau", "beta", "protocol"], path)
        key = path.stem
        res.raw[key], res.paths[key] = frame, _rel(root, path)
        fig1.append(canon)
    if fig1:
        res.inan_figure1 = pd.concat(fig1, ignore_index=True)
    _table(res, root, "inan_subspace_readings", INAN_READINGS, ["reading", "protocol"])

    # ------------------------------------------------------------------------- scale study
    res.scale_data = _table(res, root, "scale_data", SCALE_DATA, ["train_tokens", "gain", "protocol"])
    frame = _table(res, root, "scale_gain", SCALE_GAIN,
                   ["study", "hidden", "embedding_share_untied", "gain_mean", "protocol"])
    if frame is not None:
        by_seed_path = root / SCALE_BY_SEED
        if by_seed_path.is_file():
            by_seed = _read_csv(by_seed_path)
            _need(by_seed, ["study", "hidden", "seed", "rel_gain", "protocol"], by_seed_path)
            model = by_seed[by_seed["study"] == "model"]
            if "embedding_share_untied" not in model.columns:  # older format: the share only per study point
                share = frame[frame["study"] == "model"][["hidden", "embedding_share_untied"]].drop_duplicates("hidden")
                model = model.merge(share, on="hidden", how="inner")
            if len(model):
                res.scale_model = model.rename(columns={"embedding_share_untied": "embedding_share"})
    for key, rel, cols in (("scale_claims", SCALE_CLAIMS, ["claim_id", "verdict", "protocol"]),
                           ("scale_transformer", SCALE_TRANSFORMER, ["variant", "seed", "protocol"]),
                           ("word_similarity", SCALE_WORDSIM, ["benchmark", "status", "protocol"])):
        _table(res, root, key, rel, cols)
    res.embedding_similarity = _table(res, root, "embedding_similarity", SCALE_SIMILARITY,
                                      ["comparison", "spearman", "protocol"])

    # ------------------------------------------------------------------------------ compute
    res.benchmarks = load_benchmarks(root)
    seen = set()
    for pattern in THROUGHPUT_GLOB:
        for path in sorted(root.glob(pattern)):
            if path not in seen:
                seen.add(path)
                res.throughput.append({"path": _rel(root, path), "data": json.loads(path.read_text())})
    if res.il_memory is not None:
        res.throughput.append({"path": _rel(root, root / IL_MEMORY), "data": res.il_memory})

    # --------------------------------------------------------------------------- provenance
    res.provenance = load_provenance(root)
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
