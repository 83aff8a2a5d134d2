"""The scale study's runs: one LSTM of the grid per ``runs/<dataset>/p<pct>_h<hidden>_<variant>_drop<dropout>/
seed<N>`` (summary.json beside the engine's metrics.json; the embedding analysis' points also record
updates.csv and embeddings.pt) and one transformer per ``transformer/<variant>_std<std>_lr<lr>/seed<N>``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from replicate import io as rio
from replicate import provenance, resources
from replicate.experiments import (SCHEMAS, Kind, Run, canonical, check_engine_settings, memory_limit_gib, run_config,
                                   seed_of)
from replicate.scale.study import (analysis_constraints, analysis_points, dropout_name, lr_name, lstm_grid,
                                   run_settings, train_spec, train_tokens_for, transformer_runs,
                                   transformer_spec)
from replicate.validate import SettingError, parse_text

_SEED = {"seed": r"\d+"}
LSTM = Kind("scale_train", "scale", "runs/{dataset}/p{pct}_h{hidden}_{variant}_drop{dropout}/seed{seed}",
            {"dataset": "ptb|wikitext2", "pct": r"\d+", "hidden": r"\d+", "variant": "untied|tied|untied_pr|tied_pr",
             "dropout": r"\d+(\.\d+)?", **_SEED},
            code=("scale.embeddings", "scale.stopping"),  # the engine and the hooks it trains with
            outputs={"metrics": "/metrics.json", "summary": "/summary.json"}, resources=("runtime", "one_thread_min"))
TRANSFORMER = Kind("scale_transformer", "scale", "transformer/{variant}_std{std}_lr{lr}/seed{seed}",
                   {"variant": "untied|tied|tied_rescale|tied_rescale_unit", "std": r"[A-Za-z0-9_.\-]+",
                    "lr": r"[0-9][0-9.e\-]*", **_SEED},
                   code=("scale.transformer",), outputs={"summary": "/summary.json", "curve": "/curve.csv"},
                   keep_checkpoint=True, attempt_log=False, resources=("runtime", "one_thread_min"),
                   triggers=("device",))
KINDS = [LSTM, TRANSFORMER]
SCHEMA = "scale.schema.yaml#/properties"


def runs(config: dict[str, Any]) -> dict[str, Run]:
    """The configured runs (none unless scale.enabled): the LSTM grid, then the transformer runs."""
    sc = config["scale"]
    if not sc["enabled"]:
        return {}
    ids = [LSTM.pattern.format(**p) for p in lstm_grid(sc)]
    ids += [TRANSFORMER.pattern.format(**w) for w in transformer_runs(sc["transformer"])] \
        if sc["transformer"]["enabled"] else []
    return {run_id: run(config, run_id) for run_id in ids}


def run(config: dict[str, Any], run_id: str) -> Run:
    for kind, resolve in ((LSTM, _lstm), (TRANSFORMER, _transformer)):
        if match := kind.regex().fullmatch(run_id):
            return resolve(config, run_id, match.groupdict())
    raise SettingError(f"scale run {run_id!r} is not runs/<dataset>/p<pct>_h<hidden>_<variant>_drop<dropout>/seed<N> "
                       "or transformer/<variant>_std<std>_lr<lr>/seed<N>",
                       "write e.g. runs/ptb/p25_h400_tied_drop0/seed1 or transformer/tied_std0.02_lr0.003/seed1")


def _check(w: dict[str, str], key: str, node: str, spell, where: str, fix: str, prefix: str | None = None) -> Any:
    """The value of wildcard ``key`` in its one spelling ``spell`` (after ``prefix`` in the folder), in range."""
    value = canonical(w[key], spell, prefix or key, where) if spell else parse_text(w[key])
    return SCHEMAS.check(value, f"{SCHEMA}/{node}", key=key, where=where, fix=fix)


def _lstm(config: dict[str, Any], run_id: str, w: dict[str, str]) -> Run:
    """One LSTM of the grid: its data percentage, hidden size and dropout level in range, its memory."""
    sc = config["scale"]
    where = f"scale run {w['dataset']}/p{w['pct']}_h{w['hidden']}_{w['variant']}_drop{w['dropout']}/seed{w['seed']}"
    fix = "ask for e.g. results/scale/runs/ptb/p25_h400_tied_drop0/seed1/summary.json, or change the scale section"
    pct = _check(w, "pct", "model/properties/pct", str, where, fix, "p")
    hidden = _check(w, "hidden", "model/properties/hiddens/items", str, where, fix, "h")
    _check(w, "dropout", "lstm/properties/dropouts/items", dropout_name, where, fix, "drop")
    seed = seed_of(w["seed"], where)
    # the embedding analysis' points (the wildcard constraints of its rule) record their embeddings
    record = all(re.fullmatch(v, str(w[k])) for k, v in
                 analysis_constraints(analysis_points(sc) if sc["enabled"] else []).items())
    spec = train_spec(sc, w, run_config(config), record)
    tokens = train_tokens_for(resources.corpus_shape(w["dataset"])["train"], pct)
    settings = check_engine_settings(run_settings(spec["lstm"], hidden, w["variant"], seed, tokens), where)
    result = Run(LSTM, run_id, where, name=spec["name"], dataset=w["dataset"], spec=spec, config=spec["config"],
                 threads=sc["threads"], device=config["device"], settings=settings, min_runtime=sc["runtime_minutes"])
    result.check_memory(memory_limit_gib(config), where)
    return result


def _transformer(config: dict[str, Any], run_id: str, w: dict[str, str]) -> Run:
    """One transformer run: its init std and learning rate in range."""
    sc, tf = config["scale"], config["scale"]["transformer"]
    where = f"scale transformer run {w['variant']}_std{w['std']}_lr{w['lr']}/seed{w['seed']}"
    fix = "ask for e.g. results/scale/transformer/tied_std0.02_lr0.003/seed1/summary.json"
    std_spell = str if isinstance(parse_text(w["std"]), (int, float)) else None
    _check(w, "std", "transformer/properties/stds/items", std_spell, where, fix)
    _check(w, "lr", "transformer/properties/lrs/items", lr_name, where, fix)
    seed_of(w["seed"], where)
    spec = transformer_spec(sc, w, run_config(config))
    hours = resources.transformer_one_thread_hours(tf, resources.corpus_shape(tf["dataset"]))
    return Run(TRANSFORMER, run_id, where, name=spec["name"], dataset=tf["dataset"], spec=spec, config=spec["config"],
               threads=sc["threads"], device=config["device"], min_runtime=sc["runtime_minutes"],
               cost=lambda threads: resources.Estimate(0, 0, 0, 0.0, one_thread_hours=hours))


def train(run: Run, corpus, results: Path, log, **job) -> None:
    (_train_lstm if run.kind is LSTM else _train_transformer)(run, corpus, Path(results) / run.folder, log, **job)


def _train_transformer(run: Run, corpus, out: Path, log, threads: int, device: str, allow_tf32: bool) -> None:
    from replicate.scale.transformer import train as train_transformer

    train_transformer(run.spec, corpus, out, threads=threads, device=device)


def _train_lstm(run: Run, corpus, out: Path, log, threads: int, device: str, allow_tf32: bool) -> None:
    """One grid run: train_run (with the analysis hooks when the spec says ``record``: then updates.csv
    and embeddings.pt too), then summary.json."""
    import torch

    from replicate.lstm.config import resolve
    from replicate.lstm.model import LSTMLM
    from replicate.lstm.runner import train_run
    from replicate.scale import embeddings as emb
    from replicate.scale import stopping

    spec = run.spec
    n_train = len(corpus.train)
    tokens = train_tokens_for(n_train, int(spec["pct"]))
    settings = run_settings(spec["lstm"], spec["hidden"], spec["variant"], spec["seed"],
                            None if tokens == n_train else tokens)
    record = bool(spec["record"])
    tracker = emb.UpdateTracker(len(corpus.vocab), every=spec["track_every"]) if record else None
    # the same word set for every run of a data set: top-K of the FULL training split
    recorder = emb.SnapshotRecorder(emb.top_ids(corpus.train_counts(), spec["top_k"])) if record else None
    run_spec = {"name": spec["name"], "settings": settings, "config": spec["config"]}
    started = provenance.now()
    patience = spec.get("patience")  # None: the previous design, a fixed number of epochs (the engine's own loop)
    early = {} if patience is None else {"trainer_cls": stopping.StoppingTrainer, "patience": int(patience),
                                         "anneal": spec.get("anneal")}
    metrics = train_run(run_spec, corpus, out, threads=threads, device=device, allow_tf32=allow_tf32,
                        log=log, on_step=tracker, on_epoch=recorder, **early)
    # parameter split from a model of the same architecture (cheap: no training)
    model_cfg, _ = resolve(settings, len(corpus.vocab))
    model = LSTMLM(model_cfg)
    total = model.num_parameters()
    emb_params = emb.embedding_param_count(model)
    best_epoch, best = stopping.best_epoch(metrics.get("history") or [])
    best = metrics["valid_ppl"] if best_epoch is None else best
    stop = metrics.get("stopping") or {"stop_reason": None, "patience": None, "max_epochs": metrics["epochs_completed"]}
    summary = {
        "run": spec["name"], "dataset": spec["dataset"], "pct": int(spec["pct"]), "train_tokens": tokens,
        "hidden": int(spec["hidden"]), "variant": spec["variant"], "tying": model_cfg.tying,
        "projection": model_cfg.projection, "dropout": dropout_name(spec.get("dropout", 0)),
        "seed": int(spec["seed"]), "epochs": metrics["epochs_completed"], "stop_reason": stop["stop_reason"],
        "patience": stop["patience"], "anneal": spec.get("anneal"), "max_epochs": stop["max_epochs"],
        "vocab_size": len(corpus.vocab), "total_params": total, "embedding_params": emb_params,
        "non_embedding_params": total - emb_params, "embedding_share": emb_params / total,
        "train_ppl": metrics["train_ppl"], "train_clean_ppl": metrics["train_clean_ppl"],
        "final_valid_ppl": metrics["valid_ppl"], "best_valid_ppl": best, "best_epoch": best_epoch,
        "test_ppl": metrics["test_ppl"], "tokens_per_s": metrics["train_tokens_per_s"],
        "embedding_record": record, "update_steps_tracked": tracker.steps if record else None, "settings": settings,
        "code_version": provenance.code_version(emb, stopping),  # the engine's math and these hooks
        "provenance": provenance.collect(spec["config"], started, device),
    }
    if record:
        counts_used = torch.bincount(corpus.train[:tokens], minlength=len(corpus.vocab))
        rio.write_csv(out / "updates.csv", tracker.per_word(counts_used, corpus.vocab))
        rio.torch_save(out / "embeddings.pt", {**recorder.state_dict(), "variant": spec["variant"],
                                               "seed": int(spec["seed"])})
    rio.write_json(out / "summary.json", summary)
