"""``python -m replicate scale <command>``: the scale study and the embedding analysis.

Commands (one per rule; the runs themselves: ``python -m replicate train scale <run_id>``, replicate/scale/runs.py):
  table                runs.csv, tying-gain tables, claims, figures from the runs' summary.json
  embeddings           update-frequency buckets, matrix similarity per epoch, word-similarity benchmarks
  transformer-summary  the transformer runs' table, curves and figures
"""

from __future__ import annotations

import argparse
from pathlib import Path

from replicate import io as rio
from replicate import paths
from replicate import provenance
from replicate.cli import add_config_args, load_section, write_csv_with_provenance
from replicate.errors import ReplicateError


def cmd_table(args) -> int:
    from replicate.scale import figures, study

    started, config = provenance.now(), load_section(args, "scale")
    cfg, protocol, metric = config["scale"], config["protocol"], config["scale"]["metric"]
    summaries = [rio.read_json(p) for p in args.summaries]
    runs = study.runs_frame(summaries, protocol)
    by_seed = study.gain_by_seed(runs, cfg, metric, protocol)
    gain = study.gain_table(by_seed)
    data = study.data_table(by_seed)
    claims = study.claims_table(by_seed, protocol)
    for path, frame in ((args.out_runs, runs), (args.out_by_seed, by_seed), (args.out_gain, gain),
                        (args.out_data, data), (args.out_claims, claims)):
        write_csv_with_provenance(path, frame, config, started)
    figures.gain_figures(by_seed, gain, args.figures_dir, protocol)
    figures.answer_figure(by_seed, args.figures_dir, protocol)
    for _, row in claims.iterrows():
        print(f"{row['claim_id']}: {row['verdict']} -- {row['evidence']}")
    return 0


def cmd_embeddings(args) -> int:
    import pandas as pd
    import torch

    from replicate.scale import embeddings as emb
    from replicate.scale import figures
    from replicate.data import load_corpus

    started, config = provenance.now(), load_section(args, "scale")
    ana, protocol = config["scale"]["analysis"], config["protocol"]
    vocab = load_corpus(args.corpus).vocab
    buckets, recorders, finals = [], {}, {}
    for run in args.runs:
        run = Path(run)
        s = rio.read_json(run / "summary.json")
        variant, seed = s["variant"], int(s["seed"])
        per_word = pd.read_csv(run / "updates.csv", keep_default_na=False, na_values=[""])
        buckets.append(leading(emb.bucket_table(per_word, ana["buckets_per_decade"]), variant=variant, seed=seed))
        state = torch.load(run / "embeddings.pt", weights_only=True)
        rec = emb.SnapshotRecorder(state["top_ids"])
        rec.load_state_dict(state)
        recorders[(variant, seed)] = rec
        finals[(variant, seed)] = rec.final
    upd = pd.concat(buckets, ignore_index=True)
    upd["protocol"] = protocol
    sim = emb.canonical_order(emb.similarity_rows(recorders, knn_k=ana["knn_k"]))
    sim["protocol"] = protocol
    final = final_similarity(sim, min(rec.final_epoch for rec in recorders.values()))
    wordsim = word_similarity(ana["benchmarks"], finals, vocab, Path(args.benchmark_dir))
    wordsim["protocol"] = protocol
    for path, frame in ((args.out_updates, upd), (args.out_similarity_epochs, sim), (args.out_similarity, final),
                        (args.out_wordsim, wordsim)):
        write_csv_with_provenance(path, frame, config, started)
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
    import pandas as pd

    last = sim[sim["epoch"] == epoch]
    parts = []
    for _, g in last.groupby("comparison", sort=True):
        independent = g[~g["shared_init"].astype(bool)]
        parts.append(independent if not independent.empty else g)
    return pd.concat(parts, ignore_index=True)


