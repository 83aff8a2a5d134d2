"""Inan et al. 2017's claims (Table 1 and section 6.2), checked against our tables."""

from __future__ import annotations

import math
from functools import partial

import pandas as pd

from replicate.inan.shape import SHAPE_TOLERANCE, beta_shape, tau_effect
from replicate.reportkit import effects as E
from replicate.reportkit import noise
from replicate.reportkit.claims import HOLDS, Claim, Verdict, checked, f2, not_run, pair_effect, rows_of, scope_note
from replicate.reportkit.sections import distinct

# Inan Table 1 has no repeated run in the default preset: its single-seed rows borrow the seed noise of Press
# & Wolf's cells at their own settings (converged small PTB LSTMs on the same engine), and say so.
INAN_NOISE = ["inan_table1", "press_wolf"]
INAN_SIZES = ("small", "medium", "large")


def _inan_sizes(r, sizes: list[str], models: tuple[str, ...]) -> dict:
    """{size: {model: valid ppl, "<model> test": test ppl}} for the PTB sizes where every model has a row."""
    out = {}
    for size in sizes:
        rows = rows_of(_inan_part(r, size), "model", list(models), ["valid_ppl", "test_ppl"])
        if rows is not None:
            out[size] = {k: v["valid_ppl"] for k, v in rows.items()} | {f"{k} test": v["test_ppl"] for k, v in rows.items()}
    return out


def _inan_part(r, size: str) -> pd.DataFrame | None:
    t = r.frames.get("inan_table1")
    return None if t is None else t[(t["dataset"] == "ptb") & (t["size"] == size)]


def _inan_diff(r, size: str, before: str, after: str, splits=("valid",)) -> list:
    return [pair_effect(r, _inan_part(r, size), before, after, f"{size} {split} ppl, {before} − {after}", INAN_NOISE,
                  f"{split}_ppl") for split in splits]


def _inan_beats_vd(r, variant: str) -> Verdict:
    got = _inan_sizes(r, ["small"], models=("VD-LSTM", variant))
    if not got:
        return not_run(f"Table 1 small rows VD-LSTM and {variant} (PTB) not present")
    v = got["small"]
    ok = v[variant] < v["VD-LSTM"] and v[f"{variant} test"] < v["VD-LSTM test"]
    return checked(ok, f"small valid: VD-LSTM {f2(v['VD-LSTM'])} → {variant} {f2(v[variant])}; test "
                       f"{f2(v['VD-LSTM test'])} → {f2(v[f'{variant} test'])}",
                   *_inan_diff(r, "small", "VD-LSTM", variant, ("valid", "test")))


def inan_al_beats_re_small(r) -> Verdict:
    got = _inan_sizes(r, ["small"], models=("+AL", "+RE"))
    if not got:
        return not_run("Table 1 small rows +AL and +RE (PTB) not present")
    v = got["small"]
    return checked(v["+AL"] < v["+RE"], f"small valid: +AL {f2(v['+AL'])} vs +RE {f2(v['+RE'])}",
                   *_inan_diff(r, "small", "+RE", "+AL"))


def inan_re_beats_al_larger(r) -> Verdict:
    got = _inan_sizes(r, ["medium", "large"], models=("+AL", "+RE"))
    if not got:
        return not_run("Table 1 medium/large rows +AL and +RE (PTB) not present")
    ok = all(v["+RE"] < v["+AL"] for v in got.values())
    ev = "; ".join(f"{s} valid: +RE {f2(v['+RE'])} vs +AL {f2(v['+AL'])}" for s, v in got.items())
    return checked(ok, ev, *[e for s in got for e in _inan_diff(r, s, "+AL", "+RE")],
                   scope=scope_note(list(got), ("medium", "large"), "sizes"))


# "best" allows a tie this close: the paper's own small +AL and +REAL rows tie at 86.3 valid
REAL_TIE_PPL = 1.0


def inan_real_best(r) -> Verdict:
    t = r.frames.get("inan_table1")
    if t is None:
        return not_run("Inan Table 1 not produced")
    t = t[t["dataset"] == "ptb"]
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
        parts.append(f"{size}: +REAL {f2(means['+REAL'])} vs best other {others.idxmin()} {f2(others.min())} "
                     f"(tie allowed: {REAL_TIE_PPL:g} ppl)")
        effects += _inan_diff(r, size, others.idxmin(), "+REAL")
    if not sizes:
        return not_run("no size with +REAL and another row in Table 1 (PTB)")
    return checked(ok, "; ".join(parts), *effects, scope=scope_note(sizes, INAN_SIZES, "sizes"))


