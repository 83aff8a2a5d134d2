"""``python -m replicate scale <command>``: the scale study and the embedding analysis.

Commands (one per rule; the runs themselves: ``python -m replicate train scale <run_id>``, replicate/scale/runs.py):
  table                runs.csv, tying-gain tables, claims, figures from the runs' summary.json
  embeddings           update-frequency buckets, matrix similarity per epoch, word-similarity benchmarks
  transformer-summary  the transformer runs' table, curves and figures
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from replicate import io as rio
from replicate import paths, provenance
from replicate.cli import add_config_args, load_section, write_csv_with_provenance
from replicate.errors import ReplicateError


def cmd_table(args, config, write) -> int:
    from replicate.scale import figures, study

    cfg, protocol = config["scale"], config["protocol"]
    runs = study.runs_frame([rio.read_json(p) for p in args.summaries], protocol)
    by_seed = study.gain_by_seed(runs, cfg, cfg["metric"], protocol)
    gain, claims = study.gain_table(by_seed), study.claims_table(by_seed, protocol)
    write(runs=runs, by_seed=by_seed, gain=gain, data=study.data_table(by_seed), claims=claims)
    figures.gain_figures(by_seed, gain, args.figures_dir, protocol)
    figures.answer_figure(by_seed, args.figures_dir, protocol)
    for _, row in claims.iterrows():
        print(f"{row['claim_id']}: {row['verdict']} -- {row['evidence']}")
    return 0


def cmd_embeddings(args, config, write) -> int:
    import torch

    from replicate.data import load_corpus
    from replicate.scale import embeddings as emb
    from replicate.scale import figures

    ana, protocol = config["scale"]["analysis"], config["protocol"]
    buckets, recorders = [], {}
    for run in map(Path, args.runs):
        s = rio.read_json(run / "summary.json")
        variant, seed = s["variant"], int(s["seed"])
        per_word = pd.read_csv(run / "updates.csv", keep_default_na=False, na_values=[""])
        buckets.append(leading(emb.bucket_table(per_word, ana["buckets_per_decade"]), variant=variant, seed=seed))
        state = torch.load(run / "embeddings.pt", weights_only=True)
        recorders[(variant, seed)] = rec = emb.SnapshotRecorder(state["top_ids"])
        rec.load_state_dict(state)
    upd = pd.concat(buckets, ignore_index=True).assign(protocol=protocol)
    sim = emb.canonical_order(emb.similarity_rows(recorders, knn_k=ana["knn_k"])).assign(protocol=protocol)
    final = final_similarity(sim, min(rec.final_epoch for rec in recorders.values()))
    finals = {key: rec.final for key, rec in recorders.items()}
    wordsim = word_similarity(ana["benchmarks"], finals, load_corpus(args.corpus).vocab, Path(args.benchmark_dir))
    write(updates=upd, similarity_epochs=sim, similarity=final, wordsim=wordsim.assign(protocol=protocol))
    figures.update_figure(upd, args.figures_dir, protocol)
    figures.similarity_figure(sim, args.figures_dir, protocol)
    print(final.groupby("comparison")[["spearman", "knn_overlap"]].mean().to_string())
    return 0


def leading(frame, **columns):
    """``frame`` with constant ``columns`` put first."""
    return frame.assign(**columns)[[*columns, *frame.columns]]


def final_similarity(sim, epoch: int):
    """The rows of ``epoch`` (the last one every run reached), per comparison its pairs of independent initial
    draws (those with a shared one where it has no other)."""
    last = sim[sim["epoch"] == epoch]
    independent = ~last["shared_init"].astype(bool)
    keep = independent | ~independent.groupby(last["comparison"]).transform("any")
    return last[keep].sort_values("comparison", kind="stable").reset_index(drop=True)


def word_similarity(benchmarks: list[dict], finals: dict, vocab: list[str], download_dir: Path):
    from replicate.scale import embeddings as emb

    cols = ["benchmark", "variant", "seed", "matrix", "n_pairs", "n_covered", "spearman", "status"]
    if not benchmarks:
        return pd.DataFrame([{"benchmark": "none", "variant": "", "seed": None, "matrix": "", "n_pairs": None,
                              "n_covered": None, "spearman": None,
                              "status": "not provided (no files configured under scale.analysis.benchmarks; "
                                        "Simlex-999 / MEN not evaluated)"}], columns=cols)
    rows = []
    for bench in benchmarks:
        path = bench.get("path")
        if not path:
            if not (bench.get("url") and bench.get("sha256")):
                raise ReplicateError(f"benchmark {bench['name']!r} has neither a path nor url + sha256",
                                     "give a local `path`, or a `url` with its `sha256`")
            path = emb.fetch_benchmark(bench["url"], bench["sha256"], download_dir / f"{bench['name']}.txt")
        pairs = emb.load_benchmark(path, bench.get("score_column", 2), bench.get("lowercase", True))
        for (variant, seed), mats in sorted(finals.items()):
            for matrix, w in mats.items():
                r = emb.benchmark_spearman(w.float(), vocab, pairs)
                rows.append({"benchmark": bench["name"], "variant": variant, "seed": seed,
                             "matrix": emb.matrix_label(variant, matrix), **r,
                             "status": "ok" if r["n_covered"] >= 3 else "too few pairs in the vocabulary"})
    return pd.DataFrame(rows, columns=cols)


def cmd_transformer_summary(args, config, write) -> int:
    from replicate.scale import figures, study
    from replicate.scale.transformer import VARIANTS

    protocol = config["protocol"]
    keep = ["variant", "std", "lr", "embed_std", "seed", "d_model", "n_layers", "vocab_size", "steps", "total_params",
            "embedding_share", "step0_loss", "theory_step0_loss", "log_n", "final_train_loss", "final_valid_loss",
            "final_valid_ppl", "final_test_loss", "final_test_ppl", "grad_norm_median", "grad_norm_p99",
            "grad_norm_max", "clip_fraction", "loss_spikes", "grad_spikes"]
    summaries = [(run, rio.read_json(run / "summary.json")) for run in map(Path, args.runs)]
    table = pd.DataFrame([{k: s[k] for k in keep} for _, s in summaries])
    table.insert(table.columns.get_loc("theory_step0_loss") + 1, "spread_step0_loss", [
        study.spread_step0_loss(VARIANTS[r.variant]["tied"], VARIANTS[r.variant]["rescale"], r.d_model, r.embed_std,
                                r.vocab_size) for r in table.itertuples()])
    table = study.select_lr(table).assign(protocol=protocol)
    curve = pd.concat([leading(pd.read_csv(run / "curve.csv"), variant=s["variant"], std=s["std"], peak_lr=s["lr"],
                               seed=s["seed"]) for run, s in summaries], ignore_index=True).assign(protocol=protocol)
    comparison = study.transformer_comparison(table).assign(protocol=protocol)
    write(table=table, curves=curve, comparison=comparison)
    figures.transformer_figures(curve, table, args.figures_dir, protocol)
    print(comparison.to_string())
    return 0


COMMANDS = {  # command: (function, help, its --out-* tables, its positional arguments and their help)
    "table": (cmd_table, "tying-gain tables, claims and figures", ("runs", "by_seed", "gain", "data", "claims"),
              "summaries", "summary.json of every run"),
    "embeddings": (cmd_embeddings, "embedding analysis over the analysis runs",
                   ("updates", "similarity", "similarity_epochs", "wordsim"), "runs",
                   "run folders (summary.json, updates.csv, embeddings.pt)"),
    "transformer-summary": (cmd_transformer_summary, "table, curves and figures of the transformer runs",
                            ("table", "curves", "comparison"), "runs", "run folders (summary.json, curve.csv)"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m replicate scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for command, (_, help_, outputs, positional, positional_help) in COMMANDS.items():
        q = sub.add_parser(command, help=help_)
        add_config_args(q)
        if command == "embeddings":
            q.add_argument("--corpus", required=True, help="the corpus the runs used (vocabulary)")
        for name in outputs:
            q.add_argument(f"--out-{name.replace('_', '-')}", required=True)
        q.add_argument("--figures-dir", required=True)
        if command == "embeddings":
            q.add_argument("--benchmark-dir", default=paths.under_results(paths.SCALE_WORDSIM_DOWNLOADS),
                           help="where benchmarks given by url are downloaded")
        q.add_argument(positional, nargs="+", help=positional_help)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started, config = provenance.now(), load_section(args, "scale")

    def write(**frames) -> None:  # the command's tables, each with its provenance
        for name, frame in frames.items():
            write_csv_with_provenance(getattr(args, f"out_{name}"), frame, config, started)

    return COMMANDS[args.command][0](args, config, write)
