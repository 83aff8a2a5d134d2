"""End to end: the smoke DAG's Inan outputs (session fixture ``smoke_run``)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from support.workflow import SMOKE_RESULTS

pytestmark = pytest.mark.slow


def test_inan_table1_smoke(smoke_run):
    df = pd.read_csv(smoke_run / SMOKE_RESULTS / "tables" / "inan_table1.csv")
    assert list(df["model"]) == ["VD-LSTM", "+AL", "+RE", "+REAL"]
    assert (df["dataset"] == "ptb").all() and (df["size"] == "small").all()
    assert df["valid_ppl"].gt(1).all() and df["test_ppl"].gt(1).all()
    assert df["paper_valid_ppl"].tolist() == [92.6, 86.3, 89.9, 86.3]  # from paper/reference, not code
    assert df["valid_diff"].round(6).tolist() == (df["valid_ppl"] - df["paper_valid_ppl"]).round(6).tolist()
    assert df["protocol"].str.startswith("smoke").all()
    assert df.loc[df.model.isin(["+AL", "+REAL"]), "tau"].notna().all()
    assert df.loc[df.model.isin(["VD-LSTM", "+RE"]), "tau"].isna().all()
    # each +AL / +REAL run's y~ at the end of training, written by the run itself (a restore keeps it)
    soft = df.set_index("model")[["soft_entropy_ratio", "soft_target_mass"]]
    assert soft.loc[["+AL", "+REAL"]].notna().all(axis=None) and soft.loc[["VD-LSTM", "+RE"]].isna().all(axis=None)
    assert soft.loc[["+AL", "+REAL"], "soft_entropy_ratio"].between(0, 1).all()
    # RE has fewer parameters (one shared matrix, no output bias)
    params = dict(zip(df["model"], df["params"]))
    assert params["+RE"] < params["VD-LSTM"] and params["+RE"] == params["+REAL"]
    assert (smoke_run / SMOKE_RESULTS / "tables" / "inan_table1.csv.provenance.json").is_file()
    # the cost column: training + per-epoch validation seconds of the run's history, in hours
    vd = json.loads((smoke_run / SMOKE_RESULTS / "inan" / "table1" / "ptb" / "small_vd" / "metrics.json").read_text())
    assert df.loc[df.model == "VD-LSTM", "hours"].iloc[0] == pytest.approx(
        sum(r["seconds"] + r["eval_seconds"] for r in vd["history"]) / 3600)


def test_inan_ablation_smoke(smoke_run):
    df = pd.read_csv(smoke_run / SMOKE_RESULTS / "tables" / "inan_ablation.csv")
    assert len(df) == 2 and set(df["gamma"]) == {0.5, 0.8} and set(df["tau"]) == {5.0}
    assert (df["alpha"] == df["gamma"] * df["tau"]).all()
    for _, row in df.iterrows():  # each row is its run's metrics
        run = f"small_real_tau{row['tau']:g}_gamma{row['gamma']:g}"
        metrics = json.loads((smoke_run / SMOKE_RESULTS / "inan/ablation/ptb" / run / "metrics.json").read_text())
        assert (row["valid_ppl"], row["test_ppl"]) == pytest.approx((metrics["valid_ppl"], metrics["test_ppl"]), rel=1e-12)
    assert list(df["best_valid"]) == list(df["valid_ppl"] == df["valid_ppl"].min()) and df["best_valid"].sum() == 1


def test_inan_screen_smoke(smoke_run):
    """The screen's table: one row per configured run, each with its own schedule and AL form, and the gain
    over the VD run of the same schedule computed from the rows shown."""
    df = pd.read_csv(smoke_run / SMOKE_RESULTS / "tables" / "inan_screen.csv")
    assert sorted(zip(df["variant"], df["tag"])) == [("al", "interval_grad"), ("al", "interval_tnorm"),
                                                     ("re_bias", "interval_wt"), ("vd", "interval"), ("vd", "later")]
    row = df.set_index("tag")
    assert row.loc["later", "schedule"] == "later" and row.loc["interval", "schedule"] == "interval"
    assert bool(row.loc["interval_grad", "soft_target_grad"]) and not bool(row.loc["interval_grad", "prediction_bias"])
    assert row.loc["interval_grad", "why"] == "gradient into y~"
    vd = row.loc["interval", "valid_ppl"]
    assert row.loc["interval_grad", "gain_over_vd"] == pytest.approx(vd - row.loc["interval_grad", "valid_ppl"])
    assert row.loc["interval", "gain_over_vd"] == pytest.approx(0.0)
    assert row.loc["interval_grad", "baseline"] == "vd_interval"
    # the +AL run's soft target, from its own soft-target job, beside its gain; none for VD-LSTM
    soft = pd.read_csv(smoke_run / SMOKE_RESULTS / "inan" / "screen" / "ptb" / "small_al_interval_grad" / "soft_target.csv")
    assert row.loc["interval_grad", "soft_entropy_ratio"] == pytest.approx(soft["token_entropy_ratio"].iloc[0])
    assert 0 < row.loc["interval_grad", "soft_entropy_ratio"] <= 1 and row.loc["interval_grad", "soft_target_mass"] > 0
    assert 0 < row.loc["interval_grad", "al_share"] < 1 and pd.isna(row.loc["later", "soft_target_mass"])
    # the fixed norm reaches the run and its diagnostic: the model's own rows are far from norm 5
    tnorm = df[df["tag"] == "interval_tnorm"].iloc[0]
    assert tnorm["target_norm"] == 5.0 and tnorm["soft_target_mass"] > 5 * row.loc["interval_grad", "soft_target_mass"]
    metrics = json.loads((smoke_run / SMOKE_RESULTS / "inan" / "screen" / "ptb" / "small_al_interval_tnorm"
                          / "metrics.json").read_text())
    assert metrics["inan"]["target_norm"] == 5.0
    assert df.loc[df["variant"] == "re_bias", "model"].iloc[0] == "+RE with output bias (not the paper's RE)"
    best_vd = row.loc["interval", "best_valid_ppl"]
    assert best_vd <= vd and row.loc["interval_grad", "best_gain_over_vd"] == pytest.approx(
        best_vd - row.loc["interval_grad", "best_valid_ppl"])
    # lr per epoch: interval halves after epoch 1 (decay_interval 1), later keeps lr 1 for max_epoch = 1 too
    hist = pd.read_csv(smoke_run / SMOKE_RESULTS / "inan" / "screen" / "ptb" / "small_vd_interval" / "history.csv")
    assert hist["lr"].tolist() == [1.0, 0.5]


def test_inan_figure1_smoke(smoke_run):
    res = smoke_run / SMOKE_RESULTS
    df = pd.read_csv(res / "tables" / "inan_figure1.csv")
    assert set(df["panel"]) == {"a", "b"}
    assert df["distance_mean"].between(0, 1).all()
    runs = pd.read_csv(res / "tables" / "inan_figure1_runs.csv")
    assert len(runs) == len(df)  # one seed per point in the smoke config
    epochs = pd.read_csv(res / "inan" / "subspace" / "figure1_epochs.csv")
    # every run has its distance at init (epoch 0) and after its last epoch, which is the run's final one
    assert set(epochs["epoch"]) == {0, 1}
    last = epochs[epochs["epoch"] == 1].merge(runs, on=["panel", "tau", "beta", "seed"])
    assert len(last) == len(runs) and (last["distance_x"] - last["distance_y"]).abs().max() < 1e-6
    for ext in ("png", "svg"):
        assert (res / "figures" / f"inan_figure1.{ext}").stat().st_size > 1000
    point = json.loads((res / "inan" / "subspace" / "word_vectors_adam" / "tau10_beta1.json").read_text())
    assert point["runs"][0]["embedding_row_norm_max_dev"] < 1e-5
    assert "provenance" in point and point["reading"] == "word_vectors_adam"
    readings = pd.read_csv(res / "tables" / "inan_subspace_readings.csv")
    assert set(readings["reading"]) == {"word_vectors_adam", "zero_w_sgd"}
    assert readings["distance_beta1"].between(0, 1).all()