def _figure1_curve(r, panel: str, x: str) -> list[tuple[float, float]]:
    f = r.frames.get("inan_figure1")
    if f is None or "panel" not in f.columns:
        return []
    part = f[f["panel"] == panel].dropna(subset=["distance"])
    return list(part.groupby(x)["distance"].mean().items())


def _readings_with(r, has, what: str) -> str:
    """'k of n readings <what>': the readings-table rows for which ``has(row)`` holds ('' without a table)."""
    readings = r.raw.get("inan_subspace_readings")
    if readings is None or readings.empty:
        return ""
    return f"{sum(bool(has(row)) for _, row in readings.iterrows())} of {len(readings)} readings {what}"


def _flag(name: str):
    return lambda row: str(row.get(name)).lower() == "true"


def _figure1_basis(r) -> str:
    """Which reading and metric the Figure 1 claims rest on."""
    f = r.frames.get("inan_figure1")
    reading = ", ".join(distinct(f, "reading")) or "not recorded"
    metric = ", ".join(distinct(f, "metric")) or "principal-angle subspace distance (the table names no metric)"
    return f"reading {reading}; metric: {metric}"


def reading_has_shape(row: pd.Series) -> bool:
    """A readings-table row has Figure 1's shape: its flags (replicate/inan/report.py) say rapid in beta and
    lower at larger tau."""
    return _flag("rapid_in_beta")(row) and _flag("lower_at_larger_tau")(row)


def _figure1_level(r) -> E.Effect | None:
    """The distance at beta = 1 (panel a): ours beside the paper's approximate value, with the 95 % t interval
    of the mean from the point's own seeds (distance_std, n_seeds; n − 1 dof) where it has two or more."""
    f = r.frames.get("inan_figure1")
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
    return checked(s["rapid"], f"fall {s['fall']:.3f} from the smallest to the largest β, "
                               f"{s['first_step_share']:.0%} of it in the first β step; {_figure1_basis(r)}",
                   scope=_readings_with(r, _flag("rapid_in_beta"), "decrease rapidly in β"))  # a shape only


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
    f = r.frames.get("inan_figure1")
    b = f[f["panel"] == "b"].sort_values("tau")
    allow, how = _spread_allowance(f, b.iloc[0], b.iloc[-1])
    seeds = tuple(int(x) for x in b["n_seeds"].iloc[[0, -1]]) if "n_seeds" in b.columns else (1, 1)
    return checked(e["lower_at_larger_tau"], f"distance {d0:.3f} at τ = {t0:g} → {d1:.3f} at τ = {t1:g} "
                                             f"(β = 1); {_figure1_basis(r)}",
                   E.Effect(f"subspace distance at τ = {t0:g} − at τ = {t1:g}", None, d0 - d1, "", seeds, allow, how,
                            dof=sum(seeds) - 2 if allow is not None else None),
                   scope=_readings_with(r, _flag("lower_at_larger_tau"), "are lower at larger τ"))


def inan_distance_falls_with_beta(r) -> Verdict:
    curve = sorted(_figure1_curve(r, "a", "beta"))
    if len(curve) < 2:
        return not_run("Figure 1a needs at least two beta values")
    (lo, d_lo), (hi, d_hi) = curve[0], curve[-1]
    rho = pd.Series([b for b, _ in curve]).corr(pd.Series([d for _, d in curve]), method="spearman")
    falls = _readings_with(r, lambda row: float(row.get("fall_0_to_1", "nan")) > SHAPE_TOLERANCE, "fall as β → 1")
    return checked(d_hi < d_lo and rho < 0, f"mean distance {d_lo:.3f} at β = {lo:g} → {d_hi:.3f} at β = {hi:g}; "
                   f"Spearman ρ(β, distance) = {rho:.2f} over {len(curve)} β values; {_figure1_basis(r)}",
                   scope=falls)  # a shape: the level at β = 1 is its own claim


def inan_distance_level(r) -> Verdict:
    level = _figure1_level(r)
    if level is None or level.paper is None:
        return not_run("Figure 1a has no point at the largest β with the paper's value beside it")
    beta = r.frames["inan_figure1"]["beta"].max()
    return Verdict(HOLDS, f"distance {level.ours:.3f} at β = {beta:g} against the paper's about {level.paper:g}; "
                          f"{_figure1_basis(r)}", [level])


CLAIMS: list[Claim] = [
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
]

RESTS_ON = {  # the runs each claim rests on: a pattern over the result paths that carry provenance
    r"/inan/table1/": ("inan_al_vd", "inan_re_vd", "inan_al_small", "inan_re_large", "inan_real_best"),
    r"/inan/subspace/|/inan_figure1": ("inan_subspace", "inan_subspace_rapid", "inan_subspace_level",
                                        "inan_subspace_tau"),
}
