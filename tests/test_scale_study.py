"""The early-stopped scale study: intervals and regressions on cases with known answers, the
grid with its regularisation levels, the stopping settings, the default preset's cost, the config schema."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from replicate.errors import ReplicateError
from replicate.scale import study
from support.workflow import REPO_ROOT

T975_2 = 4.302652729911275  # two-sided 95 % t quantile, 2 dof (scipy.stats.t.ppf(0.975, 2))


# ----------------------------------------------------------------------------- interval and regression math
def test_t_interval_known_answer():
    ci = study.t_interval([1.0, 2.0, 3.0])
    assert ci["mean"] == 2.0 and ci["sd"] == pytest.approx(1.0) and ci["n"] == 3
    half = T975_2 / math.sqrt(3)
    assert ci["lo"] == pytest.approx(2 - half) and ci["hi"] == pytest.approx(2 + half)
    one = study.t_interval([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["lo"]) and math.isnan(one["hi"])


def test_slope_test_known_answer():
    # x 0..3, y 0 1 1 2: slope 3/5, residuals -.1 .3 -.3 .1, SSE 0.2, se = sqrt(0.2 / 2 / 5)
    t = study.slope_test([0, 1, 2, 3], [0, 1, 1, 2])
    assert t["slope"] == pytest.approx(0.6) and t["se"] == pytest.approx(math.sqrt(0.02))
    assert t["lo"] == pytest.approx(0.6 - T975_2 * math.sqrt(0.02))
    assert t["hi"] == pytest.approx(0.6 + T975_2 * math.sqrt(0.02))
    exact = study.slope_test([0, 1, 2], [1.0, 3.0, 5.0])
    assert exact["slope"] == pytest.approx(2.0) and exact["lo"] == pytest.approx(2.0)
    assert math.isnan(study.slope_test([1, 1], [1, 2])["slope"])
    assert math.isnan(study.slope_test([1, 2], [1, 2])["lo"])  # two points: no interval


def test_trend_verdict_reads_the_interval():
    assert study.trend_verdict(-0.3, -0.1, -0.2, want_negative=True) == "holds"
    assert study.trend_verdict(0.1, 0.3, 0.2, want_negative=True) == "does not hold"
    assert study.trend_verdict(-0.1, 0.3, 0.1, want_negative=True) == "inconclusive"
    assert study.trend_verdict(0.1, 0.3, 0.2, want_negative=False) == "holds"
    assert study.trend_verdict(math.nan, math.nan, 0.2, want_negative=False) == "inconclusive"
    assert study.trend_verdict(math.nan, math.nan, math.nan, want_negative=False) == "not run"


# ----------------------------------------------------------------------------- tables and claims
CFG = {"lstm": {"dropouts": [0.0, 0.3]},
       "data": {"hidden": 200, "pcts": [1, 3, 10], "wikitext2_pcts": [], "seeds": [1, 2, 3]},
       "model": {"pct": 1, "hiddens": [128, 200, 512], "seeds": [1, 2, 3]},
       "analysis": {"pct": 10, "hidden": 200, "variants": ["untied", "tied"], "seeds": [1, 2, 3], "pr_seeds": None}}
SHARE = {128: 0.9, 200: 0.86, 512: 0.7}


def summaries(log_ratio, noise=0.0):
    """Run summaries whose tied valid ppl is untied * exp(-log_ratio(dropout, pct, hidden)) (+ seed noise)."""
    rng = np.random.default_rng(0)
    rows = []
    for p in study.lstm_grid(CFG):
        rows.append({"run": str(p), "dataset": "ptb", "pct": p["pct"], "train_tokens": 9296 * p["pct"],
                     "hidden": p["hidden"], "variant": p["variant"], "dropout": p["dropout"], "seed": p["seed"],
                     "epochs": 5, "stop_reason": "patience", "best_epoch": 3, "vocab_size": 10000,
                     "total_params": 1, "non_embedding_params": 1, "embedding_share": SHARE[p["hidden"]],
                     "train_clean_ppl": 50.0, "best_valid_ppl": 200.0, "final_valid_ppl": 210.0})
    for r in rows:
        if r["variant"] == "tied":
            lr = log_ratio(float(r["dropout"]), r["pct"], r["hidden"]) + noise * rng.standard_normal()
            r["best_valid_ppl"] = 200.0 * math.exp(-lr)
    return study.runs_frame(rows, "reduced")


def test_gain_table_intervals_and_claims_per_dropout_level():
    # dropout 0: the gain falls with data and with the share; dropout 0.3: flat (pure noise)
    def log_ratio(drop, pct, hidden):
        if drop > 0:
            return 0.05
        return 0.2 - 0.1 * math.log10(pct) if hidden == 200 else 0.05 + 0.5 * (SHARE[hidden] - 0.7)

    by_seed = study.gain_by_seed(summaries(log_ratio, noise=0.01), CFG, "best_valid", "reduced")
    assert set(by_seed["dropout"]) == {"0", "0.3"}
    row = by_seed.iloc[0]
    assert row["log_ratio"] == pytest.approx(math.log(row["untied_valid_ppl"] / row["tied_valid_ppl"]))
    gain = study.gain_table(by_seed)
    assert (gain["n_seeds"] == 3).all() and (gain["log_ratio_lo"] < gain["log_ratio_mean"]).all()
    g = gain.iloc[0]
    assert g["tying_gain_pct"] == pytest.approx(100 * math.expm1(g["log_ratio_mean"]))
    assert g["runs_at_cap"] == 0 and "embedding_share_untied" in gain.columns
    claims = study.claims_table(by_seed, "reduced").set_index("claim_id")
    assert claims.loc["scale_data_gain", "verdict"] == "holds"
    assert claims.loc["scale_model_share", "verdict"] == "holds"
    assert claims.loc["scale_data_gain", "ci_high"] < 0 < claims.loc["scale_model_share", "ci_low"]
    assert claims.loc["scale_data_gain", "value"] == pytest.approx(-0.1, abs=0.02)  # per decade of tokens
    assert claims.loc["scale_data_gain_drop0.3", "verdict"] == "inconclusive"
    assert claims.loc["scale_data_gain_drop0.3", "ci_low"] < 0 < claims.loc["scale_data_gain_drop0.3", "ci_high"]


def test_fixed_run_lengths_that_fall_with_the_data_make_the_data_claim_inconclusive():
    """The previous design (equal updates, no early stopping): epochs fall as data grows, so even a clean
    slope cannot be read as a data effect; equal lengths (or early-stopped runs) keep the verdict."""
    runs = summaries(lambda d, pct, h: 0.2 - 0.1 * math.log10(pct))
    fixed = runs.assign(stop_reason=None, epochs=runs["pct"].map({1: 20, 3: 8, 10: 4}))
    claims = study.claims_table(study.gain_by_seed(fixed, CFG, "best_valid", "reduced"), "r").set_index("claim_id")
    assert claims.loc["scale_data_gain", "verdict"] == "inconclusive"
    assert "(20/8/4 epochs from the smallest to the largest data size)" in claims.loc["scale_data_gain", "evidence"]
    assert claims.loc["scale_data_gain", "ci_high"] < 0  # the slope itself is clean
    equal = study.gain_by_seed(fixed.assign(epochs=5), CFG, "best_valid", "reduced")
    assert study.claims_table(equal, "r").set_index("claim_id").loc["scale_data_gain", "verdict"] == "holds"


def test_claim_does_not_hold_when_the_gain_grows_with_data():
    by_seed = study.gain_by_seed(summaries(lambda d, pct, h: 0.05 * math.log10(pct) + 0.01, noise=0.005), CFG,
                                 "best_valid", "reduced")
    claims = study.claims_table(by_seed, "reduced").set_index("claim_id")
    assert claims.loc["scale_data_gain", "verdict"] == "does not hold"


# ----------------------------------------------------------------------------- grid and settings
def test_grid_has_every_regularisation_level_and_the_analysis_at_the_first():
    grid = study.lstm_grid(CFG)
    keys = [tuple(p[k] for k in study.GRID_KEYS) for p in grid]
    assert len(keys) == len(set(keys))
    # data 3 pcts + model 2 more hiddens (h200 @ 1 % shared), x 2 tyings x 3 seeds x 2 levels; analysis shared
    assert len(grid) == (3 + 2) * 2 * 3 * 2
    assert ("ptb", 1, 512, "tied", 2, "0.3") in keys
    assert all(p["dropout"] == "0" for p in study.analysis_points(CFG))
    assert study.run_dir("ptb", 3, 200, "tied", 2, 0.3) == "results/scale/runs/ptb/p3_h200_tied_drop0.3/seed2"


def test_overrides_carry_dropout_and_the_cap_and_stopping_settings_are_checked():
    lstm = {"size": "small", "overrides": {"max_epoch": 15, "schedule": "later"}, "patience": 2, "max_epochs": 15}
    assert study.lstm_overrides(lstm, 3, "0.3") == {"max_epoch": 15, "schedule": "later", "dropout": "zaremba",
                                                    "dropout_rate": 0.3, "epochs": 15}
    assert study.lstm_overrides(lstm, 3, "0")["dropout"] == "none"
    study.check_stopping(lstm)
    with pytest.raises(ReplicateError, match="equal_updates") as e:
        study.check_stopping({**lstm, "equal_updates": True})
    assert "equal_updates: false" in e.value.fix
    with pytest.raises(ReplicateError, match="max_epochs"):
        study.check_stopping({**lstm, "max_epochs": None})
    sc = {"lstm": lstm, "top_k": 10, "track_every": 1}
    spec = study.train_spec(sc, {"dataset": "ptb", "pct": "3", "hidden": "200", "variant": "tied", "seed": "1",
                                 "dropout": "0.3"}, {"protocol": "reduced"}, record=False)
    assert spec["patience"] == 2 and spec["dropout"] == "0.3" and spec["name"].endswith("_drop0.3/seed1")


def test_transformer_lr_selection_and_comparison():
    rows = []
    for variant, best in (("untied", 0.003), ("tied", 0.001)):
        for lr in (0.001, 0.003, 0.01):
            for seed in (1, 2):
                loss = 5.0 + abs(math.log10(lr / best)) + (0.0 if variant == "untied" else -0.1) + 0.01 * seed
                # test = valid + 0.2 for tied: the comparison must read test, the selection valid
                test = loss + (0.2 if variant == "tied" else 0.0)
                rows.append({"variant": variant, "std": "0.02", "lr": lr, "seed": seed, "final_valid_loss": loss,
                             "final_test_loss": test, "embedding_share": 0.5})
    table = study.select_lr(pd.DataFrame(rows))
    sel = table[table["selected"]]
    assert set(zip(sel["variant"], sel["lr"])) == {("untied", 0.003), ("tied", 0.001)}
    comp = study.transformer_comparison(table).set_index("variant")
    assert comp.loc["tied", "log_ratio_vs_untied"] == pytest.approx(0.1 - 0.2)  # on test
    assert comp.loc["untied", "final_valid_ppl"] == pytest.approx(math.exp(5.015))
    assert comp.loc["tied", "n_seeds"] == 2 and math.isnan(comp.loc["untied", "log_ratio_vs_untied"] or math.nan)
    # tied's best is the sweep's lowest lr (its own best may lie below); untied's is inside
    assert bool(comp.loc["tied", "lr_at_edge"]) and not bool(comp.loc["untied", "lr_at_edge"])
    assert comp.loc["tied", "lrs_swept"] == 3


def test_a_variant_sweeps_its_own_learning_rates():
    tf = {"variants": ["untied", "tied_rescale"], "stds": [0.02], "lrs": [0.001, 0.003], "seeds": [1, 2],
          "variant_lrs": {"tied_rescale": [0.003, 0.01, 0.03]}}
    runs = study.transformer_runs(tf)
    assert len(runs) == (2 + 3) * 2
    assert {r["lr"] for r in runs if r["variant"] == "tied_rescale"} == {"0.003", "0.01", "0.03"}
    assert {r["lr"] for r in runs if r["variant"] == "untied"} == {"0.001", "0.003"}
    assert runs[0] == {"variant": "untied", "std": "0.02", "lr": "0.001", "seed": "1"}


# ----------------------------------------------------------------------------- presets: cost and schema
def preset(name: str) -> dict:
    """A preset's scale section as the Snakefile sees it: merged over config/config.yaml, defaults filled."""
    from snakemake.utils import update_config, validate

    with open(REPO_ROOT / "config" / "config.yaml") as fh:
        cfg = yaml.safe_load(fh)
    if name != "config.yaml":
        with open(REPO_ROOT / "config" / name) as fh:
            update_config(cfg, yaml.safe_load(fh))
    validate(cfg["scale"], str(REPO_ROOT / "workflow/schemas/scale.schema.yaml"))
    return cfg["scale"]


