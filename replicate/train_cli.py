"""``python -m replicate train <experiment> <run_id>``: train (or resume) one run that an experiment declares
(``replicate/<experiment>/runs.py``) into ``<results_dir>/<experiment>/<run_id>`` (an engine run's folder:
metrics.json, history.csv, checkpoint.pt and train.log; a sweep width's CSV, a 6.2 point's JSON). The config is
read and checked as ``snakemake --configfile F ... --config K=V ...`` reads it
(``replicate.experiments.load_config``), the memory estimate included; this is the command each training rule
runs and prints."""

from __future__ import annotations

import argparse
from pathlib import Path

from replicate import experiments, paths
from replicate.cli_common import log, training_attempt


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate train", description=__doc__)
    parser.add_argument("experiment", help=", ".join(experiments.DECLARATIONS))
    parser.add_argument("run_id", help="e.g. small_wt/seed1 (press_wolf), table1/ptb/small_real (inan), "
                                             "runs/ptb/p25_h400_tied_drop0/seed1 (scale), runs/d512 (initial_loss)")
    parser.add_argument("--configfile", nargs="+", default=None, metavar="F",
                        help=f"config files, later ones win (default {experiments.DEFAULT_CONFIGFILE})")
    parser.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE", help="config keys set on top")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the experiment's threads)")
    parser.add_argument("--device", default=None, help="auto | cpu | cuda | cuda:N (default: the config's device)")
    parser.add_argument("--allow-tf32", action="store_true", help="allow TF32 matmuls on CUDA (or config allow_tf32)")
    parser.add_argument("--drop-checkpoint", action="store_true",
                        help="delete checkpoint.pt once the results are written (what the rule passes with config "
                             "keep_final_checkpoint: false); a rerun then trains from scratch, not only re-evaluates")
    args = parser.parse_args(argv)
    config = experiments.load_config(args.configfile, args.config)
    run = experiments.resolve_run(config, args.experiment, args.run_id)
    results = Path(config["results_dir"])
    run.refuse_to_overwrite(results / run.folder / "metrics.json", forced=False)
    from replicate.data import load_corpus  # torch: after the checks

    corpus = load_corpus(results / paths.DATA_CORPUS.format(dataset=run.dataset)) if run.dataset else None
    job = {"threads": args.threads or run.threads, "device": args.device or config["device"],
           "allow_tf32": args.allow_tf32 or config["allow_tf32"]}
    train = experiments.declaration(args.experiment).train
    if not run.kind.attempt_log:
        train(run, corpus, results, log, **job)
        return 0
    with training_attempt(results / run.folder, args.drop_checkpoint) as attempt_log:
        train(run, corpus, results, attempt_log, **job)
    return 0
