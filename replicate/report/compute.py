"""The report's Compute (Snakemake benchmark files) and Provenance (every result's provenance block)
sections: one visible line of totals each, the per-job and per-run detail collapsed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from replicate import paths
from replicate.reportkit import blocks as B
from replicate.reportkit.labels import NO_VALUE, fmt_hours, listed
from replicate.reportkit.sections import flatten
from replicate.reportkit.sources import run_label

NOT_RECORDED = "not recorded"


def _device_of(p: dict) -> str:
    dev = p.get("device") or {}
    name = dev.get("device") or NOT_RECORDED
    if dev.get("gpu"):
        return f"{name} ({dev['gpu']})"
    bits = [f"{dev[key]} {what}" for key, what in (("torch_threads", "torch threads"), ("cpu_count", "CPUs"))
            if dev.get(key)]
    if bits and (str(name).startswith("cpu") or name == NOT_RECORDED):
        return f"{name} ({', '.join(bits)})"
    return name


def _recorded(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the columns that say 'not recorded' (or nothing) on every row."""
    keep = [c for c in frame.columns if not frame[c].isin([NOT_RECORDED, NO_VALUE, None, ""]).all()]
    return frame[keep]


def totals_line(b: pd.DataFrame) -> str:
    per = b.groupby("experiment")[["wall_s", "cpu_s"]].sum()
    split = "; ".join(f"{exp} {fmt_hours(row['wall_s'])}" for exp, row in per.iterrows())
    return (f"**Totals**: {len(b)} jobs, {fmt_hours(b['wall_s'].sum())} of wall time and "
            f"{b['cpu_s'].sum() / 3600:.1f} CPU hours (wall time per experiment: {split}).")


def section_compute(ctx) -> str:
    res = ctx.results
    out = []
    b = res.benchmarks
    if b is None:
        out.append(B.notice("Benchmark files (results/benchmarks/): not run in this protocol."))
    else:
        folder = res.root / "benchmarks"
        table = B.table(_recorded(b), {"experiment": "experiment", "job": "job", "wall_s": "wall (s)",
                                       "cpu_s": "CPU (s)", "mean_load": "mean load (%)",
                                       "max_rss_mib": "peak RSS (MiB)"},
                        keep=("job", "wall_s", "cpu_s", "max_rss_mib"),
                        caption="Wall time, CPU time, mean CPU load (%) and peak resident memory per job (the "
                                "device of each run: Provenance).",
                        source=B.link(f"{res.root.name}/benchmarks/", folder, ctx.md_path.parent))
        out += [totals_line(b), B.details_md(f"Per job ({len(b)} Snakemake benchmark files)", table)]
    out.append("### Throughput and memory benchmarks")
    if res.speed is None:
        out.append(B.notice("Training-speed benchmark (target press_wolf_speed, on an idle machine): not run in "
                            "this protocol."))
    else:
        out.append(B.table(res.speed, {"cell": "cell", "clock": "clock", "threads": "threads",
                                       "load_1min_start": "load at start", "load_1min_end": "load at end",
                                       "idle": "idle", "plain": "plain loop", "ours_tok_s": "ours (tok/s)",
                                       "plain_tok_s": "plain loop (tok/s)", "ratio": "ours / plain",
                                       "mfu_ours": "ours, share of matmul peak",
                                       "projected_row_hours": "default-preset row (h, projected)"},
                           keep=("cell", "clock", "ratio"), share=("mfu_ours", "ratio"), digits={"load_1min_start": 1,
                                                                                          "load_1min_end": 1},
                           caption="Training tokens/s of this engine and of a plain loop in the same run (medians of "
                                   "the repeats; per wall-clock second and per CPU second): the stock nn.LSTM loop, "
                                   "or, where nn.LSTM cannot express the masks, the engine on its reference kernels. "
                                   "The projection is the whole default-preset row on PTB at the measured training and "
                                   "evaluation rates. A ratio measured while the machine was not idle is not "
                                   "comparable with idle figures.",
                           source=ctx.source("press_wolf_speed")))
    for item in res.throughput:
        rows = [{"key": k, "value": v} for k, v in flatten(item["data"]).items() if not k.startswith("provenance")]
        out.append(B.details_md(f"Benchmark record {item['path']}",
                                B.table(pd.DataFrame(rows), keep=("key", "value"), digits={"value": 3},
                                        source=B.link(item["path"], res.root.parent / item["path"],
                                                      ctx.md_path.parent))))
    return B.join(out)


