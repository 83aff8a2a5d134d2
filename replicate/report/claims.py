"""The claims under test, each a function of the result tables -> evidence + verdict.

Every check reads the canonical frames of ``replicate.report.sources.Results`` (one attribute per
result table, ``None`` when the pipeline did not produce it in this protocol) and returns a
``Verdict``: the claim's own check (``status``: ``holds`` / ``does not hold`` from our numbers, or
``not run in this protocol`` when a table or a row it needs is missing) and the ``effects`` it is about
(``replicate.report.effects``: the paper's size beside ours, with the seeds behind ours and a seed-noise
allowance from ``replicate.report.noise``). The one verdict the report shows, ``Verdict.verdict``, follows
from both by the fixed rule of effects.py. A level (a value to reach: section 6.2's distance at β = 1) is a
claim of its own, judged against the paper's value; a shape claim (falls, rapidly) is judged on its shape
alone, so that one miss is not counted twice.
The canonical frames each check reads: docs/report.md, "The claims' input".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import pandas as pd

from replicate.inan.shape import beta_shape, tau_effect
from replicate.report import effects as E
from replicate.report import labels
from replicate.report import noise
from replicate.report.format import NOT_RUN

HOLDS, FAILS, INCONCLUSIVE, STATUSES, VERDICTS = E.HOLDS, E.FAILS, E.INCONCLUSIVE, E.STATUSES, E.VERDICTS

DEFAULT_TOLERANCES = {
    # |measured - log(exp(d sigma) + n - 1)| / the closed form, tied zero-branch models (a fraction) ...
    "theory_rel": 0.05,
    # ... at widths d >= this (the closed form assumes ||w|| / sqrt(d) ~ sigma, loose at small d)
    "theory_min_width": 128,
    # |measured - log n| for tied + rescale, zero-branch models (nats)
    "rescale_nats": 0.1,
    # "slightly above log n": 0 < (loss - log n) / log n <= this, standard init (branches not zero)
    "above_log_n_rel": 0.1,
}
# which tolerance applies to an initial-loss point, by its reference (initial_loss_summary's reference_kind)
IL_TOLERANCE = {"theory": "theory_rel", "theory_rescaled": "rescale_nats", "log_n": "above_log_n_rel"}


def tolerance_nats(reference_kind: str, reference: float, tol: dict) -> float:
    """The tolerance of one initial-loss point in nats: a relative one times its reference value."""
    key = IL_TOLERANCE.get(reference_kind, "theory_rel")
    return tol[key] * reference if key.endswith("_rel") else tol[key]


@dataclass
class Verdict:
    status: str
    evidence: str
    effects: list = field(default_factory=list)   # effects.Effect, paper's beside ours
    scope: str = ""                               # what part of the claim's scope was run, when not all

    def __post_init__(self):
        assert self.status in STATUSES, self.status

    @property
    def verdict(self) -> str:
        """The one verdict the report shows (effects.judge over the check and the effects)."""
        return E.judge(self.status, self.effects)[0]

    @property
    def why(self) -> str:
        """Why the verdict is not a plain 'reproduced' or 'holds', and what part of the claim was run (may be
        empty)."""
        return "; ".join(p for p in (E.judge(self.status, self.effects)[1], self.scope) if p)


@dataclass
class Claim:
    id: str
    statement: str
    paper: str
    section: str
    check: Callable[..., Verdict]
    uses_tolerances: bool = field(default=False)

    def evaluate(self, results, tolerances: dict | None = None) -> Verdict:
        tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
        return self.check(results, tol) if self.uses_tolerances else self.check(results)


def not_run(why: str) -> Verdict:
    return Verdict(NOT_RUN, why)


def _verdict(ok: bool, evidence: str) -> Verdict:
    return Verdict(HOLDS if ok else FAILS, evidence)


def _rows(frame: pd.DataFrame | None, key: str, names: list[str], cols: list[str]) -> dict | None:
    """{name: {col: value}} for the rows whose ``key`` is each name, or None if any is missing/empty."""
    if frame is None or key not in frame.columns:
        return None
    out = {}
    for name in names:
        part = frame[frame[key] == name]
        if part.empty or any(c not in part.columns or part[c].isna().all() for c in cols):
            return None
        out[name] = {c: float(part[c].mean()) for c in cols}
    return out


def _f(x: float) -> str:
    return f"{x:.2f}"


# ------------------------------------------------------------------------------------ effects
# Seed noise of a claim's rows: the repeats at its own protocol (noise.Pool keys), then any named as borrowed.
PW_NOISE = ["press_wolf"]
# Inan Table 1 has no repeated run in the default preset: its single-seed rows borrow the seed noise of Press
# & Wolf's cells at their own settings (converged small PTB LSTMs on the same engine), and say so.
INAN_NOISE = ["inan_table1", "press_wolf"]
INAN_SIZES = ("small", "medium", "large")


def _row(frame: pd.DataFrame | None, key: str, name: str) -> pd.Series | None:
    if frame is None or key not in frame.columns:
        return None
    part = frame[frame[key] == name]
    return None if part.empty else part.iloc[0]


def _num(row: pd.Series | None, col: str) -> float | None:
    v = None if row is None else row.get(col)
    return float(v) if v is not None and pd.notna(v) else None


def _n(row: pd.Series | None) -> int:
    v = _num(row, "n_seeds")
    return int(v) if v else 1


def _diff(r, frame, before: str, after: str, what: str, keys: list[str], metric: str = "valid_ppl",
          sign: int = 1, key: str = "model") -> E.Effect | None:
    """before − after (× sign) in ``metric``, ours and the paper's, with the seed-noise allowance."""
    a, b = _row(frame, key, before), _row(frame, key, after)
    if _num(a, metric) is None or _num(b, metric) is None:
        return None
    ours = sign * (_num(a, metric) - _num(b, metric))
    pa, pb = _num(a, f"paper_{metric}"), _num(b, f"paper_{metric}")
    paper = sign * (pa - pb) if pa is not None and pb is not None else None
    level = (_num(a, metric) + _num(b, metric)) / 2
    al = noise.allowance(r.pools, keys, level, _n(a), _n(b), metric)
    return E.Effect(what, paper, ours, "ppl", (_n(a), _n(b)), al.value, al.note, flag=al.flag, dof=al.dof)


