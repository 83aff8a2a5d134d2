"""``python -m replicate report {build,learning-curves}``: the report rules' commands."""

from __future__ import annotations

import argparse

from replicate.cli import add_config_args


def _build(args) -> int:
    from replicate.experiments import load_config, report_config
    from replicate.report.build import build

    given = args.configfile or args.config
    config = report_config(load_config(args.configfile, args.config)) if given else {"report": {}}
    section = config["report"]
    out = build(args.results, args.template, args.md, args.html, figures_dir=args.figures,
                captions_dir=args.captions, tolerances=section.get("tolerances"), title=section.get("title"),
                sections=config.get("sections"), full_protocol=config.get("full_protocol"))
    for claim, status in out["verdicts"].items():
        print(f"{claim:<18} {status}")
    print(f"figures shown: {len(out['shown_figures'])}; wrote {args.md} and {args.html}")
    return 0


def _curves(args) -> int:
    from replicate.report.figures import write_learning_curves

    for path in write_learning_curves(args.histories, args.out_stem, args.paper):
        print(f"wrote {path}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate report")
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("build", help="assemble the Markdown and HTML report from the result files")
    p.add_argument("--results", default="results", help="results folder to read")
    p.add_argument("--template", default="paper/report_template.md", help="narrative template")
    p.add_argument("--md", required=True, help="output Markdown report")
    p.add_argument("--html", required=True, help="output self-contained HTML report")
    p.add_argument("--figures", default=None, help="figures folder (default: <results>/figures)")
    p.add_argument("--captions", default="workflow/report", help="folder of figure captions (*.rst)")
    add_config_args(p, files="none: no title, tolerances or protocol comparison from a config, as a bundle's "
                             "rebuild builds it")
    p.set_defaults(func=_build)
    p = sub.add_parser("learning-curves", help="Press & Wolf train/valid perplexity per epoch (PNG + SVG)")
    p.add_argument("--out-stem", required=True, help="output path without extension")
    p.add_argument("--paper", default=None, help="the paper's table (paper/reference/press_wolf_table6.csv): "
                                                  "its final valid perplexity is marked per cell")
    p.add_argument("histories", nargs="+", help="press_wolf/<cell>/seed<k>/history.csv files")
    p.set_defaults(func=_curves)
    args = parser.parse_args(argv)
    return args.func(args)
