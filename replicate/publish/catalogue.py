"""What each experiment publishes: its runs (one training job's output, published once finished, with the code
version and protocol it recorded) and its other files (tables, figures, aggregates, benchmark files) as they are.
Checkpoints, embeddings, corpora, logs and the report (rebuilt from the bundle) are never published."""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from replicate import paths
from replicate.finite import not_finite

PUBLISHED_SUFFIXES = (".csv", ".json", ".png", ".svg", ".tsv")
NEVER = ("data/", "logs/", "report/", "README.md", "MANIFEST.json")


def _seed_versions(record: dict) -> str | None:
    """A section 6.2 point: the code version its seeds share ("a, b" when they differ)."""
    versions = sorted({str(r.get("code_version")) for r in record.get("runs", [])})
    return ", ".join(versions) if versions else None


@dataclass(frozen=True)
class RunKind:
    """Runs of one kind: ``pattern`` matches every file of a run (group ``name``); ``marker`` (written last) holds
    the ``final`` numbers and the code version; ``keep``: the files to publish (``run``, ``marker``, ``keep``:
    templates of ``{name}``/``{run}``). ``restorable(record, files)``: the run's kept files are every output of its
    rule and of the jobs that read its weights (``--restore``);
    ``tables``: globs of the files built from these runs, which go with them (``--replace-runs``)."""
    name: str
    pattern: str
    run: str
    marker: str
    keep: tuple[str, ...]
    final: tuple[str, ...]
    version: Callable[[dict], str | None] = lambda record: record.get("code_version")
    restorable: Callable[[dict, list[str]], bool] = lambda record, files: True
    tables: tuple[str, ...] = ()

    def builds(self, rel: str) -> bool:
        """Whether ``rel`` is one of the files built from these runs."""
        return any(fnmatch.fnmatchcase(rel, t) for t in self.tables)


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    kinds: tuple[RunKind, ...]  # its other files: where paths.PREFIXES says (tables, figures, aggregates, benchmarks)


def _built(*stems: str) -> tuple[str, ...]:
    """Globs of files named by ``replicate.paths`` (a table with its sidecar, a figure stem with its suffixes)."""
    return tuple(f"{stem}*" for stem in stems)


_LSTM_KEEP = ("{run}/metrics.json", "{run}/history.csv")


def _lstm_runs(name: str, root: str, tables: tuple[str, ...], sub: str = r"[^/]+/[^/]+") -> RunKind:
    """Runs of the LSTM engine's ``train_run``: ``<root>/<sub>/{metrics.json, history.csv, checkpoint.pt}``."""
    return RunKind(name, rf"^{root}/(?P<name>{sub})/", f"{root}/{{name}}", "{run}/metrics.json", _LSTM_KEEP,
                   ("valid_ppl", "test_ppl"), tables=_built(*tables))


_SOFT = Path(paths.INAN_SCREEN_SOFT).name  # an Inan screen run's soft-target record (+AL / +REAL)

