"""``python -m replicate check-config [FILE ...] [--config KEY=VALUE ...]``: the config of ``snakemake --configfile
FILE ... --config KEY=VALUE ...``, read and checked by the loader that the Snakefile and ``python -m replicate train``
use (``replicate.experiments``): a missing file, a folder or a binary file, the file and line of a YAML error, a
number YAML 1.1 read as text, the schemas' checks, and every configured run (its name in one spelling, its settings
in range, its memory estimate under max_job_memory_gib).
"""

from __future__ import annotations

import argparse

from replicate.experiments import DEFAULT_CONFIGFILE, load_config


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate check-config", description=__doc__)
    parser.add_argument("files", nargs="*", default=[DEFAULT_CONFIGFILE],
                        help=f"config files in --configfile order (later files win); default {DEFAULT_CONFIGFILE}")
    parser.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE", help="config keys set on top")
    args = parser.parse_args(argv)
    load_config(args.files, args.config)
    print(f"config valid: {' + '.join(args.files)}")
    return 0
