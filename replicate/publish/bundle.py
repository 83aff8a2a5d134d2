"""Publish finished results into the tracked bundle: merge, rebuild the report, write the manifest, then swap the
new bundle in by renaming (a reader sees the old bundle or the new one, never a mix); rebuild or redraw it; restore
its runs into a results folder."""

from __future__ import annotations

import contextlib
import fnmatch
import io
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from replicate import io as rio
from replicate import paths, provenance
from replicate.data import DATASETS
from replicate.errors import ReplicateError
from replicate.publish import checks
from replicate.publish.catalogue import (EXPERIMENTS, NEVER, Run, Scan, benchmark_file, files_under, owner, present,
                                         read_json, scan)
from replicate.reportkit.labels import listed

MANIFEST = "MANIFEST.json"


@dataclass
class Plan:
    """What one publish copies: per experiment its scan of the results folder."""
    results: Path
    bundle: Path
    scans: dict[str, Scan]
    unowned: list[str] = field(default_factory=list)   # results files no experiment publishes
    dropped: set[str] = field(default_factory=set)     # bundle files of the runs --replace-runs replaces
    held_back: list[str] = field(default_factory=list)  # finished runs of kinds --replace-runs does not name

    @property
    def publishable(self) -> dict[str, Scan]:
        return {n: s for n, s in self.scans.items() if s.files}


def plan(results: str | Path, bundle: str | Path, experiments: list[str] | None = None,
         replace: bool = False, replace_runs: list[str] | tuple[str, ...] = (), retire: tuple[str, ...] = ()) -> Plan:
    """Scan ``results`` and check it against ``bundle``; raise on a code-version or protocol mix. ``replace_runs``
    (``inan/table1``): those runs and the files built from them replace the bundle's; the experiment's other runs
    in ``results`` are held back, the bundle's stay. ``retire``: globs of bundle files dropped, nothing in their place."""
    results, bundle = Path(results), Path(bundle)
    if replace and replace_runs:
        raise ReplicateError("--replace drops all of an experiment's bundle files, --replace-runs publishes only "
                             "some of its runs", "pass one of the two")
    if not results.is_dir():
        raise ReplicateError(f"results folder {results} not found", "pass --results <folder of a run>")
    names = list(dict.fromkeys(experiments or present(results)))  # the CLI's choices are the known experiments
    if not names:
        raise ReplicateError(f"{results} holds no experiment's results", "run an experiment first")
    scans = {n: scan(results, n) for n in names}
    empty = [n for n, s in scans.items() if not s.files]
    if empty and (experiments or len(empty) == len(scans)):
        unfinished = [r.id for n in empty for r in scans[n].skipped]
        raise ReplicateError(f"{results} holds nothing finished to publish for {', '.join(empty)}"
                             + (f" (not finished: {', '.join(unfinished)})" if unfinished else ""),
                             "publish once a run has finished, or name other experiments")
    kinds = _replaced_kinds(replace_runs, scans, results)
    limited = {n: s.only(kinds[n]) for n, s in scans.items() if n in kinds}
    held_back = [r.id for n in limited for r in scans[n].runs if r.kind not in kinds[n]]
    scans |= limited  # what a limited experiment ships: the named kinds' runs and the files built from them
    retired = _retired(bundle, retire, {f for s in scans.values() for f in s.files})
    staying = [] if replace else [f for f in files_under(bundle) if f not in retired]  # listed once, not per experiment
    held = {} if replace else {n: scan(bundle, n, staying) for n in scans}
    kept = {n: s.without(kinds.get(n, set())) for n, s in held.items()}
    dropped = {f for n in held for f in set(held[n].files) - set(kept[n].files)} | retired
    checks.refuse(scans, kept, results, bundle)
    unowned = [rel for rel in files_under(results) if not rel.startswith(NEVER) and owner(rel) is None]
    return Plan(results, bundle, scans, unowned, dropped, held_back)


