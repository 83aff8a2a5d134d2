"""``python -m replicate scale <command>``: the scale study and the embedding analysis.

Commands (one per rule):
  train                one LSTM run of the grid, with the update-tracking and snapshot hooks
  transformer          one small Llama-style run on WikiText-2 (untied | tied | tied_rescale)
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
from replicate.cli_common import add_job_args, load_spec, training_attempt, write_csv_with_provenance
from replicate.errors import ReplicateError


# ----------------------------------------------------------------------------- train
def cmd_train(args) -> int:
    with training_attempt(args.out_dir, args.drop_checkpoint) as log:
        _train(args, log)
    return 0


def _train(args, log) -> None:
    """One grid run: train_run (with the analysis hooks when the spec says ``record``: then updates.csv
    and embeddings.pt too), then summary.json."""
    import torch

    from replicate.scale import embeddings as emb
    from replicate.scale import stopping, study
    from replicate.data import load_corpus
    from replicate.lstm.runner import train_run
    from replicate.lstm.config import resolve
    from replicate.lstm.model import LSTMLM

    spec = load_spec(args.spec)
    corpus = load_corpus(args.corpus)
    n_train = len(corpus.train)
    tokens = study.train_tokens_for(n_train, int(spec["pct"]))
    settings = study.run_settings(spec["lstm"], spec["hidden"], spec["variant"], spec["seed"],
                                  None if tokens == n_train else tokens)
    record = bool(spec["record"])
    tracker = emb.UpdateTracker(len(corpus.vocab), every=spec["track_every"]) if record else None
    # the same word set for every run of a data set: top-K of the FULL training split
    recorder = emb.SnapshotRecorder(emb.top_ids(corpus.train_counts(), spec["top_k"])) if record else None
    out = Path(args.out_dir)
    run_spec = {"name": spec["name"], "settings": settings, "config": spec.get("config", spec)}
    started = provenance.now()
    patience = spec.get("patience")  # None: the previous design, a fixed number of epochs (the engine's own loop)
    early = {} if patience is None else {"trainer_cls": stopping.StoppingTrainer, "patience": int(patience),
                                         "anneal": spec.get("anneal")}
    metrics = train_run(run_spec, corpus, out, threads=args.threads, device=args.device, allow_tf32=args.allow_tf32,
                        log=log, on_step=tracker, on_epoch=recorder, **early)
    # parameter split from a model of the same architecture (cheap: no training)
    model_cfg, _ = resolve(settings, len(corpus.vocab))
    model = LSTMLM(model_cfg)
    total = model.num_parameters()
    emb_params = emb.embedding_param_count(model)
    history = metrics.get("history") or []
    best_epoch, best = stopping.best_epoch(history)
    if best_epoch is None:
        best = metrics["valid_ppl"]
    stop = metrics.get("stopping") or {"stop_reason": None, "patience": None, "max_epochs": metrics["epochs_completed"]}
    summary = {
        "run": spec["name"], "dataset": spec["dataset"], "pct": int(spec["pct"]), "train_tokens": tokens,
        "hidden": int(spec["hidden"]), "variant": spec["variant"], "tying": model_cfg.tying,
        "projection": model_cfg.projection, "dropout": study.dropout_name(spec.get("dropout", 0)),
        "seed": int(spec["seed"]), "epochs": metrics["epochs_completed"], "stop_reason": stop["stop_reason"],
        "patience": stop["patience"], "anneal": spec.get("anneal"), "max_epochs": stop["max_epochs"],
        "vocab_size": len(corpus.vocab), "total_params": total, "embedding_params": emb_params,
        "non_embedding_params": total - emb_params, "embedding_share": emb_params / total,
        "train_ppl": metrics["train_ppl"], "train_clean_ppl": metrics["train_clean_ppl"],
        "final_valid_ppl": metrics["valid_ppl"], "best_valid_ppl": best, "best_epoch": best_epoch,
        "test_ppl": metrics["test_ppl"], "tokens_per_s": metrics["train_tokens_per_s"],
        "embedding_record": record, "update_steps_tracked": tracker.steps if record else None, "settings": settings,
        "code_version": provenance.code_version(emb, stopping),  # the engine's math and these hooks
        "provenance": provenance.collect(spec.get("config", spec), started, args.device),
    }
    if record:
        counts_used = torch.bincount(corpus.train[:tokens], minlength=len(corpus.vocab))
        rio.write_csv(out / "updates.csv", tracker.per_word(counts_used, corpus.vocab))
        rio.torch_save(out / "embeddings.pt", {**recorder.state_dict(), "variant": spec["variant"],
                                               "seed": int(spec["seed"])})
    rio.write_json(out / "summary.json", summary)


# ----------------------------------------------------------------------------- transformer
def cmd_transformer(args) -> int:
    from replicate.scale.transformer import train
    from replicate.data import load_corpus

    spec = load_spec(args.spec)
    train(spec, load_corpus(args.corpus), args.out_dir, threads=args.threads, device=args.device)
    return 0


# ----------------------------------------------------------------------------- table
def cmd_table(args) -> int:
    from replicate.scale import figures, study

    started = provenance.now()
    spec = load_spec(args.spec)
    cfg, protocol, metric = spec["scale"], spec["protocol"], spec["scale"]["metric"]
    summaries = [rio.read_json(p) for p in args.summaries]
    runs = study.runs_frame(summaries, protocol)
    by_seed = study.gain_by_seed(runs, cfg, metric, protocol)
    gain = study.gain_table(by_seed)
    data = study.data_table(by_seed)
    claims = study.claims_table(by_seed, protocol)
    for path, frame in ((args.out_runs, runs), (args.out_by_seed, by_seed), (args.out_gain, gain),
                        (args.out_data, data), (args.out_claims, claims)):
        write_csv_with_provenance(path, frame, spec, started)
    figures.gain_figures(by_seed, gain, args.figures_dir, protocol)
    figures.answer_figure(by_seed, args.figures_dir, protocol)
    for _, row in claims.iterrows():
        print(f"{row['claim_id']}: {row['verdict']} -- {row['evidence']}")
    return 0


# ----------------------------------------------------------------------------- embeddings
def cmd_embeddings(args) -> int:
    import pandas as pd
    import torch

    from replicate.scale import embeddings as emb
    from replicate.scale import figures
    from replicate.data import load_corpus

    started = provenance.now()
    spec = load_spec(args.spec)
    ana, protocol = spec["scale"]["analysis"], spec["protocol"]
    vocab = load_corpus(args.corpus).vocab
    buckets, recorders, finals = [], {}, {}
    for run in args.runs:
        run = Path(run)
        s = rio.read_json(run / "summary.json")
        variant, seed = s["variant"], int(s["seed"])
        per_word = pd.read_csv(run / "updates.csv", keep_default_na=False, na_values=[""])
        b = emb.bucket_table(per_word, ana["buckets_per_decade"])
        b.insert(0, "seed", seed)
        b.insert(0, "variant", variant)
        buckets.append(b)
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
    wordsim = word_similarity(ana.get("benchmarks") or [], finals, vocab, Path(args.benchmark_dir))
    wordsim["protocol"] = protocol
    for path, frame in ((args.out_updates, upd), (args.out_similarity_epochs, sim), (args.out_similarity, final),
                        (args.out_wordsim, wordsim)):
        write_csv_with_provenance(path, frame, spec, started)
    figures.update_figure(upd, args.figures_dir, protocol)
    figures.similarity_figure(sim, args.figures_dir, protocol)
    print(final.groupby("comparison")[["spearman", "knn_overlap"]].mean().to_string())
    return 0


def final_similarity(sim, epoch: int):
    """The rows of ``epoch``, the last epoch every analysed run reached (early-stopped runs end at different
    epochs, and a later epoch holds only the runs that trained longer); per comparison the pairs whose
    matrices started from different values (when a comparison only has pairs with a shared initial draw,
    those, flagged by ``shared_init``)."""
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


# ----------------------------------------------------------------------------- transformer summary
def cmd_transformer_summary(args) -> int:
    import pandas as pd

    from replicate.scale import figures, study
    from replicate.scale.transformer import VARIANTS

    started = provenance.now()
    spec = load_spec(args.spec)
    protocol = spec["protocol"]
    rows, curves = [], []
    keep = ["variant", "std", "lr", "embed_std", "seed", "d_model", "n_layers", "vocab_size", "steps", "total_params", "embedding_share",
            "step0_loss", "theory_step0_loss", "log_n", "final_train_loss", "final_valid_loss", "final_valid_ppl",
            "final_test_loss", "final_test_ppl",
            "grad_norm_median", "grad_norm_p99", "grad_norm_max", "clip_fraction", "loss_spikes", "grad_spikes"]
    for run in args.runs:
        run = Path(run)
        s = rio.read_json(run / "summary.json")
        rows.append({k: s[k] for k in keep})
        c = pd.read_csv(run / "curve.csv")
        c.insert(0, "seed", s["seed"])
        c.insert(0, "peak_lr", s["lr"])
        c.insert(0, "std", s["std"])
        c.insert(0, "variant", s["variant"])
        curves.append(c)
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
        write_csv_with_provenance(path, frame, spec, started)
    figures.transformer_figures(curve, table, args.figures_dir, protocol)
    print(comparison.to_string())
    return 0


# ----------------------------------------------------------------------------- argparse
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m replicate scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    add_job_args(sub.add_parser("train", help="one LSTM run of the grid (with analysis hooks)"), run=True,
                 checkpoint=True)
    add_job_args(sub.add_parser("transformer", help="one small Llama-style run on WikiText-2"), run=True)

    q = sub.add_parser("table", help="tying-gain tables, claims and figures")
    add_job_args(q, threads=False, device=False)
    for name in ("runs", "by-seed", "gain", "data", "claims"):
        q.add_argument(f"--out-{name}", required=True)
    q.add_argument("--figures-dir", required=True)
    q.add_argument("summaries", nargs="+", help="summary.json of every run")

    q = sub.add_parser("embeddings", help="embedding analysis over the analysis runs")
    add_job_args(q, threads=False, device=False)
    q.add_argument("--corpus", required=True, help="the corpus the runs used (vocabulary)")
    for name in ("updates", "similarity", "similarity-epochs", "wordsim"):
        q.add_argument(f"--out-{name}", required=True)
    q.add_argument("--figures-dir", required=True)
    q.add_argument("--benchmark-dir", default=paths.under_results(paths.SCALE_WORDSIM_DOWNLOADS),
                   help="where benchmarks given by url are downloaded")
    q.add_argument("runs", nargs="+", help="run folders (summary.json, updates.csv, embeddings.pt)")

    q = sub.add_parser("transformer-summary", help="table, curves and figures of the transformer runs")
    add_job_args(q, threads=False, device=False)
    q.add_argument("--out-table", required=True)
    q.add_argument("--out-curves", required=True)
    q.add_argument("--out-comparison", required=True)
    q.add_argument("--figures-dir", required=True)
    q.add_argument("runs", nargs="+", help="run folders (summary.json, curve.csv)")
    return p


COMMANDS = {"train": cmd_train, "transformer": cmd_transformer, "table": cmd_table, "embeddings": cmd_embeddings,
            "transformer-summary": cmd_transformer_summary}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command](args)
