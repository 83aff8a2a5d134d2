"""Press & Wolf 2017's claims (Tables 5 and 6), checked against our tables."""

from __future__ import annotations

from functools import partial

from replicate.reportkit import labels
from replicate.reportkit.claims import Claim, Verdict, checked, f2, not_run, pair_effect, rows_of, split_effects
# Seed noise of a claim's rows: the repeats at its own protocol (noise.Pool keys).
PW_NOISE = ["press_wolf"]


def _pairs_lower_eval(r, table: str, pairs, missing: str) -> Verdict:
    """Holds when, for every (before, after) pair of rows of ``r.<table>`` present, after has lower valid and
    test ppl."""
    frame = r.frames.get(table)
    found = [(u, t, rows_of(frame, "model", [u, t], ["valid_ppl", "test_ppl"])) for u, t in pairs]
    found = [(u, t, rows) for u, t, rows in found if rows is not None]
    if not found:
        return not_run(missing)
    parts, ok = [], True
    for u, t, rows in found:
        a, b = rows[u], rows[t]
        ok &= b["valid_ppl"] < a["valid_ppl"] and b["test_ppl"] < a["test_ppl"]
        parts.append(f"{labels.cell(u)} → {labels.cell(t)}: valid {f2(a['valid_ppl'])} → {f2(b['valid_ppl'])}, "
                     f"test {f2(a['test_ppl'])} → {f2(b['test_ppl'])}")
    effects = [split_effects(r, frame, u, t, f"{labels.cell(u)} − {labels.cell(t)}", PW_NOISE) for u, t, _ in found]
    return checked(ok, "; ".join(parts), *[e for pair in effects for e in pair])


def pw_large_regulariser_signature(r) -> Verdict:
    t5 = r.frames.get("pw_table5")
    rows = rows_of(t5, "model", ["large", "large_wt"], ["train_ppl", "valid_ppl"])
    if rows is None:
        return not_run("Table 5 rows large and large + WT not both present")
    a, b = rows["large"], rows["large_wt"]
    ok = b["train_ppl"] > a["train_ppl"] and b["valid_ppl"] < a["valid_ppl"]
    return checked(ok, f"train {f2(a['train_ppl'])} → {f2(b['train_ppl'])}, "
                       f"valid {f2(a['valid_ppl'])} → {f2(b['valid_ppl'])} (large → large + WT)",
                   pair_effect(r, t5, "large", "large_wt", "train ppl, large + WT − large", PW_NOISE, "train_ppl", -1),
                   pair_effect(r, t5, "large", "large_wt", "valid ppl, large − large + WT", PW_NOISE))


def _train_change(r, after: str, lower: bool) -> Verdict:
    """Table 6, small → ``after``: the running train ppl falls (``lower``) or rises, as the claim says."""
    t6, name = r.frames.get("pw_table6"), labels.cell(after)
    rows = rows_of(t6, "model", ["small", after], ["train_ppl"])
    if rows is None:
        return not_run(f"Table 6 rows small and {name} not both present")
    a, b = rows["small"]["train_ppl"], rows[after]["train_ppl"]
    return checked(b < a if lower else b > a, f"train {f2(a)} → {f2(b)} (small → {name}, no dropout)",
                   pair_effect(r, t6, "small", after, f"train ppl, {'small − ' + name if lower else name + ' − small'}",
                               PW_NOISE, "train_ppl", 1 if lower else -1))


def pw_wt_pr_best_small(r) -> Verdict:
    names, t6 = ["small", "small_wt", "small_pr", "small_wt_pr"], r.frames.get("pw_table6")
    rows = rows_of(t6, "model", names, ["valid_ppl", "test_ppl"])
    if rows is None:
        return not_run("not all four Table 6 rows present")
    best_v = min(names, key=lambda n: rows[n]["valid_ppl"])
    best_t = min(names, key=lambda n: rows[n]["test_ppl"])
    ok = best_v == best_t == "small_wt_pr"
    runner_up = min(names[:3], key=lambda n: rows[n]["valid_ppl"])
    return checked(ok, f"lowest valid: {labels.cell(best_v)} ({f2(rows[best_v]['valid_ppl'])}); "
                       f"lowest test: {labels.cell(best_t)} ({f2(rows[best_t]['test_ppl'])})",
                   *split_effects(r, t6, runner_up, "small_wt_pr",
                                  f"{labels.cell(runner_up)} (best other) − small + WT + PR", PW_NOISE))


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
]

RESTS_ON = {  # the runs each claim rests on: a pattern over the result paths that carry provenance
    r"/press_wolf/small(_wt)?(_pr)?/seed": ("pw_small_tying", "pw_small_wt_train", "pw_small_pr_train", "pw_pr_helps",
                                            "pw_wtpr_best"),
    r"/press_wolf/large[^@/]*/seed": ("pw_large_tying", "pw_regulariser"),
}
