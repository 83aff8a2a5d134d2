"""``python -m replicate publish --restore``: copy the bundle's finished runs back into a results folder.

A new machine starts with an empty ``results/``: the runs published from earlier sessions are only in the
bundle. Restored, they stand beside new runs (more seeds, the rest of a grid), and Snakemake builds the
tables over all of them without training them again:

- only a run whose rule writes nothing but the files the bundle holds is restored (``Run.restorable``):
  not the embedding analysis' scale runs, whose embeddings are never published, nor Inan's screen runs,
  whose soft-target analysis reads their weights;
- every file is checked against MANIFEST.json before it is copied, and a bundle that lacks a file its
  MANIFEST.json lists is refused whole (all or nothing: nothing is copied);
- the restored files are stamped with the current time: Snakemake reruns a job whose output is older than
  its input, so the corpora must be prepared first (the restore refuses otherwise). Snakemake has no record
  (``.snakemake/``) of a restored file, so no params or code trigger applies to it.
"""

from __future__ import annotations

from pathlib import Path

from replicate import io as rio
from replicate import paths
from replicate.data import DATASETS
from replicate.errors import ReplicateError
from replicate.publish.bundle import read_manifest, sha256
from replicate.publish.catalogue import benchmark_file, listed, present, scan


def corpora_missing(results: Path) -> list[str]:
    """The prepared corpora (relative to ``results``) that are not there."""
    wanted = [paths.DATA_CORPUS.format(dataset=name) for name in DATASETS]
    return [rel for rel in wanted if not (results / rel).is_file()]


def restore(bundle: str | Path, results: str | Path, experiments: list[str] | None = None) -> dict[str, list[str]]:
    """Copy the bundle's finished, restorable runs of ``experiments`` (default: all it holds) into
    ``results``. Returns run id -> files copied (a file already there with the same bytes is kept).
    Raises before copying anything when a file the manifest lists is missing, a file differs from the
    manifest or from a file already in ``results``, or a corpus is not prepared."""
    bundle, results = Path(bundle), Path(results)
    files = read_manifest(bundle).get("files")
    if not files:
        raise ReplicateError(f"{bundle} has no MANIFEST.json with files", "restore from a published bundle")
    absent = [rel for rel in files if not (bundle / rel).is_file()]
    if absent:
        raise ReplicateError(f"{bundle} lacks {len(absent)} file(s) its MANIFEST.json lists ({listed(absent, 5)}"
                             "); nothing restored (a partial bundle would restore some runs of a table and "
                             "not others)", f"restore the bundle from git (git checkout -- {bundle}), or publish it again")
    missing = corpora_missing(results)
    if missing:
        targets = " ".join(f"{results.as_posix()}/{rel}" for rel in missing)
        raise ReplicateError(f"{results} has no prepared {', '.join(missing)}: a corpus prepared after the restore "
                             "would be newer than the restored runs, and Snakemake would train them again",
                             f"prepare the data first: snakemake --cores 2 {targets}")
    copies: dict[str, list[str]] = {}
    for name in experiments or present(bundle):
        for run in scan(bundle, name).runs:
            if run.restorable:
                bench = benchmark_file(run.id)
                copies[run.id] = run.files + ([bench] if (bundle / bench).is_file() else [])
    todo = []
    for rel in (rel for run_files in copies.values() for rel in run_files):
        entry = files.get(rel)
        if entry is None or entry["sha256"] != sha256(bundle / rel):
            raise ReplicateError(f"{bundle / rel} differs from MANIFEST.json", "restore the bundle from git")
        dest = results / rel
        if not dest.exists():
            todo.append(rel)
        elif sha256(dest) != entry["sha256"]:
            raise ReplicateError(f"{dest} exists and differs from the bundle's copy",
                                 "move it away, or restore into another folder (--results)")
    for rel in todo:  # written now, so newer than the corpora: Snakemake sees the run as done
        rio.write_bytes(results / rel, (bundle / rel).read_bytes())
    return {run: [f for f in run_files if f in todo] for run, run_files in copies.items()}