def _retired(bundle: Path, globs: tuple[str, ...], published: set[str]) -> set[str]:
    """The bundle files the ``--retire`` globs match; raise on a glob that matches none or a file also published."""
    files = files_under(bundle) if globs else []
    out = set()
    for glob in globs:
        hits = {rel for rel in files if fnmatch.fnmatchcase(rel, glob)}
        if not hits:
            raise ReplicateError(f"--retire {glob}: no file of {bundle} matches it", "give a glob relative to the "
                                 f"bundle, e.g. inan/screen/* (ls {bundle})")
        out |= hits
    if clash := sorted(out & published):
        raise ReplicateError(f"--retire drops {clash[0]}, which this publish also ships", "retire other files, or "
                             "move that result out of the results folder")
    return out


def _replaced_kinds(names, scans: dict[str, Scan], results: Path) -> dict[str, set[str]]:
    """``<experiment>/<kind>`` names as experiment -> kinds; raise on one that names nothing to publish."""
    known = sorted({f"{e.name}/{k.name}" for e in EXPERIMENTS.values() for k in e.kinds})
    out: dict[str, set[str]] = {}
    for name in names:
        experiment, _, kind = name.partition("/")
        if name not in known:
            raise ReplicateError(f"--replace-runs {name}: no such run kind", f"choose from {', '.join(known)}")
        if experiment not in scans or not any(r.kind == kind for r in scans[experiment].runs):
            raise ReplicateError(f"--replace-runs {name}: {results} holds no finished {name} runs to replace "
                                 "the bundle's with", "finish those runs first, or drop the option")
        out.setdefault(experiment, set()).add(kind)
    return out


def publish(p: Plan, replace: bool = False, max_bytes: int = 20_000_000) -> dict:
    """Write the bundle of ``p`` (merged with the bundle's other experiments); returns the manifest."""
    bundle = p.bundle
    bundle.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{bundle.name}.publish-", dir=bundle.parent)).resolve()
    try:
        # The report names its results folder and links files relative to it: build it in a copy laid out as the
        # bundle is seen from the working folder (a relative path inside it, else its name), as `report build` would.
        shown = bundle.as_posix() if not bundle.is_absolute() and ".." not in bundle.parts else bundle.name
        stage = tmp / shown
        _stage(p, stage, replace)
        with contextlib.chdir(tmp):
            build_report(Path(shown))
        manifest = _manifest(stage, set(p.publishable), read_manifest(bundle))
        rio.write_json(stage / MANIFEST, manifest)
        _check_size(manifest, max_bytes)
        if bundle.exists():  # swapped in by renaming: a reader sees the old bundle or the new one
            os.replace(bundle, tmp / "previous")
        try:
            os.replace(stage, bundle)
        except OSError:
            if (tmp / "previous").exists():
                os.replace(tmp / "previous", bundle)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def _stage(p: Plan, stage: Path, replace: bool) -> None:
    """The bundle's files (less its report, manifest, and with ``replace`` the published experiments'), then the
    published files over them."""
    dropped = set(p.publishable) if replace else set()
    for rel in files_under(p.bundle):
        if (rel != MANIFEST and not rel.startswith("report/") and owner(rel) not in dropped
                and rel not in p.dropped):
            _copy(p.bundle / rel, stage / rel)
    for s in p.publishable.values():
        for rel in s.files:
            _copy(p.results / rel, stage / rel)