def _both(r, frame, before: str, after: str, what: str, keys: list[str], key: str = "model") -> list:
    """The valid and the test effect of before − after: a claim about both splits rests on both."""
    return [_diff(r, frame, before, after, f"{split} ppl, {what}", keys, f"{split}_ppl", key=key)
            for split in ("valid", "test")]


def _with(v: Verdict, *effects, scope: str = "") -> Verdict:
    v.effects = [e for e in effects if e is not None]
    v.scope = scope
    return v


def _scope(run: list[str], claimed: tuple[str, ...], what: str) -> str:
    """'ran small only of small, medium, large' when the claim covers more than was run."""
    if set(claimed) <= set(run):
        return ""
    return f"ran {', '.join(run) or 'none'} only of the claimed {what} {', '.join(claimed)}"


# ------------------------------------------------------------------------------- Press & Wolf
def _pairs_lower_eval(r, table: str, pairs, missing: str) -> Verdict:
    """Holds when, for every (before, after) pair of rows of ``r.<table>`` present, after has lower valid and
    test ppl."""
    frame = getattr(r, table)
    found = [(u, t, _rows(frame, "model", [u, t], ["valid_ppl", "test_ppl"])) for u, t in pairs]
    found = [(u, t, rows) for u, t, rows in found if rows is not None]
    if not found:
        return not_run(missing)
    parts, ok = [], True
    for u, t, rows in found:
        a, b = rows[u], rows[t]
        ok &= b["valid_ppl"] < a["valid_ppl"] and b["test_ppl"] < a["test_ppl"]
        parts.append(f"{labels.cell(u)} → {labels.cell(t)}: valid {_f(a['valid_ppl'])} → {_f(b['valid_ppl'])}, "
                     f"test {_f(a['test_ppl'])} → {_f(b['test_ppl'])}")
    return _with(_verdict(ok, "; ".join(parts)),
                 *[e for u, t, _ in found for e in _both(r, frame, u, t, f"{labels.cell(u)} − {labels.cell(t)}",
                                                         PW_NOISE)])


def pw_large_regulariser_signature(r) -> Verdict:
    rows = _rows(r.pw_table5, "model", ["large", "large_wt"], ["train_ppl", "valid_ppl"])
    if rows is None:
        return not_run("Table 5 rows large and large + WT not both present")
    a, b = rows["large"], rows["large_wt"]
    ok = b["train_ppl"] > a["train_ppl"] and b["valid_ppl"] < a["valid_ppl"]
    return _with(_verdict(ok, f"train {_f(a['train_ppl'])} → {_f(b['train_ppl'])}, "
                              f"valid {_f(a['valid_ppl'])} → {_f(b['valid_ppl'])} (large → large + WT)"),
                 _diff(r, r.pw_table5, "large", "large_wt", "train ppl, large + WT − large", PW_NOISE, "train_ppl", -1),
                 _diff(r, r.pw_table5, "large", "large_wt", "valid ppl, large − large + WT", PW_NOISE))


def _train_change(r, after: str, lower: bool) -> Verdict:
    """Table 6, small → ``after``: the running train ppl falls (``lower``) or rises, as the claim says."""
    rows, name = _rows(r.pw_table6, "model", ["small", after], ["train_ppl"]), labels.cell(after)
    if rows is None:
        return not_run(f"Table 6 rows small and {name} not both present")
    a, b = rows["small"]["train_ppl"], rows[after]["train_ppl"]
    return _with(_verdict(b < a if lower else b > a, f"train {_f(a)} → {_f(b)} (small → {name}, no dropout)"),
                 _diff(r, r.pw_table6, "small", after, f"train ppl, {'small − ' + name if lower else name + ' − small'}",
                       PW_NOISE, "train_ppl", 1 if lower else -1))


