"""What the experiments' commands share: job arguments, the ``--spec`` JSON, log lines, and a CSV written
with its provenance file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from replicate import io as rio
from replicate import provenance
from replicate.errors import ReplicateError


SPEC_SOURCE = ("Every job's spec in full: REPLICATE_FULL_PLAN=1 snakemake -n -p TARGET; every key, its type and "
               "range: config/README.md (schemas: workflow/schemas/)")


def add_job_args(parser: argparse.ArgumentParser, *, threads: bool = True, device: bool = True, run: bool = False,
                 spec_help: str = "JSON spec, as the rule builds it") -> argparse.ArgumentParser:
    """``--spec``; ``threads``: ``--threads``; ``device``: ``--device`` and ``--allow-tf32``; ``run``:
    ``--corpus`` and ``--out-dir`` (one training run)."""
    parser.add_argument("--spec", required=True, help=f"{spec_help}. {SPEC_SOURCE}")
    if run:
        parser.add_argument("--corpus", required=True, help="prepared corpus.pt")
        parser.add_argument("--out-dir", required=True)
    if threads:
        parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    if device:
        parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
        parser.add_argument("--allow-tf32", action="store_true", help="allow TF32 matmuls on CUDA")
    return parser


def load_spec(text: str, section: str | None = None) -> dict[str, Any]:
    """The ``--spec`` JSON; ``section``: a key it must have."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplicateError(f"--spec is not valid JSON ({exc})", "pass the rule's {params.spec:q}") from exc
    if section is not None and section not in spec:
        raise ReplicateError(f"--spec lacks the {section} section", "pass run_config(...) from the rule")
    return spec


_last_logged = [""]


def log(line: str) -> None:
    """One log line, flushed at once (a job's log is read while it runs)."""
    print(line, flush=True)
    _last_logged[0] = line


def last_logged() -> str:
    """The last line ``log`` wrote in this process ('' if none): where an interrupted job stopped."""
    return _last_logged[0]


def write_csv_with_provenance(path, frame, config: Any, started: str, device: str | None = None,
                              **fields: Any) -> None:
    """``frame`` as CSV at ``path``, and ``<path>.provenance.json`` with ``fields`` and the provenance block."""
    rio.write_csv(path, frame)
    rio.write_json(f"{path}.provenance.json", {**fields, "provenance": provenance.collect(config, started, device)})
