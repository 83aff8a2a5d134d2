"""Assemble results/report/report.md and results/report/index.html from the result files.

The narrative lives in a template (paper/report_template.md): Markdown headings and paragraphs in
our own words, with directives the builder fills in:

- a line ``{{name}}`` alone inserts a generated block: ``summary`` (the claims table), ``press_wolf``,
  ``inan``, ``initial_loss``, ``scale``, ``other_figures``, ``compute``, ``provenance``;
- inline ``{{verdict:<claim id>}}`` becomes the verdict of that claim (bold), ``{{protocol}}`` the
  protocol label(s) of the results shown.

Every generated number is read from a result file; a missing result is shown as
"not run in this protocol", never as a number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from replicate import provenance as prov
from replicate.errors import ReplicateError
from replicate.report import claims as claims_mod
from replicate.report.document import (NOT_RUN, Bullets, Cell, Details, Figure, Heading, Notice, Para, Table,
                                       fmt_number, frame_table, slug, to_html, to_markdown)
from replicate.report.sources import Results, load, run_label

SECTIONS = ("summary", "press_wolf", "inan", "initial_loss", "scale", "other_figures", "compute", "provenance")

# Figures each section shows: explicit stems first, then prefixes (a figure goes to the first
# section that claims it; anything left over appears under "other_figures").
FIGURES = {
    "press_wolf": (["report_press_wolf_learning_curves"], ["press_wolf"]),
    "initial_loss": (["initial_loss_vs_width", "initial_loss_standard_init", "embedding_share"], ["initial_loss"]),
    "inan": ([], ["inan"]),
    "scale": ([], ["scale", "analysis"]),
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
    used_figures: set
    sections: dict | None = None        # this run's config sections (press_wolf, inan, ...)
    full_protocol: dict | None = None   # the same sections in config/paper.yaml (schema defaults filled)


# ------------------------------------------------------------------------------------ helpers
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


def _section_figures(ctx: Context, section: str) -> list[Figure]:
    explicit, prefixes = FIGURES.get(section, ([], []))
    stems = _figure_stems(ctx.figures_dir)
    chosen = [s for s in explicit if s in stems]
    chosen += [s for s in stems if any(s.startswith(p) for p in prefixes) and s not in chosen]
    out = []
    for stem in chosen:
        if stem in ctx.used_figures:
            continue
        ctx.used_figures.add(stem)
        svg = ctx.figures_dir / f"{stem}.svg"
        out.append(Figure(ctx.figures_dir / f"{stem}.png", _caption(ctx, stem), svg if svg.is_file() else None))
    return out


def _config_diff(ctx: Context, section: str) -> list:
    """Bullets: every config key of ``section`` whose value differs from the papers' full protocol."""
    if not ctx.sections or not ctx.full_protocol or section not in ctx.sections:
        return []
    ours, full = _flat_config(ctx.sections[section]), _flat_config(ctx.full_protocol.get(section) or {})
    keys = sorted(k for k in set(ours) | set(full) if ours.get(k, "—") != full.get(k, "—"))
    if not keys:
        return [Para(f"Configuration: identical to the papers' full protocol (`config/paper.yaml`, `{section}`).")]
    return [Para(f"What this configuration changes from the full protocol (`config/paper.yaml`, section `{section}`):"),
            Bullets([f"`{k}`: {ours.get(k, '—')} (full protocol: {full.get(k, '—')})" for k in keys])]