def pw_wt_pr_best_small(r) -> Verdict:
    names = ["small", "small_wt", "small_pr", "small_wt_pr"]
    rows = _rows(r.pw_table6, "model", names, ["valid_ppl", "test_ppl"])
    if rows is None:
        return not_run("not all four Table 6 rows present")
    best_v = min(names, key=lambda n: rows[n]["valid_ppl"])
    best_t = min(names, key=lambda n: rows[n]["test_ppl"])
    ok = best_v == best_t == "small_wt_pr"
    runner_up = min(names[:3], key=lambda n: rows[n]["valid_ppl"])
    return _with(_verdict(ok, f"lowest valid: {labels.cell(best_v)} ({_f(rows[best_v]['valid_ppl'])}); "
                              f"lowest test: {labels.cell(best_t)} ({_f(rows[best_t]['test_ppl'])})"),
                 *_both(r, r.pw_table6, runner_up, "small_wt_pr",
                        f"{labels.cell(runner_up)} (best other) − small + WT + PR", PW_NOISE))


# ---------------------------------------------------------------------------------------- Inan
def _inan_sizes(r, sizes: list[str], models: tuple[str, ...]) -> dict:
    """{size: {model: valid ppl, "<model> test": test ppl}} for the PTB sizes where every model has a row."""
    out = {}
    for size in sizes:
        rows = _rows(_inan_part(r, size), "model", list(models), ["valid_ppl", "test_ppl"])
        if rows is not None:
            out[size] = {k: v["valid_ppl"] for k, v in rows.items()} | {f"{k} test": v["test_ppl"] for k, v in rows.items()}
    return out


def _inan_part(r, size: str, dataset: str = "ptb") -> pd.DataFrame | None:
    t = r.inan_table1
    if t is None:
        return None
    t = t[t["dataset"] == dataset] if "dataset" in t.columns else t
    return t[t["size"] == size]


def _inan_diff(r, size: str, before: str, after: str, splits=("valid",)) -> list:
    return [_diff(r, _inan_part(r, size), before, after, f"{size} {split} ppl, {before} − {after}", INAN_NOISE,
                  f"{split}_ppl") for split in splits]


def _inan_beats_vd(r, variant: str) -> Verdict:
    got = _inan_sizes(r, ["small"], models=("VD-LSTM", variant))
    if not got:
        return not_run(f"Table 1 small rows VD-LSTM and {variant} (PTB) not present")
    v = got["small"]
    ok = v[variant] < v["VD-LSTM"] and v[f"{variant} test"] < v["VD-LSTM test"]
    return _with(_verdict(ok, f"small valid: VD-LSTM {_f(v['VD-LSTM'])} → {variant} {_f(v[variant])}; test "
                              f"{_f(v['VD-LSTM test'])} → {_f(v[f'{variant} test'])}"),
                 *_inan_diff(r, "small", "VD-LSTM", variant, ("valid", "test")))


def inan_al_beats_re_small(r) -> Verdict:
    got = _inan_sizes(r, ["small"], models=("+AL", "+RE"))
    if not got:
        return not_run("Table 1 small rows +AL and +RE (PTB) not present")
    v = got["small"]
    return _with(_verdict(v["+AL"] < v["+RE"], f"small valid: +AL {_f(v['+AL'])} vs +RE {_f(v['+RE'])}"),
                 *_inan_diff(r, "small", "+RE", "+AL"))


def inan_re_beats_al_larger(r) -> Verdict:
    got = _inan_sizes(r, ["medium", "large"], models=("+AL", "+RE"))
    if not got:
        return not_run("Table 1 medium/large rows +AL and +RE (PTB) not present")
    ok = all(v["+RE"] < v["+AL"] for v in got.values())
    ev = "; ".join(f"{s} valid: +RE {_f(v['+RE'])} vs +AL {_f(v['+AL'])}" for s, v in got.items())
    return _with(_verdict(ok, ev), *[e for s in got for e in _inan_diff(r, s, "+AL", "+RE")],
                 scope=_scope(list(got), ("medium", "large"), "sizes"))


# "best" allows a tie this close: the paper's own small +AL and +REAL rows tie at 86.3 valid
REAL_TIE_PPL = 1.0


def inan_real_best(r) -> Verdict:
    t = r.inan_table1
    if t is None:
        return not_run("Inan Table 1 not produced")
    t = t[t["dataset"] == "ptb"] if "dataset" in t.columns else t
    parts, ok, sizes, effects = [], True, [], []
    for size in dict.fromkeys(t["size"]):
        part = t[t["size"] == size].dropna(subset=["valid_ppl"])
        models = set(part["model"])
        if "+REAL" not in models or len(models) < 2:
            continue
        sizes.append(size)
        means = part.groupby("model")["valid_ppl"].mean()
        others = means.drop("+REAL")
        ok &= means["+REAL"] <= others.min() + REAL_TIE_PPL
        parts.append(f"{size}: +REAL {_f(means['+REAL'])} vs best other {others.idxmin()} {_f(others.min())} "
                     f"(tie allowed: {REAL_TIE_PPL:g} ppl)")
        effects += _inan_diff(r, size, others.idxmin(), "+REAL")
    if not sizes:
        return not_run("no size with +REAL and another row in Table 1 (PTB)")
    return _with(_verdict(ok, "; ".join(parts)), *effects,
                 scope=_scope(sizes, INAN_SIZES, "sizes"))


def _figure1_curve(r, panel: str, x: str) -> list[tuple[float, float]]:
    f = r.inan_figure1
    if f is None or "panel" not in f.columns:
        return []
    part = f[f["panel"] == panel].dropna(subset=["distance"])
    return list(part.groupby(x)["distance"].mean().items())


