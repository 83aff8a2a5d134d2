"""``python -m replicate inan <table1|ablation-table|screen-table|figure1|readings-table|soft-target|bench-loss> ...``:
what the rules call (the runs and section 6.2 points: ``python -m replicate train inan <run_id>``), ``soft-target``,
a diagnostic of trained runs, and ``bench-loss``, the augmented loss's speed against its per-token transcription."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from replicate import io as rio
from replicate import provenance
from replicate.cli import add_config_args, load_section, write_csv_with_provenance
from replicate.errors import ReplicateError
from replicate.inan.readings import points


def _table(build):
    """A table command: ``build(report, args, config)`` (``config``: the global keys and the inan section) -> the
    frame written to ``--out`` (with its provenance) and printed."""

    def command(args) -> int:
        from replicate.inan import report

        started, config = provenance.now(), load_section(args, "inan")
        df = build(report, args, config)
        write_csv_with_provenance(args.out, df, config, started)
        print(df.to_string(index=False))
        return 0

    return command


_table1 = _table(lambda report, args, config: report.table1(args.metrics, args.paper, config["protocol"]))
_ablation = _table(lambda report, args, config: report.ablation(args.metrics, config["protocol"]))
_screen = _table(lambda report, args, config: report.screen(
    args.metrics, config["protocol"], config["inan"]["screen"]["runs"], args.soft_target))
_readings = _table(lambda report, args, config: report.readings_table(
    args.points, points(config["inan"]["subspace"]), args.paper, config["protocol"]))


def _figure1(args) -> int:
    from replicate.inan.report import figure1_epochs, figure1_frames, figure1_plot

    started, config = provenance.now(), load_section(args, "inan")
    panels, protocol = points(config["inan"]["subspace"]), config["protocol"]
    summary, runs = figure1_frames(args.points, panels, args.paper, protocol)
    epochs = figure1_epochs(args.points, panels, protocol)
    for path, frame in ((args.out, summary), (args.out_runs, runs), (args.out_epochs, epochs)):
        write_csv_with_provenance(path, frame, config, started)
    figure1_plot(summary, runs, args.figure)
    print(summary.to_string(index=False))
    return 0


def _soft_target(args) -> int:
    """Soft-target statistics of trained Table 1 / ablation runs (their checkpoint.pt), one row per run and tau."""
    import pandas as pd
    import torch

    from replicate.data import load_corpus
    from replicate.inan.soft_target import checkpoint_state, summarise

    started = provenance.now()
    torch.set_num_threads(args.threads)
    split = getattr(load_corpus(args.corpus), args.split)
    rows = []
    for run in map(Path, args.runs):
        state = checkpoint_state(run)
        metrics = rio.read_json(run / "metrics.json") if (run / "metrics.json").is_file() else {}
        info = metrics.get("inan", {})
        taus = args.tau or ([info["tau"]] if info.get("tau") else None)
        if not taus:
            raise ReplicateError(f"{run}: the run has no AL temperature", "pass --tau")
        base = {"run": str(run), "variant": info.get("variant"), "soft_target_grad": info.get("soft_target_grad"),
                "trained_tau": info.get("tau"), "trained_target_norm": info.get("target_norm"),
                "epochs_done": state.get("epoch"), "valid_ppl": metrics.get("valid_ppl"), "split": args.split}
        terms = _loss_terms(state, metrics, split[: args.loss_tokens + 1]) if args.loss_tokens else {}
        rows += [{**base, **summarise(state["model"]["embedding.weight"], float(tau), split[1:], args.top_k,
                                      target_norm=norm), **terms}
                 for tau in taus for norm in args.target_norm or [info.get("target_norm")]]
    df = pd.DataFrame(rows)
    write_csv_with_provenance(args.out, df, {"runs": args.runs, "split": args.split, "top_k": args.top_k}, started)
    print(df.to_string(index=False))
    return 0


def _loss_terms(state: dict, metrics: dict, tokens) -> dict:
    """CE and the AL term of a run's checkpointed model at its own tau, alpha and prediction form."""
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
    for name, func, help_, paper in (
            ("table1", _table1, "Table 1 beside the paper", "inan_table1"),
            ("ablation-table", _ablation, "tau x gamma ablation: validation perplexity", None),
            ("screen-table", _screen, "short-scale screen: each run's gain over its VD-LSTM baseline", None),
            ("figure1", _figure1, "section 6.2: Figure 1 data CSVs and figure", "inan_figure1"),
            ("readings-table", _readings, "section 6.2: the readings' Figure 1 shapes side by side", "inan_figure1")):
        p = sub.add_parser(name, help=help_)
        add_config_args(p)
        if paper:
            p.add_argument("--paper", required=True, help=f"paper/reference/{paper}.csv")
        p.add_argument("--out", required=True, **({"help": "per-point CSV"} if name == "figure1" else {}))
        if name == "figure1":
            p.add_argument("--out-runs", required=True, help="per-run CSV")
            p.add_argument("--out-epochs", required=True, help="per-run, per-epoch distance CSV (long)")
            p.add_argument("--figure", required=True, help="figure stem (PNG + SVG)")
        if name == "screen-table":
            p.add_argument("--soft-target", nargs="*", default=[],
                           help="`inan soft-target` CSVs of the +AL / +REAL runs (their y~ beside each gain)")
        if paper == "inan_figure1":
            p.add_argument("points", nargs="+", help="section 6.2 point JSONs")
        else:
            p.add_argument("metrics", nargs="+", help="the runs' metrics.json")
        p.set_defaults(func=func)

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