def one_thread_hours(name: str) -> tuple[float, int]:
    """The one-thread hours of a preset's scale runs (as `python -m replicate costs` adds up their jobs'
    one_thread_min: every LSTM run at its epoch cap), and how many transformer runs it has."""
    from replicate import experiments
    from replicate.scale import runs

    declared = runs.runs(experiments.load_config([str(REPO_ROOT / "config" / name)]))
    return (sum(run.resources()["one_thread_min"] for run in declared.values()) / 60,
            sum(run_id.startswith("transformer/") for run_id in declared))


def test_default_preset_costs_at_most_12_one_thread_hours():
    sc = preset("config.yaml")
    hours, transformer_runs = one_thread_hours("config.yaml")
    assert 1.0 < hours <= 12.0, hours
    assert transformer_runs == (3 * 3 + 4) * 2  # 3 variants x 3 lrs + the unit embedding's 4, 2 seeds
    assert len(sc["data"]["seeds"]) >= 3 and len(sc["model"]["seeds"]) >= 3 and len(sc["lstm"]["dropouts"]) == 2
    shares = [study_share(h) for h in sc["model"]["hiddens"]]
    assert max(shares) > 0.88 and min(shares) < 0.6  # the model axis moves the share from ~90 % towards 50 %


def study_share(hidden: int, vocab: int = 10_000) -> float:
    from replicate.resources import lstm_parameters

    total = lstm_parameters(vocab, hidden, 2, "untied", False)
    return 2 * vocab * hidden / total