def _figure1_reading(r) -> tuple[str, str]:
    """(reading, metric) the Figure 1 table rests on; the metric as the table names it."""
    f = r.inan_figure1
    reading = ", ".join(dict.fromkeys(f["reading"].astype(str))) if "reading" in f.columns else "not recorded"
    metric = (", ".join(dict.fromkeys(f["metric"].dropna().astype(str))) if "metric" in f.columns
              else "principal-angle subspace distance (the table names no metric)")
    return reading, metric


def _readings_reproduce(r) -> str:
    """'k of n readings have the paper's shape', from the readings table ('' without one)."""
    readings = r.raw.get("inan_subspace_readings") if hasattr(r, "raw") else None
    if readings is None or readings.empty:
        return ""
    shaped = sum(reading_has_shape(row) for _, row in readings.iterrows())
    return f"{shaped} of {len(readings)} readings have the paper's shape"


def _figure1_basis(r) -> str:
    """Which reading and metric the Figure 1 claims rest on, and how many readings have the paper's shape."""
    reading, metric = _figure1_reading(r)
    reproduce = _readings_reproduce(r)
    return f"reading {reading}; metric: {metric}" + (f"; {reproduce} (rapid decrease in β, lower at larger τ)"
                                                     if reproduce else "")


def reading_has_shape(row: pd.Series) -> bool:
    """A readings-table row has Figure 1's shape: rapid in beta and lower at larger tau. The row's own flags
    (``rapid_in_beta``, ``lower_at_larger_tau``, written by replicate/inan/readings.py) when it has them;
    else computed from its beta columns (beta_shape) and its tau columns at beta = 1 (an older table)."""
    if {"rapid_in_beta", "lower_at_larger_tau"} <= set(row.index):
        return str(row["rapid_in_beta"]).lower() == "true" and str(row["lower_at_larger_tau"]).lower() == "true"
    betas = sorted((float(c[4:]), row[c]) for c in row.index
                   if c.startswith("beta") and c[4:].replace(".", "").isdigit() and pd.notna(row[c]))
    taus = sorted((float(c[3:].split("_")[0]), row[c]) for c in row.index
                  if c.startswith("tau") and c.endswith("_beta1") and pd.notna(row[c]))
    if len(betas) < 3 or len(taus) < 2:
        return False
    return bool(beta_shape(betas)["rapid"] and tau_effect(taus)["lower_at_larger_tau"])


def _figure1_level(r) -> E.Effect | None:
    """The distance at beta = 1 (panel a): ours beside the paper's approximate value, with the 95 % t interval
    of the mean from the point's own seeds (distance_std, n_seeds; n − 1 dof) where it has two or more."""
    f = r.inan_figure1
    a = f[(f["panel"] == "a") & (f["beta"] == f["beta"].max())] if f is not None and "panel" in f.columns else None
    if a is None or a.empty:
        return None
    paper = a["paper_distance_approx"].dropna() if "paper_distance_approx" in a.columns else pd.Series(dtype=float)
    seeds = int(a["n_seeds"].iloc[0]) if "n_seeds" in a.columns and pd.notna(a["n_seeds"].iloc[0]) else 1
    std = float(a["distance_std"].iloc[0]) if "distance_std" in a.columns else math.nan
    allow, how, dof = None, "one seed: the paper's value must lie within a factor of 2 of ours", None
    if seeds >= 2 and math.isfinite(std):
        dof = seeds - 1
        allow, how = (noise.t_factor(dof) * std / math.sqrt(seeds),
                      f"95 % t interval of the mean from the point's own {seeds} seeds ({dof} dof)")
    return E.Effect(f"subspace distance at β = {a['beta'].iloc[0]:g}",
                    float(paper.iloc[0]) if len(paper) else None,
                    float(a["distance"].mean()), "", (seeds,), allow, how, level=True, dof=dof)


def inan_distance_rapid_in_beta(r) -> Verdict:
    curve = _figure1_curve(r, "a", "beta")
    if len(curve) < 3:
        return not_run("Figure 1a needs at least three beta values")
    s = beta_shape(curve)
    v = _verdict(s["rapid"], f"fall {s['fall']:.3f} from the smallest to the largest β, "
                             f"{s['first_step_share']:.0%} of it in the first β step; {_figure1_basis(r)}")
    return _with(v, scope=_readings_reproduce(r))  # a shape: the level at β = 1 is its own claim


def _spread_allowance(f: pd.DataFrame, lo: pd.Series, hi: pd.Series) -> tuple[float | None, str]:
    """The 95 % t half-width of a difference of two points from their own seeds (distance_std, n_seeds;
    n_lo + n_hi − 2 dof)."""
    if not {"distance_std", "n_seeds"} <= set(f.columns) or min(lo["n_seeds"], hi["n_seeds"]) < 2:
        return None, "one seed per point"
    se2 = lo["distance_std"] ** 2 / lo["n_seeds"] + hi["distance_std"] ** 2 / hi["n_seeds"]
    t = noise.t_factor(int(lo["n_seeds"] + hi["n_seeds"] - 2))
    return t * math.sqrt(se2), f"95 % t interval of the difference from the points' own {int(lo['n_seeds'])} seeds"


