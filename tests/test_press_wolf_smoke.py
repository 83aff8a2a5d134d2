"""End-to-end: the smoke DAG produces the Press & Wolf run outputs and the Table 6 CSV."""

from __future__ import annotations

import csv
import json

import pytest

from support.workflow import SMOKE_RESULTS

CELLS = ["small", "small_wt", "small_pr", "small_wt_pr"]


@pytest.mark.slow
def test_smoke_table6_csv(smoke_run, repo_root):
    path = smoke_run / SMOKE_RESULTS / "tables" / "press_wolf_table6.csv"
    rows = list(csv.DictReader(open(path)))
    assert [r["cell"] for r in rows] == CELLS
    papers = {r["cell"]: r for r in csv.DictReader(open(repo_root / "paper/reference/press_wolf_table6.csv"))}
    for row in rows:
        assert row["protocol"] == "smoke" and row["n_seeds"] == "1" and row["epochs"] == "2"
        metrics = json.loads((smoke_run / SMOKE_RESULTS / "press_wolf" / row["cell"] / "seed1/metrics.json").read_text())
        for k in ("train", "valid", "test"):
            ours, paper = float(row[f"{k}_ours"]), float(row[f"{k}_paper"])
            assert ours == pytest.approx(metrics[f"{k}_ppl"], rel=1e-12)  # the run's own number, one seed
            assert paper == float(papers[row["cell"]][f"{k}_ppl"])
            assert float(row[f"{k}_diff"]) == pytest.approx(ours - paper)
            assert float(row[f"{k}_rel_diff"]) == pytest.approx((ours - paper) / paper)
        assert abs(float(row["params_m_ours"]) - float(row["params_m_paper"])) < 0.01
        assert "Press & Wolf" in row["source"]


@pytest.mark.slow
@pytest.mark.parametrize("cell", CELLS)
def test_smoke_run_outputs(smoke_run, cell):
    run = smoke_run / SMOKE_RESULTS / "press_wolf" / cell / "seed1"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["run"] == f"{cell}/seed1" and metrics["epochs_completed"] == 2
    assert metrics["provenance"]["config"]["protocol"] == "smoke"
    assert metrics["provenance"]["config"]["settings"]["max_batches"] is not None
    history = list(csv.DictReader(open(run / "history.csv")))
    assert [int(r["epoch"]) for r in history] == [1, 2]
    assert {"lr", "train_ppl", "valid_ppl", "seconds", "tokens_per_s"} <= set(history[0])
    assert not (run / "checkpoint.pt").exists()  # the smoke preset: keep_final_checkpoint false
    assert "=== attempt 1 ended" in (run / "train.log").read_text()
    assert (smoke_run / SMOKE_RESULTS / "logs" / "press_wolf" / cell / "seed1.log").read_text().count("tok/s") >= 2