def test_paper_preset_is_larger():
    assert one_thread_hours("paper.yaml")[0] > 12.0


@pytest.mark.parametrize("path, value, words", [
    (("lstm", "patience"), 0, ["patience=0", "minimum of 1"]),
    (("lstm", "dropouts"), [0.0, 1.0], ["scale.lstm.dropouts.1=1.0"]),
    (("lstm", "dropouts"), [], ["dropouts"]),
    (("lstm", "overrides", "dropout_rate"), 0.5, ["scale.lstm.overrides.dropout_rate is not allowed here"]),
    (("transformer", "lrs"), [0.003, 2.0], ["2.0", "maximum of 1"]),
    (("transformer", "variants"), ["tied_rescale_t5"], ["tied_rescale_t5", "tied_rescale_unit"]),
    (("transformer", "variant_lrs"), {"tied_rescale_t5": [0.01]}, ["tied_rescale_t5"]),
    (("transformer", "variant_lrs"), {"tied": [0.01, 3.0]}, ["3.0", "maximum of 1"]),
])
def test_bad_stopping_and_sweep_settings_are_refused_with_the_fix(path, value, words):
    from replicate.validate import Schemas, SettingError

    sc = copy.deepcopy(preset("config.yaml"))
    node = sc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(SettingError) as e:
        Schemas(REPO_ROOT / "workflow/schemas").check_config(sc, "scale.schema.yaml", "scale")
    text = f"{e.value} {e.value.fix}"
    for w in words:
        assert w in text, text
    assert e.value.fix