def inan_distance_lower_at_larger_tau(r) -> Verdict:
    curve = _figure1_curve(r, "b", "tau")
    if len(curve) < 2:
        return not_run("Figure 1b needs at least two tau values")
    e = tau_effect(curve)
    (t0, d0), (t1, d1) = sorted(curve)[0], sorted(curve)[-1]
    v = _verdict(e["lower_at_larger_tau"], f"distance {d0:.3f} at τ = {t0:g} → {d1:.3f} at τ = {t1:g} "
                                           f"(β = 1); {_figure1_basis(r)}")
    f = r.inan_figure1
    b = f[f["panel"] == "b"].sort_values("tau")
    allow, how = _spread_allowance(f, b.iloc[0], b.iloc[-1])
    seeds = tuple(int(x) for x in b["n_seeds"].iloc[[0, -1]]) if "n_seeds" in b.columns else (1, 1)
    return _with(v, E.Effect(f"subspace distance at τ = {t0:g} − at τ = {t1:g}", None, d0 - d1, "",
                             seeds, allow, how, dof=sum(seeds) - 2 if allow is not None else None),
                 scope=_readings_reproduce(r))


def inan_distance_falls_with_beta(r) -> Verdict:
    curve = sorted(_figure1_curve(r, "a", "beta"))
    if len(curve) < 2:
        return not_run("Figure 1a needs at least two beta values")
    (lo, d_lo), (hi, d_hi) = curve[0], curve[-1]
    rho = pd.Series([b for b, _ in curve]).corr(pd.Series([d for _, d in curve]), method="spearman")
    v = _verdict(d_hi < d_lo and rho < 0, f"mean distance {d_lo:.3f} at β = {lo:g} → {d_hi:.3f} at β = {hi:g}; "
                 f"Spearman ρ(β, distance) = {rho:.2f} over {len(curve)} β values; {_figure1_basis(r)}")
    return _with(v, scope=_readings_reproduce(r))  # a shape: the level at β = 1 is its own claim


def inan_distance_level(r) -> Verdict:
    level = _figure1_level(r)
    if level is None or level.paper is None:
        return not_run("Figure 1a has no point at the largest β with the paper's value beside it")
    return _with(Verdict(HOLDS, f"distance {level.ours:.3f} at β = {r.inan_figure1['beta'].max():g} against the "
                                f"paper's about {level.paper:g}; {_figure1_basis(r)}"), level)


# ---------------------------------------------------------------------------- initial loss
def _il(r, **where) -> pd.DataFrame | None:
    s = r.initial_loss
    if s is None:
        return None
    if "token_dist" in s.columns and (s["token_dist"] == "uniform").any():
        s = s[s["token_dist"] == "uniform"]
    for k, v in where.items():
        if k not in s.columns:
            return None
        s = s[s[k] == v]
    if "mixer" in s.columns:
        s = s[s["mixer"].fillna("none") == "none"]
    return s if len(s) else None


def il_tied_follows_theory(r, tol) -> Verdict:
    s = _il(r, branches="zero", tied=True, rescale=False)
    if s is None:
        return not_run("no tied, zero-branch, unscaled points in the initial-loss sweep")
    s = s[s["d"] >= tol["theory_min_width"]]
    if s.empty:
        return not_run(f"no tied, zero-branch point at width d ≥ {tol['theory_min_width']} (the theory's regime)")
    rel = (s["loss_mean"] - s["reference_loss"]).abs() / s["reference_loss"]
    worst = s.loc[rel.idxmax()]
    ok = bool(rel.max() <= tol["theory_rel"])
    return _verdict(ok, f"largest miss {abs(worst['loss_mean'] - worst['reference_loss']):.3f} nats = {rel.max():.1%} "
                        f"of log(e^(dσ)+n−1) = {worst['reference_loss']:.2f} (d = {int(worst['d'])}, "
                        f"σ = {labels.value(str(worst['std']))}) over {len(s)} points with d ≥ {tol['theory_min_width']}; "
                        f"tolerance {tol['theory_rel']:.0%} of the closed form")


def il_rescale_gives_log_n(r, tol) -> Verdict:
    s = _il(r, branches="zero", tied=True, rescale=True)
    if s is None:
        return not_run("no tied + rescale, zero-branch points in the initial-loss sweep")
    diff = (s["loss_mean"] - np.log(s["n"].astype(float))).abs()
    ok = bool(diff.max() <= tol["rescale_nats"])
    return _verdict(ok, f"max |measured − log n| = {diff.max():.3f} nats over {len(s)} points "
                        f"(log n = {math.log(float(s['n'].iloc[0])):.2f}; tolerance {tol['rescale_nats']} nats)")