def _flat_config(obj, prefix: str = "") -> dict[str, str]:
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(_flat_config(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: json.dumps(obj, sort_keys=True)}


def _missing(what: str) -> Notice:
    return Notice(f"{what}: {NOT_RUN}.")


def _protocols(frame: pd.DataFrame | None) -> str:
    if frame is None or "protocol" not in frame.columns:
        return ""
    return ", ".join(str(p) for p in dict.fromkeys(frame["protocol"].dropna()))


def _side_by_side(frame: pd.DataFrame, key_cols: dict[str, str], metrics: list[tuple[str, str]],
                  extra: dict[str, str] | None = None) -> dict[str, str]:
    """Column map for a table 'ours | paper | difference | relative difference' per metric."""
    cols = dict(key_cols)
    for prefix, label in metrics:
        cols[f"{prefix}_ours"] = f"{label} (ours)"
        cols[f"{prefix}_paper"] = f"{label} (paper)"
        cols[f"{prefix}_diff"] = f"{label} diff"
        cols[f"{prefix}_rel_diff"] = f"{label} rel. diff"
    cols.update(extra or {})
    return _present(frame, cols)


def _present(frame: pd.DataFrame, labels: dict[str, str]) -> dict[str, str]:
    """``{column: label}`` restricted to the columns the frame has, in the given order."""
    return {k: v for k, v in labels.items() if k in frame.columns}


def _rel_cols(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.endswith("rel_diff")]


# ----------------------------------------------------------------------------------- sections
def section_summary(ctx: Context) -> list:
    rows = []
    for claim, verdict in ctx.verdicts:
        css = {claims_mod.HOLDS: "holds", claims_mod.FAILS: "does-not-hold",
               claims_mod.INCONCLUSIVE: "inconclusive"}.get(verdict.status, "not-run")
        rows.append([Cell(claim.statement), Cell(claim.paper), Cell(verdict.evidence),
                     Cell(verdict.protocol or "—"), Cell(verdict.status, raw=claim.id, css=css)])
    counts = {s: sum(v.status == s for _, v in ctx.verdicts) for s in claims_mod.STATUSES}
    return [Table(["claim", "source", "evidence from our runs", "protocol", "verdict"], rows,
                  caption=f"{len(rows)} claims: {counts[claims_mod.HOLDS]} hold, {counts[claims_mod.FAILS]} do not "
                          f"hold, {counts[claims_mod.INCONCLUSIVE]} inconclusive, {counts[NOT_RUN]} not run in "
                          "this protocol. Verdicts are computed from our "
                          "result tables (replicate/report/claims.py), never from the papers' numbers.")]


def _pw_protocol(res: Results) -> list:
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
        return [Para("Settings: each cell exactly as in the papers (no overrides).")]
    return [Para("Settings changed from the papers' protocol (cells affected):"),
            Bullets([f"`{k}` ({', '.join(sorted(v))})" for k, v in sorted(changes.items())])]


def section_press_wolf(ctx: Context) -> list:
    res = ctx.results
    blocks: list = []
    for name, title in (("table6", "Table 6: small model, no dropout"), ("table5", "Table 5: large models")):
        key = f"press_wolf_{name}"
        blocks.append(Heading(3, f"Press & Wolf {title}"))
        frame = res.raw.get(key)
        if frame is None:
            blocks.append(_missing(f"Press & Wolf {title}"))
            continue
        cols = _side_by_side(frame, {"row": "model", "cell": "cell"},
                             [("train", "train ppl"), ("valid", "valid ppl"), ("test", "test ppl")],
                             {"params_m_ours": "params M (ours)", "params_m_paper": "params M (paper)",
                              "n_seeds": "seeds", "epochs": "epochs", "protocol": "protocol"})
        blocks.append(Para(f"Protocol: **{_protocols(frame)}**."))
        blocks.append(frame_table(frame, caption=f"Our perplexities (mean over seeds) beside Press & Wolf's; "
                                                 "diff = ours − paper, rel. diff = diff / paper.",
                                  source=res.paths[key], columns=cols, percent=_rel_cols(frame)))
    if res.raw.get("press_wolf_table6") is not None or res.raw.get("press_wolf_table5") is not None:
        blocks += _pw_protocol(res)
    blocks += _config_diff(ctx, "press_wolf")
    blocks.append(Heading(3, "Learning curves"))
    figs = _section_figures(ctx, "press_wolf")
    blocks += figs or [_missing("Learning curves")]
    return blocks


def section_initial_loss(ctx: Context) -> list:
    res = ctx.results
    blocks: list = [Heading(3, "Measured initial loss against the theory")]
    s = res.raw.get("initial_loss_summary")
    if s is None:
        blocks.append(_missing("Initial-loss sweep"))
    else:
        blocks.append(Para(f"Protocol: **{_protocols(s)}**; widths {', '.join(str(d) for d in sorted(s['d'].unique()))}"
                           f"; {int(s['n_layers'].iloc[0]) if 'n_layers' in s.columns else '?'} layers; n = "
                           f"{int(s['n'].iloc[0]):,}; seeds per point: "
                           f"{', '.join(str(int(x)) for x in sorted(s['n_seeds'].unique())) if 'n_seeds' in s.columns else '?'}"
                           " (the article: 12 layers, n = 32k, widths up to 4096)."))
        labels = {"loss_mean": "loss (ours, mean)", "loss_sd": "sd", "reference_kind": "reference",
                  "reference_loss": "reference loss", "diff": "diff (nats)", "rel_diff": "rel. diff"}
        cols = _present(s, {c: labels.get(c, c) for c in ["token_dist", "branches", "init", "std", "head", "d",
                                                          "loss_mean", "loss_sd", "n_seeds", "reference_kind",
                                                          "reference_loss", "diff", "rel_diff", "protocol"]})
        blocks.append(frame_table(s, caption="One row per configuration (mean over seeds). Reference: theory = "
                                             "log(exp(dσ)+n−1), theory_rescaled = log(exp(σ√d)+n−1), log_n = log n.",
                                  source=res.paths["initial_loss_summary"], columns=cols,
                                  digits={"loss_mean": 3, "loss_sd": 3, "reference_loss": 3, "diff": 3},
                                  percent=["rel_diff"]))
    t = res.raw.get("initial_loss_theory")
    blocks.append(Heading(3, "The essay's table: exp(dσ) against n"))
    if t is None:
        blocks.append(_missing("Theory table"))
    else:
        blocks.append(frame_table(t, caption="Closed-form values (no training).", source=res.paths["initial_loss_theory"]))
    f = res.raw.get("model_families")
    blocks.append(Heading(3, "Embedding share of parameters in public model families"))
    if f is None:
        blocks.append(_missing("Model-family table"))
    else:
        labels = {"embedding_share": "embedding share",
                  "pp_tied_grad_mib_bf16": "tied-gradient exchange per step, pipeline parallel (MiB, bf16)"}
        cols = _present(f, {c: labels.get(c, c) for c in ["family", "model", "vocab_size", "d_model", "n_layers",
                                                          "tied", "total_params", "embedding_params",
                                                          "embedding_share", "pp_tied_grad_mib_bf16", "source"]})
        blocks.append(frame_table(f, caption="Parameters from the public configs (source per row); "
                                             "embedding parameters n·d tied, 2·n·d untied.",
                                  source=res.paths["model_families"], columns=cols, percent=()))
    blocks += _config_diff(ctx, "initial_loss")
    blocks.append(Heading(3, "Figures"))
    blocks += _section_figures(ctx, "initial_loss") or [_missing("Initial-loss figures")]
    return blocks


def section_inan(ctx: Context) -> list:
    res = ctx.results
    blocks: list = [Heading(3, "Table 1: AL, RE and REAL")]
    t = res.raw.get("inan_table1")
    if t is None:
        blocks.append(_missing("Inan et al. Table 1"))
    else:
        blocks.append(Para(f"Protocol: **{_protocols(t)}**."))
        cols = _side_by_side(t, {"dataset": "data set", "size": "size", "model": "model"},
                             [("valid", "valid ppl"), ("test", "test ppl")],
                             {"n_seeds": "seeds", "epochs": "epochs", "protocol": "protocol"})
        blocks.append(frame_table(t, caption="Our perplexities beside Inan et al.'s; diff = ours − paper.",
                                  source=res.paths["inan_table1"], columns=cols, percent=_rel_cols(t)))
    blocks.append(Heading(3, "Choosing tau and alpha: validation perplexity of the ablation"))
    ab = res.raw.get("inan_ablation")
    if ab is None:
        blocks.append(_missing("the tau x alpha ablation"))
    else:
        blocks.append(Para(f"Protocol: **{_protocols(ab)}**. The paper does not give tau and alpha; this "
                           "sweep is how the pipeline's choice is checked against data."))
        blocks.append(frame_table(ab, caption="Validation perplexity over the tau x alpha grid "
                                              "(best_valid marks the lowest).", source=res.paths["inan_ablation"]))
    blocks.append(Heading(3, "Section 6.2: subspace distance between input and output embeddings"))
    fig1 = [k for k in res.raw if k.startswith("inan_figure1")]
    if not fig1:
        blocks.append(_missing("Inan et al. Figure 1 data"))
    for key in sorted(fig1):
        f = res.raw[key]
        blocks.append(Para(f"Protocol: **{_protocols(f)}**."))
        blocks.append(frame_table(f, caption="Figure 1 data (normalised subspace distance; 1 = orthogonal, "
                                             "0 = same space).", source=res.paths[key],
                                  digits={c: 3 for c in f.columns if "distance" in c}))
    blocks += _config_diff(ctx, "inan")
    blocks.append(Heading(3, "Figures"))
    blocks += _section_figures(ctx, "inan") or [_missing("Inan et al. figures")]
    return blocks


SCALE_TABLES = (
    ("scale_claims", "The study's own trend tests", "Verdicts the scale study computes itself (slope beyond 2 "
     "standard errors; 'inconclusive' otherwise). The summary's scale claims apply the same rule."),
    ("scale_gain", "Tying gain at every point of the study", "Mean over seeds; gain = valid ppl untied − tied."),
    ("scale_data", "Tying gain against training data (per seed)", "Nested fractions of the PTB training split."),
    ("embedding_similarity", "How alike the tied, input and output embeddings are",
     "Spearman correlation of the pairwise cosine similarities over the most frequent words, and the "
     "10-nearest-neighbour overlap (final epoch)."),
    ("word_similarity", "Word-similarity benchmarks", "Human-judgement benchmarks (only when configured)."),
    ("scale_transformer", "Small transformer on WikiText-2: untied vs tied vs tied + rescale",
     "Initial loss at step 0 against the sweep's theory, final losses, gradient-norm statistics, spike counts."),
)


def section_scale(ctx: Context) -> list:
    res = ctx.results
    blocks: list = []
    for key, title, caption in SCALE_TABLES:
        blocks.append(Heading(3, title))
        frame = res.raw.get(key)
        if frame is None:
            blocks.append(_missing(title))
            continue
        blocks.append(Para(f"Protocol: **{_protocols(frame)}**."))
        blocks.append(frame_table(frame, caption=caption, source=res.paths[key],
                                  digits={c: 3 for c in frame.columns
                                          if any(w in c for w in ("spearman", "overlap", "share", "rel_", "loss"))}))
    blocks += _config_diff(ctx, "scale")
    blocks.append(Heading(3, "Figures"))
    blocks += _section_figures(ctx, "scale") or [_missing("Scale-study figures")]
    return blocks


def section_other_figures(ctx: Context) -> list:
    rest = [s for s in _figure_stems(ctx.figures_dir) if s not in ctx.used_figures]
    out = []
    for stem in rest:
        ctx.used_figures.add(stem)
        svg = ctx.figures_dir / f"{stem}.svg"
        out.append(Figure(ctx.figures_dir / f"{stem}.png", _caption(ctx, stem), svg if svg.is_file() else None))
    return out or [Para("None: every figure appears in its experiment's section.")]


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


def section_compute(ctx: Context) -> list:
    res = ctx.results
    blocks: list = [Heading(3, "Per job (Snakemake benchmark files)")]
    b = res.benchmarks
    if b is None:
        blocks.append(_missing("Benchmark files (results/benchmarks/)"))
    else:
        b = b.copy()
        b["device"] = [_job_device(job, res.provenance) for job in b["job"]]
        total = pd.DataFrame([{"experiment": "all", "job": f"total ({len(b)} jobs)", "wall_s": b["wall_s"].sum(),
                               "cpu_s": b["cpu_s"].sum(), "mean_load": None, "max_rss_mib": b["max_rss_mib"].max(),
                               "device": ""}])
        b = pd.concat([b, total], ignore_index=True)
        blocks.append(frame_table(b, caption="Wall time, CPU time, mean CPU load (%) and peak resident memory per "
                                             "job; device from the job's provenance where the job wrote one.",
                                  source="results/benchmarks/",
                                  columns={"experiment": "experiment", "job": "job", "wall_s": "wall (s)",
                                           "cpu_s": "CPU (s)", "mean_load": "mean load (%)",
                                           "max_rss_mib": "peak RSS (MiB)", "device": "device"}))
    blocks.append(Heading(3, "Throughput and memory benchmarks"))
    if not res.throughput:
        blocks.append(_missing("Training-throughput benchmark"))
    for item in res.throughput:
        rows = [{"key": k, "value": v} for k, v in _flatten(item["data"]).items() if not k.startswith("provenance")]
        blocks.append(frame_table(pd.DataFrame(rows), caption="Benchmark record", source=item["path"],
                                  digits={"value": 3}))
    return blocks


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


def section_provenance(ctx: Context) -> list:
    res = ctx.results
    if not res.provenance:
        return [_missing("Provenance records")]
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
                     "device": _device_of(p), "torch": pk.get("torch") or "—", "python": pk.get("python") or "—",
                     "started": p.get("started", "—"), "finished": p.get("finished", "—")})
    blocks: list = [frame_table(pd.DataFrame(rows), caption="Every run whose result is shown: commit, device, "
                                                           "package versions and time, from its provenance block.")]
    versions: dict[str, set] = {}
    for item in res.provenance:
        for name, v in (item["provenance"].get("packages") or {}).items():
            versions.setdefault(name, set()).add(str(v))
    blocks.append(Heading(3, "Package versions"))
    blocks.append(frame_table(pd.DataFrame([{"package": k, "versions": ", ".join(sorted(v))}
                                            for k, v in sorted(versions.items())])))
    blocks.append(Heading(3, "Configuration of every run"))
    for item in res.provenance:
        blocks.append(Details(f"{run_label(item['path'])} ({item['path']})",
                              json.dumps(item["provenance"].get("config"), indent=1, sort_keys=True, default=str)))
    return blocks