def _check_size(manifest: dict, max_bytes: int) -> None:
    sizes = {rel: info["bytes"] for rel, info in manifest["files"].items()}
    total = sum(sizes.values())
    if total > max_bytes:
        largest = ", ".join(f"{rel} {size / 1e6:.1f} MB" for rel, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
        raise ReplicateError(f"the bundle would hold {total / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit "
                             f"(largest: {largest})",
                             "leave the large files out of the experiment's published files "
                             "(replicate/publish/catalogue.py), or raise --max-mb")


def build_report(root: Path) -> None:
    """``python -m replicate report build --results <root>`` into <root>/report/ (its printout dropped)."""
    from replicate.report import cli as report_cli

    args = ["build", "--results", str(root), "--md", str(root / paths.REPORT_MD),
            "--html", str(root / paths.REPORT_HTML),
            "--template", str(provenance.PROJECT_ROOT / "paper" / "report_template.md"),
            "--captions", str(provenance.PROJECT_ROOT / "workflow" / "report")]
    with contextlib.redirect_stdout(io.StringIO()):
        report_cli.main(args)


REBUILT = ("report/", "figures/")  # what a rebuild may change: drawn from the bundle's own files


def rebuild(bundle: str | Path, redraw: bool = False) -> list[str]:
    """Rebuild the bundle's report (and with ``redraw`` its figures) from the bundle itself; re-hash what changed
    in MANIFEST.json, record the rebuild under ``rebuilt``; the files whose hash changed."""
    bundle = Path(bundle)
    manifest = read_manifest(bundle)
    if not manifest.get("files"):
        raise ReplicateError(f"{bundle} has no MANIFEST.json with files", "publish a run first")
    for rel in files_under(bundle):  # the inputs must be what was published
        entry = manifest["files"].get(rel)
        if rel != MANIFEST and not rel.startswith(REBUILT) and (entry is None or entry["sha256"] != sha256(bundle / rel)):
            raise ReplicateError(f"{bundle / rel} differs from MANIFEST.json and is not rebuilt from the bundle",
                                 "publish it with python -m replicate publish, or restore it from git")
    stamp = tree_stamp()  # before the rebuild dirties the tree
    if redraw:
        redraw_figures(bundle)
    with contextlib.chdir(bundle.parent if bundle.is_absolute() else Path.cwd()):
        build_report(Path(bundle.name) if bundle.is_absolute() else bundle)
    changed = []
    for rel in files_under(bundle):
        entry = manifest["files"].get(rel)
        if rel == MANIFEST or (entry is not None and entry["sha256"] == sha256(bundle / rel)):
            continue
        manifest["files"][rel] = _entry(bundle, rel)
        changed.append(rel)
    manifest["rebuilt"] = {"at": provenance.now(), **stamp, "redrawn": redraw, "files": changed}
    rio.write_json(bundle / MANIFEST, manifest)
    return changed


sha256 = rio.file_sha256


def _entry(root: Path, rel: str) -> dict:
    return {"sha256": sha256(root / rel), "bytes": (root / rel).stat().st_size, "experiment": owner(rel)}


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)


def read_manifest(bundle: Path) -> dict:
    return read_json(bundle / MANIFEST) or {}


def tree_stamp() -> dict:
    """The commit published from, whether the tree had uncommitted changes, and then the sha256 of the diff."""
    git = provenance.git_state()
    return {"commit": git["commit"], "dirty": git["dirty"],
            "diff_sha256": provenance.diff_sha256() if git["dirty"] else None}


def _manifest(stage: Path, published: set[str], previous: dict) -> dict:
    stamp = {"published": provenance.now(), **tree_stamp()}
    files = [rel for rel in files_under(stage) if rel != MANIFEST]
    experiments = {}
    for name in EXPERIMENTS:
        s = scan(stage, name, files)
        if not s.files:
            continue
        before = previous.get("experiments", {}).get(name, {})
        experiments[name] = {
            **(stamp if name in published else {k: before.get(k) for k in stamp}),
            "protocol": next(iter(s.protocols), None),
            "code_versions": {kind: next(iter(groups)) for kind, groups in s.versions().items()},
            "runs": {r.id: {"kind": r.kind, "code_version": r.code_version, "protocol": r.protocol,
                            "commit": r.commit, "dirty": r.dirty} for r in s.runs},
        }
    return {"format": 1, **stamp, "experiments": experiments,
            "files": {rel: _entry(stage, rel) for rel in files}}