def word_similarity(benchmarks: list[dict], finals: dict, vocab: list[str], download_dir: Path):
    import pandas as pd

    from replicate.scale import embeddings as emb
    from replicate.scale.embeddings import matrix_label

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
                             "matrix": matrix_label(variant, matrix), **r,
                             "status": "ok" if r["n_covered"] >= 3 else "too few pairs in the vocabulary"})
    return pd.DataFrame(rows, columns=cols)


def cmd_transformer_summary(args) -> int:
    import pandas as pd

    from replicate.scale import figures, study
    from replicate.scale.transformer import VARIANTS

    started, config = provenance.now(), load_section(args, "scale")
    protocol = config["protocol"]
    rows, curves = [], []
    keep = ["variant", "std", "lr", "embed_std", "seed", "d_model", "n_layers", "vocab_size", "steps", "total_params", "embedding_share",
            "step0_loss", "theory_step0_loss", "log_n", "final_train_loss", "final_valid_loss", "final_valid_ppl",
            "final_test_loss", "final_test_ppl",
            "grad_norm_median", "grad_norm_p99", "grad_norm_max", "clip_fraction", "loss_spikes", "grad_spikes"]
    for run in args.runs:
        run = Path(run)
        s = rio.read_json(run / "summary.json")
        rows.append({k: s[k] for k in keep})
        curves.append(leading(pd.read_csv(run / "curve.csv"), variant=s["variant"], std=s["std"], peak_lr=s["lr"],
                              seed=s["seed"]))
    table = pd.DataFrame(rows)
    table.insert(table.columns.get_loc("theory_step0_loss") + 1, "spread_step0_loss", [
        study.spread_step0_loss(VARIANTS[r.variant]["tied"], VARIANTS[r.variant]["rescale"], r.d_model, r.embed_std,
                                r.vocab_size) for r in table.itertuples()])
    table = study.select_lr(table)
    table["protocol"] = protocol
    comparison = study.transformer_comparison(table)
    comparison["protocol"] = protocol
    curve = pd.concat(curves, ignore_index=True)
    curve["protocol"] = protocol
    for path, frame in ((args.out_table, table), (args.out_curves, curve), (args.out_comparison, comparison)):
        write_csv_with_provenance(path, frame, config, started)
    figures.transformer_figures(curve, table, args.figures_dir, protocol)
    print(comparison.to_string())
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m replicate scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    q = sub.add_parser("table", help="tying-gain tables, claims and figures")
    add_config_args(q)
    for name in ("runs", "by-seed", "gain", "data", "claims"):
        q.add_argument(f"--out-{name}", required=True)
    q.add_argument("--figures-dir", required=True)
    q.add_argument("summaries", nargs="+", help="summary.json of every run")

    q = sub.add_parser("embeddings", help="embedding analysis over the analysis runs")
    add_config_args(q)
    q.add_argument("--corpus", required=True, help="the corpus the runs used (vocabulary)")
    for name in ("updates", "similarity", "similarity-epochs", "wordsim"):
        q.add_argument(f"--out-{name}", required=True)
    q.add_argument("--figures-dir", required=True)
    q.add_argument("--benchmark-dir", default=paths.under_results(paths.SCALE_WORDSIM_DOWNLOADS),
                   help="where benchmarks given by url are downloaded")
    q.add_argument("runs", nargs="+", help="run folders (summary.json, updates.csv, embeddings.pt)")

    q = sub.add_parser("transformer-summary", help="table, curves and figures of the transformer runs")
    add_config_args(q)
    q.add_argument("--out-table", required=True)
    q.add_argument("--out-curves", required=True)
    q.add_argument("--out-comparison", required=True)
    q.add_argument("--figures-dir", required=True)
    q.add_argument("runs", nargs="+", help="run folders (summary.json, curve.csv)")
    return p


COMMANDS = {"table": cmd_table, "embeddings": cmd_embeddings,
            "transformer-summary": cmd_transformer_summary}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command](args)
