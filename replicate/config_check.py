"""``python -m replicate check-config [FILE ...]``: the config files of ``snakemake --configfile FILE ...``,
read and checked as the workflow would, naming what Snakemake's own loader leaves unsaid: a missing file
(a traceback in Snakemake 9), the file and line of a YAML error ("not valid JSON or YAML" there), a
number YAML 1.1 read as text. Then the schemas' checks of the Snakefile (keys, types, finite numbers, bounds).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from replicate.errors import ReplicateError
from replicate.validate import CONFIG_SECTIONS, SCHEMA_DIR, Schemas


def load(path: str | Path) -> dict[str, Any]:
    """One config file as a mapping, or a ReplicateError naming the file (and the line of a YAML error)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ReplicateError(f"config file {path} does not exist", "check the path given to --configfile") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ReplicateError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', None) or exc})",
                             "fix the YAML there (an unclosed bracket or quote, tabs mixed with spaces)") from None
    if not isinstance(data, dict):
        raise ReplicateError(f"{path}: the top level is not a mapping of keys", "write key: value lines")
    return data


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base`` as Snakemake merges config files: nested keys merge, lists replace."""
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate check-config", description=__doc__)
    parser.add_argument("files", nargs="*", default=["config/config.yaml"],
                        help="config files in --configfile order (later files win); default config/config.yaml")
    args = parser.parse_args(argv)
    config: dict[str, Any] = {}
    for path in args.files:
        merge(config, load(path))
    schemas = Schemas(SCHEMA_DIR)
    for name in CONFIG_SECTIONS:
        data = config if name == "config" else config.get(name, {})
        schemas.check_config(data, f"{name}.schema.yaml", "" if name == "config" else name)
    print(f"config valid: {' + '.join(args.files)}")
    return 0