def _runs(res) -> pd.DataFrame:
    rows = []
    for item in res.provenance:
        p = item["provenance"]
        cfg, git, pk = (p.get(k) or {} for k in ("config", "git", "packages"))
        rows.append({"experiment": _experiment(res, item["path"]), "run": run_label(item["path"]),
                     "protocol": cfg.get("protocol", NOT_RECORDED) if isinstance(cfg, dict) else NOT_RECORDED,
                     "commit": (git.get("commit") or NOT_RECORDED)[:10],
                     "dirty": {True: "**yes: uncommitted changes**", False: "no"}.get(git.get("dirty"), NOT_RECORDED),
                     "device": _device_of(p), "torch": pk.get("torch") or NO_VALUE,
                     "python": pk.get("python") or NO_VALUE, "started": p.get("started", NO_VALUE),
                     "finished": p.get("finished", NO_VALUE)})
    return pd.DataFrame(rows)


def _experiment(res, path: str) -> str:
    """The experiment a result file belongs to (``paths.owner``), else its first folder."""
    rel = Path(res.root.parent / path).relative_to(res.root).as_posix() if not Path(path).is_absolute() else path
    return paths.owner(rel) or rel.split("/", 1)[0]


def per_experiment(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per experiment: runs, the commits they come from, the uncommitted ones."""
    rows = []
    for exp, part in runs.groupby("experiment", sort=False):
        commits = sorted(c for c in part["commit"].unique() if c != NOT_RECORDED)
        dirty = part[part["dirty"].str.startswith("**yes")]["run"].tolist()
        rows.append({"experiment": exp, "runs": len(part),
                     "commits": (f"{len(commits)} commits: " if len(commits) > 1 else "") + listed(commits)
                     or NOT_RECORDED,
                     "uncommitted tree": ("all" if len(dirty) == len(part) else listed(dirty)) if dirty else "none"})
    return pd.DataFrame(rows)


def section_provenance(ctx) -> str:
    res = ctx.results
    if not res.provenance:
        return B.notice("Provenance records: not run in this protocol.")
    runs = _runs(res)
    dirty = int(runs["dirty"].str.startswith("**yes").sum())
    line = (f"**Totals**: {len(runs)} runs from {runs['commit'].nunique()} commits; {dirty} from an uncommitted "
            f"tree{' (flagged below)' if dirty else ''}; torch {', '.join(sorted(runs['torch'].unique()))}, "
            f"Python {', '.join(sorted(runs['python'].unique()))}.")
    summary = B.table(per_experiment(runs), keep=("experiment", "runs"),
                      caption="Per experiment: the commits its runs come from and the runs made from a tree with "
                              "uncommitted changes.")
    versions: dict[str, set] = {}
    for item in res.provenance:
        for name, v in (item["provenance"].get("packages") or {}).items():
            versions.setdefault(name, set()).add(str(v))
    per_run = B.table(_recorded(runs.drop(columns=["experiment"])), keep=("run",), markdown=("dirty",), drop=(),
                      caption="Every run whose result is shown: commit, device, package versions and time, from its "
                              "provenance block.")
    packages = B.table(pd.DataFrame([{"package": k, "versions": ", ".join(sorted(v))}
                                     for k, v in sorted(versions.items())]), keep=("package", "versions"))
    configs = [B.details(f"{run_label(item['path'])} ({item['path']})",
                         json.dumps(item["provenance"].get("config"), indent=1, sort_keys=True, default=str))
               for item in res.provenance]
    return B.join([line, summary, B.details_md(f"Every run ({len(runs)})", per_run),
                   B.details_md(f"Package versions ({len(versions)})", packages),
                   B.details_md(f"Configuration of every run ({len(configs)})", B.join(configs))])
