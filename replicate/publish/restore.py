"""``python -m replicate publish --restore``: the bundle's finished, restorable runs (``Run.restorable``) copied
back into a results folder, all or nothing, each file checked against MANIFEST.json; the corpora first, so that
Snakemake sees the restored runs as newer than their inputs and builds the tables over them without training."""

from __future__ import annotations

from pathlib import Path

from replicate import io as rio
from replicate import paths
from replicate.data import DATASETS
from replicate.errors import ReplicateError
from replicate.publish.bundle import read_manifest, sha256
from replicate.publish.catalogue import benchmark_file, present, scan
from replicate.reportkit.labels import listed


def restore(bundle: str | Path, results: str | Path, experiments: list[str] | None = None) -> dict[str, list[str]]:
    """Copy the bundle's finished, restorable runs of ``experiments`` (default: all) into ``results``; run id ->
    files copied (a file already there with the same bytes is kept). Raises before copying anything."""
    bundle, results = Path(bundle), Path(results)
    files = read_manifest(bundle).get("files")
    if not files:
        raise ReplicateError(f"{bundle} has no MANIFEST.json with files", "restore from a published bundle")
    absent = [rel for rel in files if not (bundle / rel).is_file()]
    if absent:
        raise ReplicateError(f"{bundle} lacks {len(absent)} file(s) its MANIFEST.json lists ({listed(absent, 5)}"
                             "); nothing restored (a partial bundle would restore some runs of a table and "
                             "not others)", f"restore the bundle from git (git checkout -- {bundle}), or publish it again")
    missing = [rel for rel in (paths.DATA_CORPUS.format(dataset=name) for name in DATASETS)
               if not (results / rel).is_file()]
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
