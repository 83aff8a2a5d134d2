"""``python -m replicate press-wolf <table|bench> ...``: the commands the rules call (its runs train with
``python -m replicate train press_wolf <cell>/seed<N>``)."""

from __future__ import annotations

import argparse
import sys


def _table(args) -> int:
    from replicate.press_wolf.table import write_table

    write_table(args.metrics, args.paper, args.out, protocol=args.protocol, table=args.name)
    return 0


def _bench(args) -> int:
    from replicate.press_wolf.bench import main as bench_main

    return bench_main(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate press-wolf", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("table", help="our perplexities beside the paper's")
    p.add_argument("--name", required=True, help="table name, e.g. table6")
    p.add_argument("--paper", required=True, help="paper/reference/press_wolf_<name>.csv")
    p.add_argument("--protocol", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("metrics", nargs="+", help="metrics.json files of the runs")
    p.set_defaults(func=_table)

    p = sub.add_parser("bench", help="tokens/s of this engine vs a plain PyTorch loop; matmul peak")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cells", default="small,medium",
                   help="comma-separated: small, medium, bd, inan_vd, inan_al, inan_re, inan_real")
    p.add_argument("--batches", type=int, default=10, help="timed batches per repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--vocab", type=int, default=10000)
    p.add_argument("--out", default=None, help="optional JSON output (every repeat, load, code version)")
    p.add_argument("--table", default=None, help="optional CSV: medians and ratio per size and clock")
    p.add_argument("--breakdown", action="store_true",
                   help="instead: where one training window of each (Inan) cell spends its time, fused kernel "
                        "against the autograd path")
    p.add_argument("--default-allocator", action="store_true",
                   help="leave the C library's allocator as it is (training jobs keep freed memory)")
    p.set_defaults(func=_bench)

    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    return args.func(args)