EXPERIMENTS = {e.name: e for e in (
    Experiment("press_wolf", "Press & Wolf 2017",
               (_lstm_runs("lstm", "press_wolf", tuple(paths.PW_TABLES.values()), r"[^/]+/seed\d+"),)),
    Experiment("inan", "Inan et al. 2017",
               (_lstm_runs("table1", "inan/table1", (paths.INAN_TABLE1,)),
                _lstm_runs("ablation", "inan/ablation", (paths.INAN_ABLATION,)),
                replace(_lstm_runs("screen", "inan/screen", (paths.INAN_SCREEN,)),  # +AL / +REAL: their soft-target
                        keep=(*_LSTM_KEEP, f"{{run}}/{_SOFT}"),  # job reads the weights
                        restorable=lambda record, files: (record["inan"]["variant"] not in ("al", "real")
                                                          or any(f.endswith(f"/{_SOFT}") for f in files))),
                RunKind("subspace",  # <point>.json + runs/<point>/seed<N>.json; <point> = [<reading>/]tau<t>_beta<b>
                        r"^inan/subspace/(?:runs/)?(?P<name>(?:[a-z0-9_]+/)?tau[^/]+?_beta[^/]+?)(?:\.json$|/)",
                        "inan/subspace/{name}", "{run}.json", ("{run}.json", "inan/subspace/runs/{name}/seed*.json"),
                        ("distance_mean",), _seed_versions,
                        tables=_built(paths.INAN_FIGURE1, paths.INAN_FIGURE1_RUNS, paths.INAN_FIGURE1_EPOCHS,
                                      paths.INAN_READINGS, paths.INAN_FIGURE1_FIGURE)))),
    Experiment("initial_loss", "Transformer initial loss",
               (RunKind("sweep", r"^initial_loss/runs/(?P<name>d\d+)\.csv", "initial_loss/runs/{name}",
                        "{run}.csv.provenance.json", ("{run}.csv", "{run}.csv.provenance.json"), ("seconds",),
                        tables=_built(paths.IL_SUMMARY, paths.IL_THEORY, paths.IL_TIDY)),
                RunKind("sweep", r"^initial_loss/(?P<name>memory_benchmark)\.json$", "initial_loss/{name}",
                        "{run}.json", ("{run}.json",), ("peak_rss_bytes",)))),
    Experiment("scale", "Scale study and embedding analysis",
               (RunKind("lstm", r"^scale/runs/(?P<name>[^/]+/[^/]+/seed\d+)/", "scale/runs/{name}",
                        "{run}/summary.json", ("{run}/summary.json", "{run}/metrics.json", "{run}/history.csv"),
                        ("final_valid_ppl", "test_ppl"),
                        restorable=lambda record, files: record.get("embedding_record") is False),  # no embeddings
                RunKind("transformer", r"^scale/transformer/(?P<name>[^/]+/seed\d+)/", "scale/transformer/{name}",
                        "{run}/summary.json", ("{run}/summary.json", "{run}/curve.csv"), ("final_valid_loss",),
                        tables=_built(paths.SCALE_TRANSFORMER, paths.SCALE_TRANSFORMER_COMPARISON,
                                      paths.SCALE_TRANSFORMER_CURVES, paths.SCALE_TRANSFORMER_FIGURE)))),
)}


@dataclass
class Run:
    id: str                      # e.g. press_wolf/small/seed1 (relative to the results root)
    kind: str
    files: list[str]             # the run's files to publish (empty when not finished)
    code_version: str | None = None
    protocol: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    missing: str | None = None   # why the run is not finished (None: finished)
    restorable: bool = False     # its files are every output of its rule (RunKind.restorable)
    nonfinite: str | None = None  # its non-finite numbers (a diverged run: publish refuses it)
    record: dict | None = field(default=None, repr=False, compare=False)  # its marker's contents


@dataclass
class Scan:
    """One experiment's publishable content in one results folder."""
    experiment: str
    runs: list[Run] = field(default_factory=list)       # finished
    skipped: list[Run] = field(default_factory=list)    # not finished
    other: list[str] = field(default_factory=list)      # tables, figures, aggregates, benchmark files
    protocols: dict[str, list[str]] = field(default_factory=dict)  # label -> runs / files recording it

    @property
    def files(self) -> list[str]:
        return sorted({f for r in self.runs for f in r.files} | set(self.other))

    def versions(self) -> dict[str, dict[str | None, list[str]]]:
        """kind -> code version -> ids of the runs that recorded it."""
        out: dict[str, dict[str | None, list[str]]] = {}
        for run in self.runs:
            out.setdefault(run.kind, {}).setdefault(run.code_version, []).append(run.id)
        return out

    def without(self, kinds: set[str]) -> Scan:
        """This scan less the runs of ``kinds``, their benchmark files and the files built from them."""
        built = [k for k in EXPERIMENTS[self.experiment].kinds if k.name in kinds]
        gone = {r.id for r in (*self.runs, *self.skipped) if r.kind in kinds}
        benchmarks = {benchmark_file(i) for i in gone}
        other = [f for f in self.other if f not in benchmarks and not any(k.builds(f) for k in built)]
        kept = {r.id for r in self.runs if r.id not in gone} | set(other)
        protocols = {label: ids for label, found in self.protocols.items() if (ids := [i for i in found if i in kept])}
        return Scan(self.experiment, [r for r in self.runs if r.id not in gone],
                    [r for r in self.skipped if r.id not in gone], other, protocols)

    def only(self, kinds: set[str]) -> Scan:
        """This scan limited to the runs of ``kinds`` and the files not built from other runs."""
        return self.without({k.name for k in EXPERIMENTS[self.experiment].kinds} - kinds)


def protocol_label(value: Any) -> str | None:
    """``reduced`` of ``reduced (15 epochs; seed 1)``; None for an empty value."""
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()
    return text.split()[0] if text else None