def il_standard_init_slightly_above_log_n(r, tol) -> Verdict:
    s = _il(r, branches="normal", rescale=False)
    if s is None or "std" not in s.columns:
        return not_run("no standard-init (non-zero branches) points in the initial-loss sweep")
    s = s[s["std"].astype(str) == "0.02"]
    if s.empty or set(s["tied"]) != {True, False}:
        return not_run("standard init (σ = 0.02) needs both tied and untied points")
    log_n = np.log(s["n"].astype(float))
    gap = (s["loss_mean"] - log_n) / log_n
    ok = bool((gap > 0).all() and (gap <= tol["above_log_n_rel"]).all())
    parts = [f"{'tied' if t else 'untied'}: log n + {g.min():.1%} to {g.max():.1%}" for t, g in gap.groupby(s["tied"])]
    return _verdict(ok, "; ".join(parts) + f" over {len(s)} points (σ = 0.02; 'slightly above' = above log n by "
                        f"at most {tol['above_log_n_rel']:.0%} of it)")


def scale_embedding_share_shrinks(r) -> Verdict:
    f = r.families
    if f is None or len(f) < 3:
        return not_run("model-family table not produced (needs at least 3 models)")
    rho = f["total_params"].astype(float).corr(f["embedding_share"].astype(float), method="spearman")
    small, big = f.loc[f["total_params"].idxmin()], f.loc[f["total_params"].idxmax()]
    return _verdict(rho < 0, f"Spearman ρ(total parameters, embedding share) = {rho:.2f} over {len(f)} models; "
                             f"{small['model']}: {small['embedding_share']:.1%}, "
                             f"{big['model']}: {big['embedding_share']:.1%}")


# ---------------------------------------------------------------------------------- scale study
def _study_claim(claim_id: str) -> Callable[..., Verdict]:
    """The scale study's own verdict on one claim (``scale_claims.csv``: the slope of the per-seed log ratios
    with its 95 % t interval, holds when the interval lies wholly on the claimed side of 0), so the report and
    the study give one verdict by one rule."""
    def check(r) -> Verdict:
        c = r.scale_claims
        row = c[c["claim_id"] == claim_id] if c is not None else None
        if row is None or row.empty:
            return not_run(f"claim {claim_id} not in the scale study's claims table (scale_claims.csv)")
        row = row.iloc[0]
        status = row["verdict"] if row["verdict"] in STATUSES else NOT_RUN
        if not all(math.isfinite(float(row[k])) for k in ("value", "ci_low", "ci_high")):
            return Verdict(status, str(row["evidence"]))
        # the slope signed so that the claim's direction is positive; its allowance the interval's half-width,
        # so effects.judge reads the interval as the study does
        from replicate.scale.study import CLAIMS as STUDY_CLAIMS

        want_negative = next(c[4] for c in STUDY_CLAIMS if claim_id.split("_drop")[0] == c[0])
        sign = -1.0 if want_negative else 1.0
        effect = E.Effect(f"slope of ln(untied / tied ppl) vs {'log10 tokens, negated' if sign < 0 else 'share'}",
                          None, sign * float(row["value"]), unit="", seeds=(int(row["n"]),),
                          allowance=(float(row["ci_high"]) - float(row["ci_low"])) / 2,
                          noise="95 % t interval of the slope over seed pairs (n − 2 dof)", dof=int(row["n"]) - 2)
        return Verdict(status, str(row["evidence"]), [effect])
    return check


def _similarity_allowance(e: pd.DataFrame) -> tuple[float | None, str, str, int | None]:
    """The 95 % t half-width of the mean (to output − to input) difference over seed pairs, with its note, flag
    and dof; the pairs share runs, so the dof is the tied model's independent seeds minus one, not the pairs'."""
    if not {"seed_a", "seed_b"} <= set(e.columns):
        return None, "seed pairs not recorded", "", None
    wide = e.pivot_table(index=["seed_a", "seed_b"], columns="comparison", values="spearman")
    diff = (wide["tied_vs_untied_output"] - wide["tied_vs_untied_input"]).dropna()
    seeds = diff.index.get_level_values("seed_a").nunique()
    if seeds < 2:
        return None, "one seed of the tied model", "", None
    t = noise.t_factor(seeds - 1)
    return (t * float(diff.std(ddof=1)) / math.sqrt(seeds),
            f"95 % t interval over {len(diff)} seed pairs of {seeds} tied runs ({seeds - 1} dof, t = {t:.3g})",
            "one pair" if seeds == 2 else "", seeds - 1)


# the small transformer: each variant at the lr its valid loss chose, compared on test (scale.study)
TF_VARIANTS = {"untied": "untied", "tied": "tied", "tied_rescale": "tied + rescale (σ 0.02)",
               "tied_rescale_unit": "tied + rescale (unit embedding)"}


def tf_tying_lowers_test_ppl(r) -> Verdict:
    """ln(untied / tied test ppl) of the small transformer, paired by seed, with the study's 95 % t interval
    (positive: tying lowers the test perplexity, the way the essay expects of a small model)."""
    c = r.raw.get("scale_transformer_comparison")
    row, base = _row(c, "variant", "tied"), _row(c, "variant", "untied")
    ours, lo, hi = (_num(row, k) for k in ("log_ratio_vs_untied", "log_ratio_lo", "log_ratio_hi"))
    if ours is None or base is None:
        return not_run("the transformer comparison has no tied row with its log ratio against untied")
    n = _n(row)
    known = lo is not None and hi is not None and n >= 2
    effect = E.Effect("ln(untied / tied test ppl)", None, ours, "", (n,), (hi - lo) / 2 if known else None,
                      f"95 % t interval over {n} seed pairs ({n - 1} dof)" if known else "one seed pair",
                      flag="one pair" if n == 2 else "", dof=n - 1 if known else None)
    return _with(_verdict(ours > 0, f"test ppl untied {_num(base, 'final_test_ppl'):.1f} (lr {_num(base, 'lr'):g}) "
                                    f"vs tied {_num(row, 'final_test_ppl'):.1f} (lr {_num(row, 'lr'):g}); "
                                    f"ln(untied / tied) = {ours:+.3f} (below 0: tied worse)"), effect)