BUILDERS: dict[str, Callable[[Context], list]] = {
    "summary": section_summary, "press_wolf": section_press_wolf, "inan": section_inan,
    "initial_loss": section_initial_loss, "scale": section_scale, "other_figures": section_other_figures,
    "compute": section_compute, "provenance": section_provenance,
}


# ------------------------------------------------------------------------------------ template
_BLOCK = re.compile(r"^\{\{\s*([a-z_]+)\s*\}\}$")
_INLINE = re.compile(r"\{\{\s*([a-z_]+)(?::([a-z0-9_]+))?\s*\}\}")


def parse_template(text: str, ctx: Context) -> list:
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    verdicts = {c.id: v for c, v in ctx.verdicts}
    protocol = ", ".join(dict.fromkeys(v.protocol for _, v in ctx.verdicts if v.protocol)) or \
        "none (no experiment results in this folder)"

    def inline(s: str) -> str:
        def sub(m):
            name, arg = m.group(1), m.group(2)
            if name == "verdict":
                if arg not in verdicts:
                    raise ReplicateError(f"report template names an unknown claim {arg!r}",
                                         f"use one of {sorted(verdicts)}")
                return f"**{verdicts[arg].status}**"
            if name == "protocol":
                return protocol
            raise ReplicateError(f"unknown inline directive {{{{{name}}}}} in the report template",
                                 "use {{verdict:<claim id>}} or {{protocol}}")
        return _INLINE.sub(sub, s)

    blocks: list = []
    para: list[str] = []

    def flush():
        if para:
            blocks.append(Para(inline(" ".join(para))))
            para.clear()

    for line in text.splitlines():
        stripped = line.strip()
        m = _BLOCK.match(stripped)
        if not stripped:
            flush()
        elif m and m.group(1) in BUILDERS:
            flush()
            blocks += BUILDERS[m.group(1)](ctx)
        elif m:
            raise ReplicateError(f"unknown block directive {stripped} in the report template",
                                 f"use one of {sorted(BUILDERS)}")
        elif stripped.startswith("#"):
            flush()
            level = len(stripped) - len(stripped.lstrip("#"))
            blocks.append(Heading(level, inline(stripped[level:].strip())))
        elif stripped.startswith("- "):
            flush()
            if blocks and isinstance(blocks[-1], Bullets):
                blocks[-1].items.append(inline(stripped[2:]))
            else:
                blocks.append(Bullets([inline(stripped[2:])]))
        else:
            para.append(stripped)
    flush()
    return blocks


