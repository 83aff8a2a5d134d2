"""``python -m replicate initial-loss <tables|figures|memory>``: the rules' commands (one width of the sweep:
``python -m replicate train initial_loss runs/d<width>``).

- tables:  tidy CSV of all widths, summary vs theory, the essay's exp(d*sigma) table, model families, metrics.json
- figures: PNG + SVG figures
- memory:  peak RSS of one streamed sweep point (the 12-layer d = 4096 benchmark); fails above the limit
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import pandas as pd

from replicate import devices, paths, provenance
from replicate import io as rio
from replicate.cli import add_config_args, log, load_section, load_view
from replicate.errors import ReplicateError


def cmd_tables(args) -> int:
    from replicate.initial_loss import tables, theory

    config, started = load_section(args, "initial_loss"), provenance.now()
    section = config["initial_loss"]
    tidy = pd.concat([pd.read_csv(p, dtype={"std": str}) for p in args.runs], ignore_index=True).sort_values(
        ["token_dist", "branches", "init", "std", "head", "d", "seed"])
    summary = tables.summarise(tidy, config["protocol"])
    essay = theory.essay_table(section["theory_widths"], section["theory_stds"], section["vocab_size"])
    fam = tables.embedding_table(tables.load_families(args.families))
    for path, frame in ((args.tidy, tidy), (args.summary, summary), (args.theory, essay), (args.families_out, fam)):
        rio.write_csv(path, frame)
    metrics = {"findings": tables.findings(summary),
               "sweep_seconds": float(tidy.groupby(["d", "seed", "token_dist", "std", "init", "branches"])
                                      ["trunk_seconds"].first().sum()),
               "rows": len(tidy), "widths": sorted(int(d) for d in tidy["d"].unique()),
               "seeds": sorted(int(s) for s in tidy["seed"].unique()),
               "outputs": [args.tidy, args.summary, args.theory, args.families_out],
               "provenance": provenance.collect(config, started)}
    rio.write_json(args.metrics, metrics)
    log(json.dumps(metrics["findings"], indent=1))
    return 0


def cmd_figures(args) -> int:
    from replicate.plotting import save_figure, use_style
    from replicate.initial_loss import figures

    use_style()
    summary, fam = pd.read_csv(args.summary, dtype={"std": str}), pd.read_csv(args.families)
    out = Path(args.out_dir)
    draw = ((figures.loss_vs_width, summary), (figures.standard_init, summary), (figures.embedding_share, fam))
    for stem, (figure, data) in zip(paths.IL_FIGURES, draw):
        save_figure(figure(data), out / Path(stem).name)
    log(f"figures written to {out}")
    return 0


def cmd_memory(args) -> int:
    from replicate.llama import ModelConfig
    from replicate.initial_loss.runs import memory_benchmark_config
    from replicate.initial_loss.sweep import BRANCHES, sample_tokens, streamed_losses

    started, config = provenance.now(), load_view(args, memory_benchmark_config)
    section, bench = config["initial_loss"], config["initial_loss"]["memory_benchmark"]
    devices.setup(args.threads, False)
    trunk = ModelConfig(vocab_size=section["vocab_size"], d_model=bench["width"], n_layers=section["n_layers"],
                        head_dim=section["head_dim"], std=bench["std"], init="normal",
                        zero_branches=BRANCHES[bench["branches"]])
    tokens = sample_tokens(section["vocab_size"], section["batch_size"], section["seq_len"] + 1, seed=0)
    rss_before = _peak_rss_bytes()
    t0 = time.perf_counter()
    results = streamed_losses(trunk, section["heads"], tokens, seed=0, device="cpu",
                              chunk=section["chunk_tokens"])
    seconds = time.perf_counter() - t0
    peak = _peak_rss_bytes()
    limit = bench["limit_gib"] * 2**30
    whole_fp32 = _whole_model_bytes(trunk, any(not h["tied"] for h in section["heads"]))
    record = {"width": bench["width"], "n_layers": section["n_layers"], "vocab_size": section["vocab_size"],
              "device": "cpu", "peak_rss_bytes": peak, "peak_rss_gib": peak / 2**30,
              "rss_before_gib": rss_before / 2**30, "limit_gib": bench["limit_gib"],
              "within_limit": peak < limit, "seconds": seconds,
              "whole_model_fp32_gib": whole_fp32 / 2**30, "losses": results,
              "code_version": provenance.code_version(streamed_losses),
              "provenance": provenance.collect(config, started, "cpu")}
    rio.write_json(args.out, record)
    log(f"streamed d={bench['width']} x {section['n_layers']} layers: peak RSS {peak / 2**30:.2f} GiB "
         f"(whole model would hold {whole_fp32 / 2**30:.2f} GiB of fp32 weights), {seconds:.1f}s")
    if peak >= limit:
        raise ReplicateError(f"peak RSS {peak / 2**30:.2f} GiB is over the {bench['limit_gib']} GiB limit",
                             "lower initial_loss.chunk_tokens / batch_size, or raise memory_benchmark.limit_gib")
    return 0


def _peak_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


def _whole_model_bytes(cfg, untied: bool) -> int:
    from replicate.llama import mlp_hidden

    d = cfg.d_model
    per_block = 4 * d * d + 3 * d * mlp_hidden(d) + 2 * d
    return 4 * (cfg.vocab_size * d * (2 if untied else 1) + cfg.n_layers * per_block + d)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate initial-loss", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("tables", help="tidy CSV, summary vs theory, theory table, model families, metrics")
    add_config_args(p)
    p.add_argument("--families", required=True, help="paper/reference/model_families.csv")
    p.add_argument("--tidy", required=True)
    p.add_argument("--summary", required=True)
    p.add_argument("--theory", required=True)
    p.add_argument("--families-out", required=True)
    p.add_argument("--metrics", required=True)
    p.add_argument("runs", nargs="+", help="per-width CSVs from `sweep`")
    p = sub.add_parser("figures", help="PNG + SVG figures")
    p.add_argument("--summary", required=True)
    p.add_argument("--families", required=True)
    p.add_argument("--out-dir", required=True)
    p = sub.add_parser("memory", help="peak RSS of one streamed sweep point")
    add_config_args(p)
    p.add_argument("--threads", type=int, default=None, help="torch threads")
    p.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    return {"tables": cmd_tables, "figures": cmd_figures, "memory": cmd_memory}[args.action](args)