def read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def record_config(record: dict) -> dict:
    """The config slice a result recorded as its provenance ({} when it has none)."""
    prov = record.get("provenance") if isinstance(record.get("provenance"), dict) else {}
    return prov.get("config") if isinstance(prov.get("config"), dict) else {}


def _record_protocol(record: dict) -> str | None:
    return protocol_label(record_config(record).get("protocol", record.get("protocol")))


def _read_run(root: Path, kind: RunKind, name: str, present: list[str]) -> Run:
    run_id = kind.run.format(name=name)
    marker = kind.marker.format(run=run_id, name=name)
    record = read_json(root / marker)
    run = Run(run_id, kind.name, [])
    if record is None:
        run.missing = f"no readable {Path(marker).name}"
        return run
    run.record = record
    bad = [f"{k} = {v}" for k, v in record.items() if not_finite(v)]  # a number of its own (history not read)
    if bad:
        run.nonfinite = f"{marker}: {', '.join(bad)}"
    absent = [k for k in kind.final if type(record.get(k)) not in (int, float) or not math.isfinite(record[k])]
    if absent:
        run.missing = f"{Path(marker).name} has no final {', '.join(absent)}"
        return run
    git = (record.get("provenance") or {}).get("git") or {}
    keep = [k.format(run=run_id, name=name) for k in kind.keep]
    run.files = [f for f in present if any(fnmatch.fnmatchcase(f, k) for k in keep)]
    run.code_version, run.protocol = kind.version(record), _record_protocol(record)
    run.commit, run.dirty = git.get("commit"), git.get("dirty")
    run.restorable = kind.restorable(record, run.files)
    return run


def _file_protocols(path: Path) -> set[str]:
    """Protocol labels a table or JSON records (its ``protocol`` column / provenance config)."""
    if path.suffix == ".csv":
        try:
            frame = pd.read_csv(path, usecols=lambda c: c == "protocol", dtype=str)
        except (OSError, ValueError, pd.errors.ParserError):
            return set()
        return {p for p in map(protocol_label, frame.get("protocol", [])) if p}
    if path.suffix == ".json":
        record = read_json(path)
        label = _record_protocol(record) if record else None
        return {label} if label else set()
    return set()


def files_under(root: Path) -> list[str]:
    """Every file under ``root`` as a POSIX path relative to it (hidden temporary files left out)."""
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))


def declared(experiment: str, name: str) -> dict[str, str] | None:
    """The wildcards of ``name`` (a run id under the experiment's folder) when a declaration trains it, else None."""
    from replicate.experiments import kinds

    return next((m.groupdict() for k in kinds() if k.experiment == experiment and (m := k.regex().fullmatch(name))),
                None)


def benchmark_file(run_id: str) -> str:
    return f"{paths.BENCHMARKS}/{run_id}.tsv"


def owner(rel: str) -> str | None:
    """The experiment a results file belongs to (None: none, or never published)."""
    return None if rel.startswith(NEVER) else paths.owner(rel)


def scan(root: str | Path, experiment: str, files: list[str] | None = None) -> Scan:
    """What ``experiment`` has under ``root``: finished and unfinished runs, other publishable files."""
    root, exp = Path(root), EXPERIMENTS[experiment]
    files = files_under(root) if files is None else files
    out = Scan(experiment)
    claimed: dict[tuple[RunKind, str], list[str]] = {}
    loose = []
    for rel in files:
        match = next(((k, m) for k in exp.kinds if (m := re.match(k.pattern, rel))), None)
        if match:
            claimed.setdefault((match[0], match[1]["name"]), []).append(rel)
        elif owner(rel) == experiment:
            loose.append(rel)
    for (kind, name), present in claimed.items():
        run = _read_run(root, kind, name, present)
        (out.skipped if run.missing else out.runs).append(run)
        if run.protocol:
            out.protocols.setdefault(run.protocol, []).append(run.id)
    unfinished_benchmarks = {benchmark_file(r.id) for r in out.skipped}
    for rel in loose:
        if (rel.endswith(PUBLISHED_SUFFIXES) and "checkpoint" not in Path(rel).name
                and rel not in unfinished_benchmarks):
            out.other.append(rel)
            for label in _file_protocols(root / rel):
                out.protocols.setdefault(label, []).append(rel)
    out.runs.sort(key=lambda r: r.id)
    out.skipped.sort(key=lambda r: r.id)
    return out


def present(root: str | Path) -> list[str]:
    """The experiments with at least one file under ``root``."""
    found = {owner(rel) for rel in files_under(Path(root))}
    return [name for name in EXPERIMENTS if name in found]