# ----------------------------------------------------------------------------- dry runs of the presets
SCALE_TARGETS = ("tables/scale_claims.csv", "tables/scale_embedding_similarity.csv", "tables/scale_transformer.csv")


@pytest.mark.slow
@pytest.mark.parametrize("name, results, lstm_jobs, recorded, tf_jobs", [
    ("config.yaml", "results", 72, 6, 26),      # (3 pcts + 3 more hiddens) x 2 tyings x 3 seeds x 2 dropout levels
    ("paper.yaml", "results", 206, 12, 39),     # (5 + 1 WT2 + 4 more hiddens) x 2 x 5 x 2 + the PR analysis, 2 x 3
    ("smoke.yaml", "results_smoke", 18, 4, 4),  # (2 + 1 WT2 + 1 more hidden) x 2 x 1 seed x 2 + the PR analysis, 2
])
def test_presets_plan_the_scale_dag(workflow_dir, name, results, lstm_jobs, recorded, tf_jobs):
    """Every grid run is planned once; exactly the analysis runs (``recorded``) by the rule that records embeddings."""
    from support.workflow import job_counts, run_snakemake

    wf = workflow_dir
    config = [] if name == "config.yaml" else ["--configfile", f"config/{name}"]
    out = run_snakemake(["-n", "--cores", "2", *[f"{results}/{t}" for t in SCALE_TARGETS], *config], cwd=wf).stdout
    jobs = job_counts(out)
    assert jobs["scale_train_recorded"] == recorded and jobs["scale_train"] == lstm_jobs - recorded, jobs
    assert jobs["scale_transformer"] == tf_jobs, jobs
    assert jobs["scale_table"] == jobs["scale_embeddings"] == jobs["scale_transformer_summary"] == 1
