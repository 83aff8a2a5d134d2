"""The generated blocks of the report, one function per template directive, each returning Markdown.

Every number comes from a result file (``replicate.report.sources``); a result the configuration
did not produce reads "not run in this protocol". Tables show values common to all rows once above
them and link the full result file under them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from replicate.report import blocks as B
from replicate.report import claims as claims_mod
from replicate.report.format import NO_VALUE, NOT_RUN, fmt_percent
from replicate.report.sources import Results, run_label

# Figures each section shows: explicit stems first, then prefixes (a figure goes to the first
# section that claims it; anything left over appears under "other_figures").
FIGURES = {
    "press_wolf": (["report_press_wolf_learning_curves"], ["press_wolf"]),
    "initial_loss": (["initial_loss_vs_width", "initial_loss_standard_init", "embedding_share"], ["initial_loss"]),
    "inan": ([], ["inan"]),
    "scale": ([], ["scale"]),
}

CAPTIONS = {
    "report_press_wolf_learning_curves":
        "Learning curves: train perplexity (running, as the reference code reports it) and valid perplexity "
        "per epoch, tied vs untied output, with and without projection regularisation (log scale).",
    "initial_loss_vs_width":
        "Initial loss vs model width with zero-initialised residual branches: measured (mean ± sd over seeds) "
        "against log(exp(dσ)+n−1) and the rescaled theory; the red line is log n.",
    "initial_loss_standard_init":
        "Initial loss vs width with standard init (every matrix N(0, σ²), branches not zero): tied and untied.",
    "embedding_share": "Embedding share of parameters against model size for public model families.",
}


@dataclass
class Context:
    results: Results
    verdicts: list
    figures_dir: Path
    captions_dir: Path | None
    md_path: Path
    used_figures: set = field(default_factory=set)
    sections: dict | None = None        # this run's config sections (press_wolf, inan, ...)
    full_protocol: dict | None = None   # the same sections in config/paper.yaml (schema defaults filled)

    def source(self, key: str) -> B.Link:
        """The link to a result file read by ``sources`` (its path relative to the results' parent)."""
        label = self.results.paths[key]
        return B.link(label, self.results.root.parent / label, self.md_path.parent)


# ----------------------------------------------------------------------------------- helpers
def _figure_stems(figures_dir: Path) -> list[str]:
    return sorted(p.stem for p in figures_dir.glob("*.png")) if figures_dir.is_dir() else []


def _caption(ctx: Context, stem: str) -> str:
    """The figure's Snakemake-report caption (workflow/report/<stem>.rst or *_<stem>.rst, written by
    the figure's owner) as plain text; else the report's own caption; else the humanised name."""
    if ctx.captions_dir is not None and ctx.captions_dir.is_dir():
        for path in [ctx.captions_dir / f"{stem}.rst", *sorted(ctx.captions_dir.glob(f"*_{stem}.rst"))]:
            if path.is_file():
                text = " ".join(path.read_text(encoding="utf-8").split())
                if "{{" in text or "{%" in text:  # a Jinja template for Snakemake's report only
                    continue
                return re.sub(r"(``|\*\*|\*|`)([^`*]+)\1", r"\2", text)
    if stem in CAPTIONS:
        return CAPTIONS[stem]
    return stem.replace("_", " ").capitalize() + "."


def _figures(ctx: Context, stems: list[str]) -> list[str]:
    out = []
    for stem in stems:
        if stem in ctx.used_figures:
            continue
        ctx.used_figures.add(stem)
        out.append(B.figure(ctx.figures_dir / f"{stem}.png", _caption(ctx, stem), ctx.md_path.parent))
    return out


def _section_figures(ctx: Context, section: str, what: str) -> str:
    explicit, prefixes = FIGURES.get(section, ([], []))
    stems = _figure_stems(ctx.figures_dir)
    chosen = [s for s in explicit if s in stems]
    chosen += [s for s in stems if any(s.startswith(p) for p in prefixes) and s not in chosen]
    return B.join(_figures(ctx, chosen)) or _missing(what)


def _config_diff(ctx: Context, section: str) -> str:
    """Every config key of ``section`` whose value differs from the papers' full protocol."""
    if not ctx.sections or not ctx.full_protocol or section not in ctx.sections:
        return ""
    ours, full = _flat_config(ctx.sections[section]), _flat_config(ctx.full_protocol.get(section) or {})
    keys = sorted(k for k in set(ours) | set(full) if ours.get(k, "—") != full.get(k, "—"))
    if not keys:
        return f"Configuration: identical to the papers' full protocol (`config/paper.yaml`, `{section}`)."
    return B.join([f"What this configuration changes from the full protocol (`config/paper.yaml`, section "
                   f"`{section}`):",
                   B.bullets([f"{B.code(k)}: {B.code(ours.get(k, '—'))} (full protocol: {B.code(full.get(k, '—'))})"
                              for k in keys])])


def _flat_config(obj, prefix: str = "") -> dict[str, str]:
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(_flat_config(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: json.dumps(obj, sort_keys=True)}


def _missing(what: str) -> str:
    return B.notice(f"{what}: {NOT_RUN}.")


def _first(frame: pd.DataFrame, *names: str) -> str | None:
    return next((n for n in names if n in frame.columns), None)


def _ours_paper(frame: pd.DataFrame, splits: Sequence[str] = ("valid", "test")) -> dict[str, str]:
    """Column map 'ours | paper | rel. diff' per split, for the owners' names of those columns
    (``valid_ours``/``valid_paper`` or ``valid_ppl``/``paper_valid_ppl``)."""
    cols: dict[str, str] = {}
    for split in splits:
        for names, what in (((f"{split}_ours", f"{split}_ppl"), "ours"),
                            ((f"{split}_paper", f"paper_{split}_ppl"), "paper"),
                            ((f"{split}_rel_diff",), "rel. diff")):
            col = _first(frame, *names)
            if col is not None:
                cols[col] = f"{split} {what}"
    return cols


def _rel_cols(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.endswith("rel_diff")]


def _listed(frame: pd.DataFrame, col: str, label: str) -> str:
    """The distinct values of a long text column (e.g. where the paper's numbers come from) as one
    sentence, instead of a column that repeats them."""
    if col not in frame.columns or frame[col].isna().all():
        return ""
    return f"{label}: " + "; ".join(B.escape(v) for v in dict.fromkeys(frame[col].dropna().astype(str))) + "."


# ------------------------------------------------------------------------------------ summary
def section_summary(ctx: Context) -> str:
    rows = [{"claim": claim.statement, "source": claim.paper, "evidence": verdict.evidence,
             "protocol": verdict.protocol or None, "verdict": verdict.status} for claim, verdict in ctx.verdicts]
    counts = {s: sum(v.status == s for _, v in ctx.verdicts) for s in claims_mod.STATUSES}
    return B.table(pd.DataFrame(rows), {"claim": "claim", "source": "source", "evidence": "evidence from our runs",
                                        "protocol": "protocol", "verdict": "verdict"},
                   keep=("claim", "verdict"),
                   caption=f"{len(rows)} claims: {counts[claims_mod.HOLDS]} hold, {counts[claims_mod.FAILS]} do "
                           f"not hold, {counts[claims_mod.INCONCLUSIVE]} inconclusive, {counts[NOT_RUN]} not run "
                           "in this protocol. Verdicts are computed from our result tables "
                           "(`replicate/report/claims.py`), never from the papers' numbers.")


# ------------------------------------------------------------------------------- Press & Wolf
PW_TRAIN_LEGEND = (
    "**train (running)** is the mean perplexity over the last epoch's batches, with dropout on and the "
    "weights moving: what the TF scripts print and what Table 6 reports. **train (clean)** is the train "
    "perplexity after training, without dropout: what the Lua BD scripts print and what Table 5's BD rows "
    "report. rel. diff = (ours − paper) / paper; — = no number in the paper.")


def _pw_settings(res: Results) -> str:
    """What the runs changed relative to each cell's paper settings (from metrics.json settings)."""
    from replicate.press_wolf.cells import CELLS, parse_cell

    changes: dict[str, set] = {}
    for path in sorted(res.root.glob("press_wolf/*/seed*/metrics.json")):
        m = json.loads(path.read_text())
        base, _ = parse_cell(m["run"].rpartition("/seed")[0])
        for k, v in m.get("settings", {}).items():
            if k not in ("seed",) and CELLS[base].get(k, object()) != v:
                changes.setdefault(f"{k} = {v}", set()).add(base)
    if not changes:
        return "Settings: each cell exactly as in the papers (no overrides)."
    return B.join(["Settings changed from the papers' protocol (cells affected):",
                   B.bullets([f"{B.code(k)} ({B.escape(', '.join(sorted(v)))})" for k, v in sorted(changes.items())])])


def _pw_table(ctx: Context, key: str) -> str:
    frame = ctx.results.raw[key].copy()
    frame.insert(0, "model", frame["row"].where(frame["row"].notna(), frame["cell"]))
    cols = {"model": "model", "params_m_ours": "params M", "train_ours": "train (running) ours",
            "train_paper": "train (running) paper", "train_clean_ours": "train (clean) ours", **_ours_paper(frame),
            "pr_form": "PR form", "protocol": "protocol", "n_seeds": "seeds", "epochs": "epochs",
            "schedule": "schedule", "gate_bias": "gate bias", "code_version": "code version",
            "pr_lambda": "PR weight λ"}
    if frame.get("pr_form", pd.Series(dtype=object)).isna().all():  # no cell with PR
        del cols["pr_form"]
    table = B.table(frame, cols, keep=("model", "pr_form"), partial=("pr_lambda",), percent=_rel_cols(frame),
                    caption=f"Our perplexities (mean over seeds) beside Press & Wolf's. {PW_TRAIN_LEGEND}",
                    source=ctx.source(key))
    return B.join([table, _listed(frame, "source", "Paper numbers")])


def section_press_wolf(ctx: Context) -> str:
    res = ctx.results
    out: list[str] = []
    for name, title in (("table6", "Table 6: small model, no dropout"), ("table5", "Table 5: large models")):
        key = f"press_wolf_{name}"
        out.append(f"### Press & Wolf {title}")
        out.append(_pw_table(ctx, key) if key in res.raw else _missing(f"Press & Wolf {title}"))
    if any(f"press_wolf_{n}" in res.raw for n in ("table6", "table5")):
        out.append(_pw_settings(res))
    out += [_config_diff(ctx, "press_wolf"), "### Learning curves",
            _section_figures(ctx, "press_wolf", "Learning curves")]
    return B.join(out)


# ------------------------------------------------------------------------------- initial loss
IL_TRUNK = {"token_dist": "tokens", "branches": "branches", "init": "init", "std": "σ"}
IL_ROW = {"head": "head", "reference_kind": "reference", "n": "vocabulary n", "n_layers": "layers",
          "protocol": "protocol"}


def initial_loss_pivots(summary: pd.DataFrame) -> list[pd.DataFrame]:
    """Per trunk (token distribution, branches, init, σ) a frame with one row per output head and, per
    width d, the measured loss (mean over seeds) in column ``<d> measured`` beside its reference in
    ``<d> reference``."""
    trunk = [c for c in IL_TRUNK if c in summary.columns]
    keys = trunk + [c for c in IL_ROW if c in summary.columns]
    per_width = [f"{d} {what}" for d in sorted(summary["d"].unique()) for what in ("measured", "reference")]
    out = []
    for _, part in summary.groupby(trunk, sort=False, dropna=False):
        rows = []
        for values, variant in part.groupby(keys, sort=False, dropna=False):
            row = dict(zip(keys, values))
            for _, rec in variant.iterrows():
                row[f"{rec['d']} measured"], row[f"{rec['d']} reference"] = rec["loss_mean"], rec["reference_loss"]
            rows.append(row)
        out.append(pd.DataFrame(rows, columns=keys + per_width))
    return out


def _initial_loss_tables(ctx: Context, summary: pd.DataFrame) -> list[str]:
    seeds = ", ".join(str(int(x)) for x in sorted(summary["n_seeds"].unique())) if "n_seeds" in summary else "?"
    out = ["Initial loss in nats, one table per trunk (token distribution, residual branches, init, σ), one row "
           "per output head. For each width d: the measured loss (mean over seeds; seeds per point: "
           f"{seeds}), then its reference (ref.): theory = log(exp(dσ)+n−1), theory_rescaled = "
           "log(exp(σ√d)+n−1), log_n = log n. The article: 12 layers, n = 32k, widths up to 4096. The full table "
           "(one row per configuration and width, with sd, differences and the refined theory) is linked under "
           "each table."]
    labels = IL_TRUNK | IL_ROW
    for frame in initial_loss_pivots(summary):
        present = [c for c in labels if c in frame.columns]
        constant = [c for c in present if c != "head" and frame[c].nunique(dropna=False) == 1]
        widths = {c: f"d={c.split()[0]}" if c.endswith("measured") else "ref." for c in frame.columns
                  if c.endswith(("measured", "reference"))}
        lead = "; ".join(f"{labels[c]} **{B.cell(frame[c].iloc[0], c)[0]}**" for c in constant)
        out.append(B.table(frame, {c: labels[c] for c in present if c not in constant} | widths,
                           keep=("head", *widths), caption=f"In this table: {lead}.",
                           source=ctx.source("initial_loss_summary")))
    return out


def section_initial_loss(ctx: Context) -> str:
    res = ctx.results
    out = ["### Measured initial loss against the theory"]
    s = res.raw.get("initial_loss_summary")
    out += [_missing("Initial-loss sweep")] if s is None else _initial_loss_tables(ctx, s)
    out.append("### The essay's table: exp(dσ) against n")
    t = res.raw.get("initial_loss_theory")
    out.append(_missing("Theory table") if t is None else
               B.table(t, caption="Closed-form values (no training).", source=ctx.source("initial_loss_theory")))
    out.append("### Embedding share of parameters in public model families")
    f = res.raw.get("model_families")
    if f is None:
        out.append(_missing("Model-family table"))
    else:
        cols = {c: B.humanise(c) for c in ["family", "model", "vocab_size", "d_model", "n_layers", "tied",
                                           "total_params", "embedding_params", "embedding_share"]}
        cols |= {"pp_tied_grad_mib_bf16": "PP tied-grad (MiB)", "source": "source"}
        out.append(B.table(f, cols, keep=("model",), source=ctx.source("model_families"),
                           caption="Parameters from the public configs (source per row); embedding parameters n·d "
                                   "tied, 2·n·d untied; PP tied-grad: the bf16 gradient of the tied matrix exchanged "
                                   "per step under pipeline parallelism."))
    out += [_config_diff(ctx, "initial_loss"), "### Figures",
            _section_figures(ctx, "initial_loss", "Initial-loss figures")]
    return B.join(out)


# --------------------------------------------------------------------------------------- Inan
INAN_BAR = 0.05  # a Table 1 row reproduces when its valid and test perplexity are within 5 % of the paper's


def _inan_outside_bar(t: pd.DataFrame) -> str:
    """One sentence naming the Table 1 rows more than INAN_BAR from the paper, and by how much."""
    rel = _rel_cols(t)
    if not rel or t[rel].isna().all().all():
        return ""
    rows = []
    for _, row in t.iterrows():
        over = [f"{c.split('_')[0]} {fmt_percent(row[c])}" for c in rel if pd.notna(row[c]) and abs(row[c]) > INAN_BAR]
        if over:
            rows.append(f"{row['dataset']} {row['size']} {row['model']} ({', '.join(over)})")
    if not rows:
        return f"Every row is within {INAN_BAR:.0%} of the paper's valid and test perplexity."
    return (f"More than {INAN_BAR:.0%} from the paper's valid or test perplexity: {'; '.join(rows)}. "
            "What was tried for the published run's rows that miss, with their per-epoch evidence: "
            "docs/inan.md, Findings.")


def _inan_table1(ctx: Context) -> str:
    t = ctx.results.raw["inan_table1"]
    cols = {"dataset": "data set", "size": "size", "model": "model",
            **_ours_paper(t), "tau": "tau", "gamma": "gamma", "alpha": "alpha",
            "n_seeds": "seeds", "epochs": "epochs", "dropout_rate": "dropout", "embedding_dropout": "embedding dropout",
            "protocol": "protocol"}
    return B.join([B.table(t, cols, keep=("model",), partial=("tau", "gamma", "alpha"), percent=_rel_cols(t),
                                     caption="Our perplexities beside Inan et al.'s; rel. diff = (ours − paper) / "
                                             "paper; — = no number in the paper.",
                                     source=ctx.source("inan_table1")),
                   _inan_outside_bar(t),
                   _listed(t, _first(t, "paper_source", "source") or "paper_source", "Paper numbers")])


def _inan_figure1(ctx: Context, key: str) -> str:
    f = ctx.results.raw[key]
    cols = [c for c in f.columns if c != "paper_source"]
    what = "one row per run (seed)" if key.endswith("_runs") else "mean over seeds per point"
    return B.join([B.table(f, cols, digits={c: 3 for c in f.columns if "distance" in c},
                           caption=f"Figure 1 data, {what} (normalised subspace distance; 1 = orthogonal, 0 = same "
                                   "space).",
                           source=ctx.source(key)),
                   _listed(f, "paper_source", "Paper numbers")])


READING_DETAIL = ("fall_0_to_1", "first_step_share", "distance_beta1", "tau_effect")  # in the linked CSV


def _inan_readings(ctx: Context) -> str:
    f = ctx.results.raw["inan_subspace_readings"]
    return B.table(f, [c for c in f.columns if c not in READING_DETAIL], keep=("reading",),
                   digits={c: 3 for c in f.columns if c.startswith(("beta", "tau", "paper_distance"))},
                   caption="The same points under each reading of the setup the paper leaves open: the distance "
                           "per beta (tau fixed) and per tau (beta = 1), and whether the reading has Figure 1's "
                           "shape (a rapid decrease with beta; lower at larger tau).",
                   source=ctx.source("inan_subspace_readings"))


def section_inan(ctx: Context) -> str:
    res = ctx.results
    out = ["### Table 1: AL, RE and REAL",
           _inan_table1(ctx) if "inan_table1" in res.raw else _missing("Inan et al. Table 1"),
           "### Choosing the augmented-loss settings: validation perplexity of the ablation"]
    ab = res.raw.get("inan_ablation")
    out.append(_missing("The augmented-loss ablation") if ab is None else
               B.table(ab, caption="Validation perplexity over the grid (best_valid marks the lowest). The paper "
                                   "does not give these settings; this sweep is how the pipeline's choice is "
                                   "checked against data.", source=ctx.source("inan_ablation")))
    out.append("### Section 6.2: subspace distance between input and output embeddings")
    fig1 = sorted(k for k in res.raw if k.startswith("inan_figure1"))
    out += [_inan_figure1(ctx, k) for k in fig1] or [_missing("Inan et al. Figure 1 data")]
    if "inan_subspace_readings" in res.raw:
        out.append(_inan_readings(ctx))
    out += [_config_diff(ctx, "inan"), "### Figures", _section_figures(ctx, "inan", "Inan et al. figures")]
    return B.join(out)


# -------------------------------------------------------------------------------- scale study
# (result, heading, caption, columns shown: None = all; the full file is linked under each table)
SCALE_TABLES = (
    ("scale_claims", "The study's own trend tests", "Verdicts the scale study computes itself (slope beyond 2 "
     "standard errors; 'inconclusive' otherwise). The summary's scale claims apply the same rule.", None),
    ("scale_gain", "Tying gain at every point of the study", "Mean over seeds; gain = valid ppl untied − tied; "
     "sem = standard error of the mean over seeds.",
     ["study", "dataset", "pct", "train_tokens", "hidden", "n_seeds", "untied_valid_ppl_mean", "tied_valid_ppl_mean",
      "gain_mean", "gain_sem", "rel_gain_mean", "embedding_share_untied", "metric", "protocol"]),
    ("scale_data", "Tying gain against training data (per seed)", "Nested fractions of the PTB training split.",
     None),
    ("embedding_similarity", "How alike the tied, input and output embeddings are",
     "Spearman correlation of the pairwise cosine similarities over the most frequent words, and the "
     "nearest-neighbour overlap (final epoch) against its chance level.",
     ["comparison", "seed_a", "seed_b", "same_seed", "shared_init", "epoch", "top_k", "spearman", "knn_overlap",
      "knn_k", "knn_chance", "protocol"]),
    ("word_similarity", "Word-similarity benchmarks", "Human-judgement benchmarks (only when configured).", None),
    ("scale_transformer", "Small transformer on WikiText-2: untied vs tied vs tied + rescale",
     "Initial loss at step 0 against the sweep's theory and log n, final valid loss, gradient-norm statistics, "
     "spike counts.",
     ["variant", "std", "seed", "d_model", "n_layers", "vocab_size", "steps", "step0_loss", "theory_step0_loss",
      "log_n", "final_valid_loss", "grad_norm_median", "grad_norm_max", "clip_fraction", "loss_spikes",
      "grad_spikes", "protocol"]),
)


def section_scale(ctx: Context) -> str:
    res = ctx.results
    out: list[str] = []
    for key, title, caption, columns in SCALE_TABLES:
        out.append(f"### {title}")
        frame = res.raw.get(key)
        out.append(_missing(title) if frame is None else
                   B.table(frame, columns, caption=caption,
                           keep=("claim", "verdict"), source=ctx.source(key),
                           digits={c: 3 for c in frame.columns
                                   if any(w in c for w in ("spearman", "overlap", "share", "rel_", "loss"))}))
    out += [_config_diff(ctx, "scale"), "### Figures", _section_figures(ctx, "scale", "Scale-study figures")]
    return B.join(out)


def section_other_figures(ctx: Context) -> str:
    rest = [s for s in _figure_stems(ctx.figures_dir) if s not in ctx.used_figures]
    return B.join(_figures(ctx, rest)) or "None: every figure appears in its experiment's section."


# ------------------------------------------------------------------------------------ compute
def _device_of(p: dict) -> str:
    dev = p.get("device") or {}
    name = dev.get("device") or "not recorded"
    if dev.get("gpu"):
        name = f"{name} ({dev['gpu']})"
    elif str(name).startswith("cpu") or name == "not recorded":
        bits = [f"{dev['torch_threads']} torch threads" if dev.get("torch_threads") else "",
                f"{dev['cpu_count']} CPUs" if dev.get("cpu_count") else ""]
        bits = [b for b in bits if b]
        if bits:
            name = f"{name} ({', '.join(bits)})"
    return name


def _job_device(job: str, records: list[dict]) -> str:
    """Device of a benchmarked job, from the provenance of the result it wrote: the result at the same
    path (results/<job>/...), else the single result of the same experiment and folder whose name ends
    the job's name (benchmarks/initial_loss/sweep_d64 <-> initial_loss/runs/d64.csv)."""
    labels = {run_label(p["path"]): p["provenance"] for p in records}
    if job in labels:
        return _device_of(labels[job])
    head, _, last = job.rpartition("/")
    exp = job.split("/", 1)[0]
    hits = []
    for label, block in labels.items():
        if label.split("/", 1)[0] != exp:
            continue
        stem = label.rpartition("/")[2].split(".", 1)[0]
        if stem and (last.endswith(stem) or stem.startswith(last)):
            hits.append(block)
    devices = {_device_of(b) for b in hits}
    return devices.pop() if len(devices) == 1 else "not recorded"


def section_compute(ctx: Context) -> str:
    res = ctx.results
    out = ["### Per job (Snakemake benchmark files)"]
    b = res.benchmarks
    if b is None:
        out.append(_missing("Benchmark files (results/benchmarks/)"))
    else:
        b = b.copy()
        b["device"] = [_job_device(job, res.provenance) for job in b["job"]]
        total = pd.DataFrame([{"experiment": "all", "job": f"total ({len(b)} jobs)", "wall_s": b["wall_s"].sum(),
                               "cpu_s": b["cpu_s"].sum(), "mean_load": None, "max_rss_mib": b["max_rss_mib"].max(),
                               "device": ""}])
        b = pd.concat([b, total], ignore_index=True)
        folder = res.root / "benchmarks"
        out.append(B.table(b, {"experiment": "experiment", "job": "job", "wall_s": "wall (s)", "cpu_s": "CPU (s)",
                               "mean_load": "mean load (%)", "max_rss_mib": "peak RSS (MiB)", "device": "device"},
                           keep=("job", "wall_s", "cpu_s", "max_rss_mib"),  # the total row may repeat one job's
                           caption="Wall time, CPU time, mean CPU load (%) and peak resident memory per job; device "
                                   "from the job's provenance where the job wrote one.",
                           source=B.link("results/benchmarks/", folder, ctx.md_path.parent)))
    out.append("### Throughput and memory benchmarks")
    if res.speed is None:
        out.append(_missing("Training-speed benchmark (target press_wolf_speed, on an idle machine)"))
    else:
        out.append(B.table(res.speed, {"size": "size", "clock": "clock", "threads": "threads",
                                       "load_1min_start": "load at start", "load_1min_end": "load at end",
                                       "idle": "idle", "ours_tok_s": "ours (tok/s)", "plain_tok_s": "plain loop (tok/s)",
                                       "ratio": "ours / plain", "mfu_ours": "ours, share of matmul peak"},
                           keep=("size", "clock", "ratio"), percent=("mfu_ours",),
                           caption="Training tokens/s of this engine and of a plain PyTorch loop in the same run "
                                   "(medians of the repeats; per wall-clock second and per CPU second). A ratio "
                                   "measured while the machine was not idle is not comparable with idle figures.",
                           source=ctx.source("press_wolf_speed")))
    for item in res.throughput:
        rows = [{"key": k, "value": v} for k, v in _flatten(item["data"]).items() if not k.startswith("provenance")]
        out.append(B.table(pd.DataFrame(rows), keep=("key", "value"), digits={"value": 3}, caption="Benchmark record.",
                           source=B.link(item["path"], res.root.parent / item["path"], ctx.md_path.parent)))
    return B.join(out)


def _flatten(obj, prefix: str = "") -> dict:
    """Nested JSON -> {"a.b[0].c": value}; lists of scalars become one comma-separated value."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list):
        if all(not isinstance(v, (dict, list)) for v in obj):
            return {prefix: ", ".join(str(v) for v in obj)}
        out = {}
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: obj}


# --------------------------------------------------------------------------------- provenance
def section_provenance(ctx: Context) -> str:
    res = ctx.results
    if not res.provenance:
        return _missing("Provenance records")
    rows = []
    for item in res.provenance:
        p = item["provenance"]
        cfg = p.get("config") or {}
        git = p.get("git") or {}
        pk = p.get("packages") or {}
        rows.append({"run": run_label(item["path"]), "protocol": cfg.get("protocol", "not recorded")
                     if isinstance(cfg, dict) else "not recorded",
                     "commit": (git.get("commit") or "not recorded")[:10],
                     "dirty": {True: "yes", False: "no"}.get(git.get("dirty"), "not recorded"),
                     "device": _device_of(p), "torch": pk.get("torch") or NO_VALUE,
                     "python": pk.get("python") or NO_VALUE, "started": p.get("started", NO_VALUE),
                     "finished": p.get("finished", NO_VALUE)})
    versions: dict[str, set] = {}
    for item in res.provenance:
        for name, v in (item["provenance"].get("packages") or {}).items():
            versions.setdefault(name, set()).add(str(v))
    out = [B.table(pd.DataFrame(rows), keep=("run",), caption="Every run whose result is shown: commit, device, "
                                                             "package versions and time, from its provenance block."),
           "### Package versions",
           B.table(pd.DataFrame([{"package": k, "versions": ", ".join(sorted(v))}
                                 for k, v in sorted(versions.items())]), keep=("package", "versions")),
           "### Configuration of every run"]
    out += [B.details(f"{run_label(item['path'])} ({item['path']})",
                      json.dumps(item["provenance"].get("config"), indent=1, sort_keys=True, default=str))
            for item in res.provenance]
    return B.join(out)


BUILDERS: dict[str, Callable[[Context], str]] = {
    "summary": section_summary, "press_wolf": section_press_wolf, "inan": section_inan,
    "initial_loss": section_initial_loss, "scale": section_scale, "other_figures": section_other_figures,
    "compute": section_compute, "provenance": section_provenance,
}
