"""``python -m replicate inan <train|table1|ablation-table|screen-table|subspace|figure1|readings-table|soft-target|bench-loss> ...``:
what the rules call, ``soft-target``, a diagnostic of trained runs, and ``bench-loss``, the augmented
loss's speed against its per-token transcription."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from replicate.cli_common import add_job_args, load_spec, log, training_attempt, write_csv_with_provenance


def _train(args) -> int:
    """One Table 1 / ablation run: the engine's train_run + the augmented loss as extra_loss."""
    from replicate import io as rio
    from replicate import provenance
    from replicate.data import load_corpus
    from replicate.inan.train import run_settings
    from replicate.inan.trainer import AugmentedTrainer
    from replicate.lstm.runner import train_run

    spec = load_spec(args.spec)
    engine, al = run_settings(spec["size_settings"], spec["size"], spec["variant"], spec["seed"],
                              spec.get("overrides"))
    name = f"inan/{spec['dataset']}/{spec['size']}_{spec['variant']}" + (f"_{spec['tag']}" if spec.get("tag") else "")
    hooks = {"extra_loss": al, "trainer_cls": AugmentedTrainer} if al is not None else {}
    # the numbers come from the engine AND the augmented loss: the run's code version covers both, read
    # before training (a source edited while the run trains must not be stamped on its numbers)
    code_version = provenance.code_version(run_settings, AugmentedTrainer)
    corpus = load_corpus(args.corpus)
    with training_attempt(args.out_dir, args.drop_checkpoint) as attempt_log:
        result = train_run({"name": name, "settings": engine, "config": spec.get("config", spec)},
                           corpus, args.out_dir, threads=args.threads, device=args.device,
                           allow_tf32=args.allow_tf32, log=attempt_log, **hooks)
        result["code_version"] = code_version
        if al is not None:  # how informative its y~ ended up, with the run (a restore brings no weights)
            result["soft_target"] = _final_soft_target(Path(args.out_dir), corpus.valid[1:], al)
        result["inan"] = {"dataset": spec["dataset"], "size": spec["size"], "variant": spec["variant"],
                          "seed": spec["seed"], "tau": al.tau if al else None, "gamma": al.gamma if al else None,
                          "alpha": al.alpha if al else None, "tau_power": al.tau_power if al else None,
                          "soft_target_grad": al.soft_target_grad if al else None,
                          "prediction_bias": al.prediction_bias if al else None,
                          "target_norm": al.target_norm if al else None,
                          "reduction": spec.get("reduction")}
        rio.write_json(Path(args.out_dir) / "metrics.json", result)
    return 0


def _final_soft_target(run: Path, targets, al) -> dict:
    """``soft_target.summarise`` of a finished run's y~ (its checkpoint's input embedding, at its own tau and
    target_norm) over the valid split's targets."""
    from replicate.inan.soft_target import summarise

    embedding = _checkpoint_state(run)["model"]["embedding.weight"]
    return summarise(embedding, al.tau, targets, min(10, embedding.shape[0]), target_norm=al.target_norm)


def _checkpoint_state(run: Path) -> dict:
    """A run's checkpoint.pt, its checksum verified."""
    import torch

    from replicate import io as rio
    from replicate.errors import ReplicateError

    ckpt = run / "checkpoint.pt"
    if not ckpt.is_file():
        raise ReplicateError(f"{run} has no checkpoint.pt", "pass the folder of a finished Table 1 / ablation run")
    if rio.checksum_status(ckpt) is False:
        raise ReplicateError(f"{ckpt} does not match its checksum in {rio.checksum_path(ckpt)} (its bytes changed "
                             "after it was written)", f"train the run again (delete {run} and rerun its target)")
    return torch.load(ckpt, map_location="cpu", weights_only=True)


def _table1(args) -> int:
    from replicate import provenance
    from replicate.inan.report import table1

    started = provenance.now()
    df = table1(args.metrics, args.paper, args.protocol)
    write_csv_with_provenance(args.out, df, load_spec(args.spec), started)
    print(df.to_string(index=False))
    return 0


def _ablation(args) -> int:
    from replicate import provenance
    from replicate.inan.report import ablation

    started = provenance.now()
    df = ablation(args.metrics, args.protocol)
    write_csv_with_provenance(args.out, df, load_spec(args.spec), started)
    print(df.to_string(index=False))
    return 0


def _screen(args) -> int:
    from replicate import provenance
    from replicate.inan.report import screen

    started = provenance.now()
    spec = load_spec(args.spec)
    df = screen(args.metrics, args.protocol, spec.get("inan", {}).get("screen", {}).get("runs"), args.soft_target)
    write_csv_with_provenance(args.out, df, spec, started)
    print(df.to_string(index=False))
    return 0


