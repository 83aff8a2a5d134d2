"""Seed noise from the repeated runs (same cell id, two or more seeds), one pool per protocol (``press_wolf@epochs=2``
never lends to ``press_wolf``): docs/report.md, "The seed-noise allowance"."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from replicate.reportkit.labels import cell, column, value

METRICS = ("valid_ppl", "test_ppl", "train_ppl")
RUN_GLOBS = ("press_wolf/*/seed*/metrics.json", "inan/table1/*/*/metrics.json", "inan/table1/*/*/seed*/metrics.json")
PROTOCOL_NAMES = {"press_wolf": ("Press & Wolf cells at the paper's settings", "Press & Wolf cells with"),
                  "inan_table1": ("Inan et al. Table 1 rows at this protocol", "Inan et al. Table 1 rows with")}


@dataclass
class Pool:
    """The repeated runs at one protocol."""
    protocol: str
    groups: dict[str, dict[int, dict]] = field(default_factory=dict)   # cell -> seed -> metrics (and "_cost")

    @property
    def repeated(self) -> dict[str, dict[int, dict]]:
        return {c: s for c, s in self.groups.items() if len(s) >= 2}

    def cost(self) -> tuple[float, float, int]:
        """(wall s, CPU s, runs timed) of the repeated runs that have a benchmark file."""
        costs = [m["_cost"] for seeds in self.repeated.values() for m in seeds.values() if "_cost" in m]
        return sum(c[0] for c in costs), sum(c[1] for c in costs), len(costs)

    def runs(self) -> list[str]:
        return [f"{c}/seed{k}" for c, seeds in sorted(self.repeated.items()) for k in sorted(seeds)]

    def cells(self) -> str:
        """The repeated cells in words with their seeds: 'small: seeds 1, 2'."""
        return "; ".join(f"{cell(c) if '/' not in c else c.replace('/', ' ')}: seeds {', '.join(map(str, sorted(s)))}"
                         for c, s in sorted(self.repeated.items()))

    def dof(self, metric: str = "valid_ppl") -> int:
        return sum(len(self._values(s, metric)) - 1 for s in self.repeated.values() if len(self._values(s, metric)) > 1)

    @staticmethod
    def _values(seeds: dict[int, dict], metric: str) -> list[float]:
        return [float(m[metric]) for m in seeds.values() if m.get(metric) is not None]

    def rel_sd(self, metric: str = "valid_ppl") -> float | None:
        """Pooled relative seed standard deviation of ``metric`` (None without a repeat)."""
        num = 0.0
        for seeds in self.repeated.values():
            xs = self._values(seeds, metric)
            if len(xs) > 1:
                mean = sum(xs) / len(xs)
                num += sum((x / mean - 1) ** 2 for x in xs)
        dof = self.dof(metric)
        return math.sqrt(num / dof) if dof else None

    def label(self) -> str:
        base, _, over = self.protocol.partition("@")
        plain, varied = PROTOCOL_NAMES.get(base, (base, f"{base} with"))
        words = ", ".join(f"{column(k)} {value(v)}" for k, _, v in (o.partition("=") for o in over.split("@")))
        return f"{varied} {words}" if over else plain


def _benchmark(root: Path, run_dir: Path) -> tuple[float, float] | None:
    path = root / "benchmarks" / run_dir.relative_to(root).with_suffix(".tsv")
    if not path.is_file():
        return None
    frame = pd.read_csv(path, sep="\t")
    wall = pd.to_numeric(frame.get("s"), errors="coerce").mean()
    cpu = pd.to_numeric(frame.get("cpu_time"), errors="coerce").mean()
    return (float(wall), float(cpu)) if pd.notna(wall) else None


def scan(root: str | Path) -> dict[str, Pool]:
    """Every protocol's pool of runs under ``root`` (protocols without a repeat included, empty)."""
    root = Path(root)
    pools: dict[str, Pool] = {}
    paths = sorted({p for g in RUN_GLOBS for p in root.glob(g)})
    for path in paths:
        try:
            m = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        run_dir = path.parent
        seed_dir = re.fullmatch(r"seed(\d+)", run_dir.name)
        cell_dir = run_dir.parent if seed_dir else run_dir
        seed = int(seed_dir.group(1)) if seed_dir else (m.get("settings") or {}).get("seed", 1)
        experiment = "press_wolf" if path.relative_to(root).parts[0] == "press_wolf" else "inan_table1"
        cell = cell_dir.name if experiment == "press_wolf" else f"{cell_dir.parent.name}/{cell_dir.name}"
        _, at, over = cell.partition("@")
        protocol = f"{experiment}{at}{over}"  # press_wolf, or press_wolf@epochs=2
        pool = pools.setdefault(protocol, Pool(protocol))
        pool.groups.setdefault(cell, {})[int(seed)] = {k: m.get(k) for k in METRICS}
        cost = _benchmark(root, run_dir)
        if cost is not None:
            pool.groups[cell][int(seed)]["_cost"] = cost
    return pools


@dataclass
class Allowance:
    value: float | None     # None: no repeated run at the protocols tried
    note: str               # one line: where it comes from, or why there is none
    flag: str = ""          # shown at the number: "borrowed", "one pair"
    dof: int | None = None  # the pool's degrees of freedom


def t_factor(dof: int) -> float:
    """The two-sided 95 % t quantile with ``dof`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.975, dof))


def allowance(pools: dict[str, Pool], protocols: list[str], level: float, n_a: int, n_b: int,
              metric: str = "valid_ppl") -> Allowance:
    """The 95 % t half-width on a difference at ``level`` from the first protocol in ``protocols`` with a
    repeat (the first is the claim's own; any later one is named as borrowed, one pair as such)."""
    for i, key in enumerate(protocols):
        pool = pools.get(key)
        s = pool.rel_sd(metric) if pool else None
        if s is None:
            continue
        dof = pool.dof(metric)
        t = t_factor(dof)
        value = t * s * level * math.sqrt(1 / n_a + 1 / n_b)
        how = "" if i == 0 else f"borrowed: no repeated run at {Pool(protocols[0]).label()}; "
        flag = ", ".join(f for f in ("borrowed" if i else "", "one pair" if dof == 1 else "") if f)
        return Allowance(value, f"{how}seed sd {s:.2%} of {metric.split('_')[0]} ppl from {pool.label()} "
                                f"({len(pool.runs())} runs, {dof} dof, t = {t:.3g})", flag, dof)
    return Allowance(None, "no repeated run at " + " nor at ".join(Pool(p).label() for p in protocols))