def tf_no_added_loss_spikes(r) -> Verdict:
    """Each tied variant's runs at its own lr have no more loss spikes than untied's (a count: its own test)."""
    t = r.raw.get("scale_transformer")
    if t is None or not {"selected", "loss_spikes"} <= set(t.columns):
        return not_run("the transformer table has no selected runs with their loss spikes")
    sel = t[t["selected"].astype(str).str.lower() == "true"]
    spikes = {v: [int(x) for x in g["loss_spikes"]] for v, g in sel.groupby("variant", sort=False)}
    grads = {v: [int(x) for x in g["grad_spikes"]] for v, g in sel.groupby("variant")} if "grad_spikes" in sel else {}
    if "untied" not in spikes or len(spikes) < 2:
        return not_run("the transformer table has no untied and tied runs at their own lr")
    ok = all(sum(k) <= sum(spikes["untied"]) for v, k in spikes.items() if v != "untied")
    per = "; ".join(f"{TF_VARIANTS.get(v, v)} {', '.join(map(str, k))}"
                    + (f" (gradient-norm spikes {', '.join(map(str, grads[v]))})" if v in grads else "")
                    for v, k in spikes.items())
    return _verdict(ok, f"loss spikes per run at each variant's own lr: {per}")


def emb_tied_like_output(r) -> Verdict:
    e = r.embedding_similarity
    if e is None:
        return not_run("embedding-similarity analysis not produced")
    got = e.groupby("comparison")["spearman"].mean()
    need = ["tied_vs_untied_input", "tied_vs_untied_output"]
    if any(k not in got.index for k in need):
        return not_run("needs the tied-vs-untied-input and tied-vs-untied-output similarities")
    a, b = got["tied_vs_untied_input"], got["tied_vs_untied_output"]
    pairs = int((e["comparison"] == "tied_vs_untied_output").sum())
    allow, how, flag, dof = _similarity_allowance(e[e["comparison"].isin(need)])
    return _with(_verdict(b > a, f"similarity of the tied embedding to the untied output embedding {b:.3f} vs "
                                 f"to the untied input embedding {a:.3f} (mean over {pairs} seed pairs)"),
                 E.Effect("Spearman ρ, to untied output − to untied input", None, b - a, "", (pairs,), allow, how,
                          flag=flag, dof=dof))