# -------------------------------------------------------------------------------------- build
def build(results_dir: str | Path, template: str | Path, out_md: str | Path, out_html: str | Path,
          figures_dir: str | Path | None = None, captions_dir: str | Path | None = None,
          tolerances: dict | None = None, title: str | None = None, sections: dict | None = None,
          full_protocol: dict | None = None) -> dict:
    """Build both reports; returns {"verdicts": {...}, "figures": [...]} for the CLI/metrics."""
    from replicate import io as rio

    results_dir = Path(results_dir)
    figures_dir = Path(figures_dir) if figures_dir else results_dir / "figures"
    template = Path(template)
    if not template.is_file():
        raise ReplicateError(f"report template {template} not found", "restore paper/report_template.md from git")
    res = load(results_dir)
    verdicts = claims_mod.evaluate_all(res, tolerances)
    ctx = Context(res, verdicts, figures_dir, Path(captions_dir) if captions_dir else None, Path(out_md), set(),
                  sections, full_protocol)
    blocks = parse_template(template.read_text(encoding="utf-8"), ctx)
    git = prov.git_state()
    stamp = (f"Built {prov.now()} from commit {(git.get('commit') or 'unknown')[:10]}"
             f"{' (with uncommitted changes)' if git.get('dirty') else ''}; results folder `{results_dir}`.")
    blocks.insert(1, Para(stamp))
    doc_title = title or next((b.text for b in blocks if isinstance(b, Heading) and b.level == 1), "Report")
    rio.write_text(out_md, to_markdown(blocks, Path(out_md)))
    rio.write_text(out_html, to_html(blocks, doc_title))
    return {"verdicts": {c.id: v.status for c, v in verdicts}, "shown_figures": sorted(ctx.used_figures)}