def _subspace(args) -> int:
    """All seeds of one Figure 1 point (tau, beta)."""
    from replicate import devices, provenance
    from replicate import io as rio
    from replicate.data import load_corpus
    from replicate.inan.subspace_exp import run_point
    from replicate.inan.subspace_spec import check_point_spec

    started = provenance.now()
    spec = load_spec(args.spec)
    check_point_spec(spec)
    dev = devices.resolve_device(args.device)
    devices.setup(args.threads, args.allow_tf32)
    result = run_point(spec, load_corpus(args.corpus), Path(args.work_dir), device=str(dev), log=log)
    result["provenance"] = provenance.collect(spec.get("config", spec), started, str(dev))
    rio.write_json(args.out, result)
    log(f"[6.2 tau={spec['tau']} beta={spec['beta']}] distance {result['distance_mean']:.4f} "
         f"+- {result['distance_std']:.4f} over {result['n_seeds']} seeds")
    return 0


def _figure1(args) -> int:
    from replicate import provenance
    from replicate.inan.readings import points
    from replicate.inan.report import figure1_epochs, figure1_frames, figure1_plot

    started = provenance.now()
    spec = load_spec(args.spec, "inan")
    panels = points(spec["inan"]["subspace"])
    summary, runs = figure1_frames(args.points, panels, args.paper, args.protocol)
    write_csv_with_provenance(args.out, summary, spec, started)
    write_csv_with_provenance(args.out_runs, runs, spec, started)
    write_csv_with_provenance(args.out_epochs, figure1_epochs(args.points, panels, args.protocol), spec, started)
    figure1_plot(summary, runs, args.figure)
    print(summary.to_string(index=False))
    return 0


def _readings(args) -> int:
    from replicate import provenance
    from replicate.inan.readings import points
    from replicate.inan.report import readings_table

    started = provenance.now()
    spec = load_spec(args.spec, "inan")
    df = readings_table(args.points, points(spec["inan"]["subspace"]), args.paper, args.protocol)
    write_csv_with_provenance(args.out, df, spec, started)
    print(df.to_string(index=False))
    return 0


def _soft_target(args) -> int:
    """Soft-target statistics of trained Table 1 / ablation runs (their checkpoint.pt), one row per run and tau."""
    import pandas as pd
    import torch

    from replicate import io as rio
    from replicate import provenance
    from replicate.data import load_corpus
    from replicate.errors import ReplicateError
    from replicate.inan.soft_target import summarise

    started = provenance.now()
    torch.set_num_threads(args.threads)
    targets = getattr(load_corpus(args.corpus), args.split)[1:]
    rows = []
    for run in map(Path, args.runs):
        metrics_path = run / "metrics.json"
        state = _checkpoint_state(run)
        metrics = rio.read_json(metrics_path) if metrics_path.is_file() else {}
        info = metrics.get("inan", {})
        taus = args.tau or ([info["tau"]] if info.get("tau") else None)
        if not taus:
            raise ReplicateError(f"{run}: the run has no AL temperature", "pass --tau")
        embedding = state["model"]["embedding.weight"]
        base = {"run": str(run), "variant": info.get("variant"), "soft_target_grad": info.get("soft_target_grad"),
                "trained_tau": info.get("tau"), "trained_target_norm": info.get("target_norm"),
                "epochs_done": state.get("epoch"), "valid_ppl": metrics.get("valid_ppl")}
        terms = {}
        if args.loss_tokens:
            terms = _loss_terms(state, metrics, getattr(load_corpus(args.corpus), args.split)[: args.loss_tokens + 1])
        norms = args.target_norm or [info.get("target_norm")]
        for tau in taus:
            for norm in norms:
                rows.append({**base, "split": args.split,
                             **summarise(embedding, float(tau), targets, args.top_k, target_norm=norm), **terms})
    df = pd.DataFrame(rows)
    write_csv_with_provenance(args.out, df, {"runs": args.runs, "split": args.split, "top_k": args.top_k}, started)
    print(df.to_string(index=False))
    return 0


def _loss_terms(state: dict, metrics: dict, tokens) -> dict:
    """CE and the AL term of a run's checkpointed model at its own tau, alpha and prediction form."""
    from replicate.errors import ReplicateError
    from replicate.inan.soft_target import loss_terms
    from replicate.inan.train import AugmentedLoss
    from replicate.lstm.config import ModelConfig
    from replicate.lstm.model import LSTMLM

    info = metrics.get("inan", {})
    if not info.get("tau") or "resolved" not in metrics:
        raise ReplicateError("--loss-tokens needs a finished AL run (metrics.json with its tau and settings)",
                             "pass the folder of a finished +AL / +REAL run, or drop --loss-tokens")
    model = LSTMLM(ModelConfig(**metrics["resolved"]["model"]))
    model.load_state_dict(state["model"])
    al = AugmentedLoss(info["tau"], info["gamma"], prediction_bias=bool(info.get("prediction_bias", True)),
                       tau_power=info.get("tau_power") or 1.0,  # runs from before a switch: its old form
                       target_norm=info.get("target_norm"))
    terms = loss_terms(model, tokens, al)
    return {f"loss_{k}" if not k.startswith("loss") else k: v for k, v in terms.items()}