CLAIMS: list[Claim] = [
    Claim("pw_small_tying", "Weight tying lowers valid and test perplexity (small model, no dropout).",
          "Press & Wolf 2017, Table 6", "press_wolf",
          partial(_pairs_lower_eval, table="pw_table6", pairs=[("small", "small_wt")],
                  missing="Table 6 rows small and small + WT not both present")),
    Claim("pw_large_tying", "Weight tying lowers valid and test perplexity (large models).",
          "Press & Wolf 2017, Table 5", "press_wolf",
          partial(_pairs_lower_eval, table="pw_table5", pairs=[("large", "large_wt"), ("large_bd_wd", "large_bd_wt")],
                  missing="no untied/tied pair of Table 5 (large) rows present")),
    Claim("pw_regulariser", "Regulariser signature: with dropout, tying raises train perplexity while "
          "lowering valid perplexity (large: train 37.8 → 48.5).",
          "Press & Wolf 2017, Table 5", "press_wolf", pw_large_regulariser_signature),
    Claim("pw_small_wt_train", "Without dropout, weight tying alone lowers train perplexity slightly "
          "(Table 6 read on its own).", "Press & Wolf 2017, Table 6", "press_wolf",
          partial(_train_change, after="small_wt", lower=True)),
    Claim("pw_small_pr_train", "Projection regularisation raises train perplexity (small, no dropout).",
          "Press & Wolf 2017, Table 6", "press_wolf",
          partial(_train_change, after="small_pr", lower=False)),
    Claim("pw_pr_helps", "Projection regularisation lowers valid and test perplexity without dropout.",
          "Press & Wolf 2017, Table 6", "press_wolf",
          partial(_pairs_lower_eval, table="pw_table6", pairs=[("small", "small_pr"), ("small_wt", "small_wt_pr")],
                  missing="no pair of Table 6 rows with and without PR present")),
    Claim("pw_wtpr_best", "WT+PR is the best of the four small models.",
          "Press & Wolf 2017, Table 6", "press_wolf", pw_wt_pr_best_small),
    Claim("inan_al_vd", "The augmented loss (AL) lowers valid and test perplexity below VD-LSTM (small).",
          "Inan et al. 2017, Table 1", "inan", partial(_inan_beats_vd, variant="+AL")),
    Claim("inan_re_vd", "Reused embeddings (RE) lower valid and test perplexity below VD-LSTM (small).",
          "Inan et al. 2017, Table 1", "inan", partial(_inan_beats_vd, variant="+RE")),
    Claim("inan_al_small", "At small size the augmented loss (AL) beats reused embeddings (RE).",
          "Inan et al. 2017, Table 1", "inan", inan_al_beats_re_small),
    Claim("inan_re_large", "At medium and large size RE beats AL.",
          "Inan et al. 2017, Table 1", "inan", inan_re_beats_al_larger),
    Claim("inan_real_best", "REAL (RE + AL) is the best model at every size (a tie within 1 ppl counts).",
          "Inan et al. 2017, Table 1", "inan", inan_real_best),
    Claim("inan_subspace", "The subspace distance between input and output embeddings falls as β → 1.",
          "Inan et al. 2017, Section 6.2, Figure 1a", "inan", inan_distance_falls_with_beta),
    Claim("inan_subspace_rapid", "The subspace distance decreases rapidly as β grows.",
          "Inan et al. 2017, Section 6.2, Figure 1a", "inan", inan_distance_rapid_in_beta),
    Claim("inan_subspace_level", "At β = 1 the subspace distance comes down to the paper's level (about 0.06).",
          "Inan et al. 2017, Section 6.2, Figure 1a", "inan", inan_distance_level),
    Claim("inan_subspace_tau", "At β = 1 the subspace distance is lower at larger τ.",
          "Inan et al. 2017, Section 6.2, Figure 1b", "inan", inan_distance_lower_at_larger_tau),
    Claim("il_theory", "With zero residual branches, the tied initial loss follows log(e^(dσ) + n − 1).",
          "Su 2023; the essay", "initial_loss", il_tied_follows_theory, uses_tolerances=True),
    Claim("il_rescale", "The d^−1/2 output rescale brings the tied initial loss to ≈ log n.",
          "T5 / Mesh-TensorFlow; Su 2023", "initial_loss", il_rescale_gives_log_n, uses_tolerances=True),
    Claim("il_standard", "With standard init (σ = 0.02 everywhere) tied and untied both start slightly "
          "above log n.", "the essay (Llama, 12 layers, n = 32k)", "initial_loss",
          il_standard_init_slightly_above_log_n, uses_tolerances=True),
    Claim("scale_share", "The embedding share of parameters shrinks as models grow.",
          "the essay; public model configs", "initial_loss", scale_embedding_share_shrinks),
    Claim("emb_tied_output", "The tied embedding evolves like the untied output embedding, not the input one.",
          "Press & Wolf 2017, Section 4", "scale", emb_tied_like_output),
    Claim("scale_tf_tied", "In the small transformer, tying lowers test perplexity against untied (each at "
          "its own learning rate).", "the essay; small-model regime", "scale", tf_tying_lowers_test_ppl),
    Claim("scale_tf_spikes", "In the small transformer, tying (with or without the output rescale) adds no "
          "loss spikes at each variant's own learning rate.", "the essay; the stability question", "scale",
          tf_no_added_loss_spikes),
    *(Claim(f"{cid}{level}", f"{text}{where}", "the essay", "scale", _study_claim(f"{cid}{level}"))
      for level, where in (("", ", without dropout."), ("_drop0.3", ", at Zaremba dropout 0.3."))
      for cid, text in (("scale_data_gain", "The tying gain shrinks as the training data grows"),
                        ("scale_model_share", "The tying gain shrinks as the embedding share of parameters falls "
                                              "(larger hidden size, same data)"))),
]


# The runs each claim rests on: a pattern over the result paths that carry provenance (sources.load_provenance).
RESTS_ON = {
    r"/press_wolf/small(_wt)?(_pr)?/seed": ("pw_small_tying", "pw_small_wt_train", "pw_small_pr_train", "pw_pr_helps",
                                            "pw_wtpr_best"),
    r"/press_wolf/large[^@/]*/seed": ("pw_large_tying", "pw_regulariser"),
    r"/inan/table1/": ("inan_al_vd", "inan_re_vd", "inan_al_small", "inan_re_large", "inan_real_best"),
    r"/inan/subspace/|/inan_figure1": ("inan_subspace", "inan_subspace_rapid", "inan_subspace_level",
                                        "inan_subspace_tau"),
    r"/initial_loss/": ("il_theory", "il_rescale", "il_standard"), r"/model_families": ("scale_share",),
    r"/scale/runs/|/embedding_similarity|/scale_claims": ("emb_tied_output", "scale_data_gain", "scale_model_share",
                                                         "scale_data_gain_drop0.3", "scale_model_share_drop0.3"),
    r"/scale/transformer/|/scale_transformer": ("scale_tf_tied", "scale_tf_spikes"),
}


def dirty_runs(results, claim_id: str) -> list[str]:
    """The runs (result paths) a claim rests on that were made from a tree with uncommitted changes."""
    pattern = re.compile("|".join(p for p, ids in RESTS_ON.items() if claim_id in ids) or "$^")
    return [p["path"] for p in results.provenance
            if pattern.search("/" + p["path"]) and (p["provenance"].get("git") or {}).get("dirty")]


def evaluate_all(results, tolerances: dict | None = None) -> list[tuple[Claim, Verdict]]:
    return [(c, c.evaluate(results, tolerances)) for c in CLAIMS]