def _csv(bundle: Path, rel: str, **kw) -> pd.DataFrame | None:
    path = bundle / rel
    return pd.read_csv(path, **kw) if path.is_file() else None


def _protocol(frame: pd.DataFrame) -> str:
    return str(frame["protocol"].iloc[0]) if "protocol" in frame.columns and len(frame) else "unknown"


def redraw_figures(bundle: str | Path) -> list[Path]:
    """Every figure of ``bundle`` whose inputs it holds, redrawn into ``bundle/figures`` by its own drawing code
    (Inan's Figure 1 only from a table that names its metric); the paths written."""
    from replicate.inan.report import figure1_plot
    from replicate.initial_loss import figures as il
    from replicate.plotting import save_figure, use_style
    from replicate.report.figures import write_learning_curves
    from replicate.scale import figures as sc

    bundle = Path(bundle)
    out = bundle / "figures"
    if not out.is_dir():
        raise ReplicateError(f"{bundle} has no figures/ folder", "pass a published bundle (paper/measured)")

    def initial_loss(summary, families):
        use_style()
        return (save_figure(il.loss_vs_width(summary), out / "initial_loss_vs_width")
                + save_figure(il.standard_init(summary), out / "initial_loss_standard_init")
                + save_figure(il.embedding_share(families), out / "embedding_share"))

    histories = sorted(bundle.glob("press_wolf/*/seed*/history.csv"))
    written = write_learning_curves(histories, out / "report_press_wolf_learning_curves", provenance.PROJECT_ROOT
                                    / "paper" / "reference" / "press_wolf_table6.csv") if histories else []
    for inputs, draw in (  # the bundle files a drawing reads, and the drawing
            (("tables/initial_loss_summary.csv", "tables/model_families.csv"), initial_loss),
            (("scale/gain_by_seed.csv", "tables/scale_gain.csv"),
             lambda s, g: sc.gain_figures(s, g, out, _protocol(g))),
            (("scale/update_frequency.csv",), lambda u: sc.update_figure(u, out, _protocol(u))),
            (("scale/embedding_similarity_epochs.csv",), lambda e: sc.similarity_figure(e, out, _protocol(e))),
            (("scale/transformer_curves.csv", "tables/scale_transformer.csv"),
             lambda c, t: sc.transformer_figures(c, t, out, _protocol(t))),
            (("tables/inan_figure1.csv", "tables/inan_figure1_runs.csv"),
             lambda f, r: figure1_plot(f, r, out / "inan_figure1") if "metric" in f.columns else [])):
        frames = [_csv(bundle, rel, dtype={"std": str} if rel.startswith("tables/initial_loss") else None)
                  for rel in inputs]
        if all(f is not None for f in frames):
            written += draw(*frames)
    return written


def restore(bundle: str | Path, results: str | Path,
            experiments: list[str] | None = None) -> tuple[dict[str, list[str]], list[Run]]:
    """``publish --restore``: copy the bundle's finished, restorable runs (``Run.restorable``) of ``experiments``
    (default: all) into ``results``, all or nothing, each file checked against MANIFEST.json; (run id -> files copied
    (a file already there with the same bytes is kept), the runs left out). The corpora must be there
    first, so that Snakemake sees the restored runs as newer than their inputs and builds the tables over them
    without training."""
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
    left_out = []
    for name in experiments or present(bundle):
        for run in scan(bundle, name).runs:
            if run.restorable:
                bench = benchmark_file(run.id)
                copies[run.id] = run.files + ([bench] if (bundle / bench).is_file() else [])
            else:
                left_out.append(run)
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
    # written now, so newer than the corpora: Snakemake sees the run as done; a run's files go in name order, so
    # an Inan screen run's soft_target.csv comes after the metrics.json its job reads
    for rel in todo:
        rio.write_bytes(results / rel, (bundle / rel).read_bytes())
    return {run: [f for f in run_files if f in todo] for run, run_files in copies.items()}, left_out
