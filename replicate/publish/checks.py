"""The publish refusals: a working tree with uncommitted changes (unless allowed); a run with a non-finite
number, a run whose settings are not those of the preset its protocol label names, a table with a non-finite
number or a row of a skipped run; one experiment's results must share one code version per run kind and one
protocol, within what is published and against what the bundle already holds for it.

A table is built when all its runs have finished; a run of it that is skipped now (unfinished: being run
again, or its result changed since) means the table holds numbers the bundle would not hold the run of. A
skipped run's row is found by the wildcards of its declared run id (``catalogue.declared``) in the tables built
from its kind's runs (``RunKind.tables``); NaN (an empty cell) is a value not measured or not published, an
infinite number is a diverged run.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from replicate import provenance
from replicate.errors import ReplicateError
from replicate.publish.catalogue import EXPERIMENTS, Scan, declared, listed
from replicate.validate import parse_text



def clean_tree(allow_dirty: bool) -> None:
    """Refuse to publish from a tree with uncommitted changes to tracked files, unless ``allow_dirty`` (the
    manifest then records the hash of the diff, provenance.diff_sha256)."""
    if provenance.git_state()["dirty"] and not allow_dirty:
        raise ReplicateError("the working tree has uncommitted changes: a bundle published from it names a commit "
                             "that does not reproduce it",
                             "commit the changes first, or pass --allow-dirty to publish anyway (MANIFEST.json then "
                             "records the sha256 of `git diff HEAD`)")


def _listing(groups: dict) -> str:
    return "; ".join(f"{label or 'none recorded'}: {listed(ids)}" for label, ids in groups.items())


def within(scan: Scan, where: str) -> list[str]:
    """Mixes inside one folder's results of one experiment."""
    problems = [f"{scan.experiment}: {where} holds {kind} runs of {len(groups)} code versions ({_listing(groups)})"
                for kind, groups in scan.versions().items() if len(groups) > 1]
    if len(scan.protocols) > 1:
        problems.append(f"{scan.experiment}: {where} holds results of {len(scan.protocols)} protocols "
                        f"({_listing(scan.protocols)})")
    return problems


def against(new: Scan, old: Scan, where: str) -> list[str]:
    """Differences between what ``where`` would publish and what the bundle holds for the experiment."""
    problems = []
    old_versions = old.versions()
    for kind, groups in new.versions().items():
        held = old_versions.get(kind, {})
        if held and set(held) != set(groups):
            problems.append(f"{new.experiment}: the bundle's {kind} runs have code version ({_listing(held)}), "
                            f"those in {where} ({_listing(groups)})")
    if old.protocols and new.protocols and set(old.protocols) != set(new.protocols):
        problems.append(f"{new.experiment}: the bundle's results have protocol ({_listing(old.protocols)}), "
                        f"those in {where} ({_listing(new.protocols)})")
    return problems


def wrong(scan: Scan, results: Path) -> dict[str, list[str]]:
    """What must never reach the bundle, by kind: a run whose numbers are not finite, a run whose settings are
    not the preset its protocol label names, a table with a non-finite number or a row of a skipped run."""
    from replicate.publish import presets

    return {"nonfinite": [f"{r.id} has non-finite numbers ({r.nonfinite})" for r in scan.skipped if r.nonfinite],
            "preset": [found for r in scan.runs
                       if (found := presets.mismatch(scan.experiment, r.kind, r.id, r.protocol, r.record or {}))],
            "tables": [f"{rel} holds non-finite numbers ({listed(cells)})" for rel in scan.other
                       if rel.endswith(".csv") and (cells := nonfinite_cells(results / rel))]
                      + rows_of_skipped(scan, results)}


def _csv(path: Path) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return None


def nonfinite_cells(path: Path) -> list[str]:
    """``column row N = inf`` for each infinite number of a CSV (row numbers 1-based, header not counted)."""
    frame = _csv(path)
    if frame is None:
        return []
    return [f"{col} row {i + 1} = {frame.at[i, col]}" for col in frame.select_dtypes("number").columns
            for i in frame.index[frame[col].map(lambda v: isinstance(v, float) and math.isinf(v))]]


def rows_of_skipped(scan: Scan, root: Path) -> list[str]:
    """``<table> has a row of <run> (<why skipped>)`` for each published table row built from a run ``scan`` skips:
    a row whose columns named by the run id's wildcards (``cell``, ``dataset``, ``tau``, ...) hold its values."""
    out = []
    for run in scan.skipped:
        kind = next(k for k in EXPERIMENTS[scan.experiment].kinds if k.name == run.kind)
        values = declared(scan.experiment, run.id.partition("/")[2]) or {}
        for rel in (r for r in scan.other if r.endswith(".csv") and kind.builds(r)):
            frame = _csv(root / rel)
            keys = {col: parse_text(v) for col, v in values.items() if frame is not None and col in frame.columns}
            if keys and any(all(row[c] == v for c, v in keys.items()) for _, row in frame.iterrows()):
                out.append(f"{rel} has a row of {run.id}, which is skipped ({run.missing})")
    return out


def _wrong_fixes(kinds: set[str], results: Path) -> list[str]:
    fixes = {"nonfinite": "a diverged run is never published: delete its folder and train it again with a lower "
                          "learning rate or clip value",
             "preset": "train those runs with the preset their protocol label names (snakemake <target> "
                       "--configfile config/<preset>.yaml), or label the settings they used as a protocol of "
                       "their own (protocol: <name> in the config they ran with); a setting of one Press & Wolf "
                       "run belongs in an @ ablation cell (small@lr=0.5)",
             "tables": f"build the table again once all its runs have finished (snakemake <table>), or move the "
                       f"table and the runs out of {results}"}
    return [fixes[k] for k in fixes if k in kinds]


def refuse(scans: dict[str, Scan], held: dict[str, Scan], results: Path, bundle: Path) -> None:
    """Raise, naming the runs and the fix, when ``scans`` (from ``results``) hold a non-finite number, a run whose
    settings are not its preset's or a table built from a skipped run (``wrong``), mix code versions or
    protocols, or differ from ``held`` (the bundle's scans of the same experiments; empty with --replace)."""
    bad: dict[str, list[str]] = {}
    for s in scans.values():
        for kind, found in wrong(s, results).items():
            bad.setdefault(kind, []).extend(found)
    problems = [p for s in scans.values() for p in within(s, str(results))]
    clashes = {n: found for n, s in scans.items() if n in held and (found := against(s, held[n], str(results)))}
    bad = {k: v for k, v in bad.items() if v}
    if not problems and not clashes and not bad:
        return
    fixes = _wrong_fixes(set(bad), results)
    if problems:
        fixes.append(f"rerun the runs named above under one code version and protocol (move the others out of "
                     f"{results}, or delete them and rerun their targets)")
    if clashes:
        fixes.append(f"to drop what {bundle} holds for {', '.join(clashes)} and publish {results} instead, "
                     f"add --replace")
        kinds = [f"{n}/{kind}" for n in clashes for kind, groups in scans[n].versions().items()
                 if (old := held[n].versions().get(kind)) and set(old) != set(groups)]
        if kinds:
            fixes.append(f"to replace only the bundle's runs of that kind, add --replace-runs {' '.join(kinds)}")
    problems = [p for found in bad.values() for p in found] + problems
    problems += [p for found in clashes.values() for p in found]
    what = "mixed results" if not bad else "these results"
    raise ReplicateError(f"refusing to publish {what}:\n  - " + "\n  - ".join(problems), "; ".join(fixes))
