"""``python -m replicate check-config [FILE ...]``: the config files of ``snakemake --configfile FILE ...``,
read and checked as the workflow would, naming what Snakemake's own loader leaves unsaid: a missing file
(a traceback in Snakemake 9), a folder or a binary file, the file and line of a YAML error ("not valid JSON or
YAML" there), a key given twice in one mapping (the last one wins there, silently), a number YAML 1.1 read as
text. Then the schemas' checks of the Snakefile (keys, types, finite numbers, bounds).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from replicate.errors import ReplicateError
from replicate.validate import CONFIG_SECTIONS, SCHEMA_DIR, Schemas


class DuplicateKey(yaml.YAMLError):
    def __init__(self, key: Any, first: int, second: int):
        super().__init__(f"key {key!r} is given twice in one mapping (lines {first} and {second})")


class _Loader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # a merge (<<) is YAML's own way to give keys again
            key, line = self.construct_object(key_node), key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKey(key, seen[key], line)
            seen[key] = line
        return super().construct_mapping(node, deep)


def load(path: str | Path) -> dict[str, Any]:
    """One config file as a mapping, or a ReplicateError naming the file (and the line of a YAML error)."""
    fix = "check the path given to --configfile"
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except FileNotFoundError:
        raise ReplicateError(f"config file {path} does not exist", fix) from None
    except IsADirectoryError:
        raise ReplicateError(f"config file {path} is a folder, not a file", fix) from None
    except OSError as exc:
        raise ReplicateError(f"config file {path} cannot be read ({exc.strerror or exc})", fix) from None
    except (UnicodeDecodeError, yaml.reader.ReaderError):
        raise ReplicateError(f"config file {path} is not a text file (UTF-8 YAML)", fix) from None
    except DuplicateKey as exc:
        raise ReplicateError(f"{path}: {exc}; Snakemake would take the second silently",
                             "keep one of the two (or merge their values)") from None
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