def _target_norm(text: str) -> float | None:
    """A --target-norm value: 'none' or a number > 0."""
    if text == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'none' or a number > 0")
    return value


def _bench_loss(args) -> int:
    from replicate.inan.bench import main as bench_main

    return bench_main(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate inan", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train (or resume) one Table 1 / ablation run")
    add_job_args(p, run=True, checkpoint=True,
                 spec_help='JSON: {"dataset", "size", "variant", "seed", "size_settings", "overrides", "config"}')
    p.set_defaults(func=_train)

    for name, func, help_ in (("table1", _table1, "Table 1 beside the paper"),
                              ("ablation-table", _ablation, "tau x gamma ablation: validation perplexity"),
                              ("screen-table", _screen, "short-scale screen: each run's gain over its VD-LSTM baseline")):
        p = sub.add_parser(name, help=help_)
        add_job_args(p, threads=False, device=False, spec_help="resolved config slice (provenance)")
        p.add_argument("--protocol", required=True)
        p.add_argument("--out", required=True)
        if name == "table1":
            p.add_argument("--paper", required=True, help="paper/reference/inan_table1.csv")
        if name == "screen-table":
            p.add_argument("--soft-target", nargs="*", default=[],
                           help="`inan soft-target` CSVs of the +AL / +REAL runs (their y~ beside each gain)")
        p.add_argument("metrics", nargs="+")
        p.set_defaults(func=func)

    p = sub.add_parser("subspace", help="section 6.2: all seeds of one (tau, beta) point")
    add_job_args(p, spec_help='JSON: {"subspace": {...}, "tau", "beta", "seeds", "config"}')
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work-dir", required=True, help="per-seed records and checkpoints (resume)")
    p.set_defaults(func=_subspace)

    p = sub.add_parser("figure1", help="section 6.2: Figure 1 data CSVs and figure")
    add_job_args(p, threads=False, device=False)
    p.add_argument("--protocol", required=True)
    p.add_argument("--paper", required=True, help="paper/reference/inan_figure1.csv")
    p.add_argument("--out", required=True, help="per-point CSV")
    p.add_argument("--out-runs", required=True, help="per-run CSV")
    p.add_argument("--out-epochs", required=True, help="per-run, per-epoch distance CSV (long)")
    p.add_argument("--figure", required=True, help="figure stem (PNG + SVG)")
    p.add_argument("points", nargs="+")
    p.set_defaults(func=_figure1)

    p = sub.add_parser("readings-table", help="section 6.2: the readings' Figure 1 shapes side by side")
    add_job_args(p, threads=False, device=False)
    p.add_argument("--protocol", required=True)
    p.add_argument("--paper", required=True, help="paper/reference/inan_figure1.csv")
    p.add_argument("--out", required=True)
    p.add_argument("points", nargs="+", help="point JSONs of every reading")
    p.set_defaults(func=_readings)

    p = sub.add_parser("soft-target", help="how informative the AL soft target y~ of trained runs is")
    p.add_argument("--corpus", required=True, help="prepared corpus.pt (its split gives the target tokens)")
    p.add_argument("--split", choices=("train", "valid", "test"), default="valid")
    p.add_argument("--tau", type=float, nargs="+", default=None,
                   help="temperature(s) of y~ (default: the run's own tau)")
    p.add_argument("--target-norm", nargs="+", default=None, metavar="R", type=_target_norm,
                   help="word-vector norm(s) inside y~, or 'none' for the embedding as it is (default: the run's own "
                        "target_norm); with a VD-LSTM / +RE run and --tau, what y~ a knob would give its embedding")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--loss-tokens", type=int, default=0,
                   help="also the run's CE and AL term (alpha * J_aug) per token on the first N tokens of the split")
    p.add_argument("--out", required=True, help="CSV (with a .provenance.json beside it)")
    p.add_argument("runs", nargs="+", help="run folders with checkpoint.pt and metrics.json")
    p.set_defaults(func=_soft_target)

    p = sub.add_parser("bench-loss", help="augmented loss forward + backward: ms against its per-token transcription")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokens", type=int, default=700, help="tokens per batch (PTB: 20 x 35)")
    p.add_argument("--vocab", type=int, default=10000)
    p.add_argument("--dim", type=int, default=200, help="embedding size (small: 200)")
    p.add_argument("--tau", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=21)
    p.add_argument("--out", default=None, help="JSON with every timing (default: print a summary)")
    p.set_defaults(func=_bench_loss)

    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    return args.func(args)
