"""Table builder: our numbers beside the paper's (mean over seeds, differences, unpublished rows)."""

from __future__ import annotations

import pandas as pd
import pytest

from replicate import io as rio
from replicate.press_wolf.table import write_table


def _metrics(path, run, train, valid, test, params=4_653_200, projection=False):
    resolved = {"model": {"gate_bias": "tf", "projection": projection},
                "train": {"schedule": "r0.8", "pr_form": "authors_code", "pr_lambda": 1 / 6.5}}
    rio.write_json(path, {"run": run, "train_ppl": train, "train_clean_ppl": train - 1, "valid_ppl": valid,
                          "test_ppl": test, "num_parameters": params, "epochs_completed": 13,
                          "resolved": resolved, "code_version": "abc"})
    return path


def test_table_joins_paper_rows_and_averages_seeds(tmp_path, repo_root):
    paths = [_metrics(tmp_path / "a.json", "small/seed1", 40.0, 120.0, 116.0),
             _metrics(tmp_path / "b.json", "small/seed2", 42.0, 122.0, 118.0),
             _metrics(tmp_path / "c.json", "small_wt_pr@pr_lambda=0.1/seed1", 37.0, 117.0, 112.0, 2_653_200, True)]
    out = tmp_path / "t.csv"
    write_table(paths, repo_root / "paper/reference/press_wolf_table6.csv", out, protocol="reduced", table="table6")
    t = pd.read_csv(out)
    small = t[t.cell == "small"].iloc[0]
    assert small.n_seeds == 2 and small.valid_ours == 121.0 and small.valid_paper == 120.7
    assert small.valid_diff == pytest.approx(0.3) and small.valid_rel_diff == pytest.approx(0.3 / 120.7)
    assert small.train_paper == 38.0 and small.protocol == "reduced" and small.params_m_ours == pytest.approx(4.6532)
    assert small.train_ours == 41.0 and small.train_clean_ours == 40.0  # running vs clean train ppl
    # the spread of the cell's seeds per split (sample sd, n - 1): the report's noise reads the same runs
    assert small.valid_sd == pytest.approx(2 ** 0.5) and small.test_sd == pytest.approx(2 ** 0.5)
    assert small.train_sd == pytest.approx(2 ** 0.5)
    assert small.schedule == "r0.8" and small.gate_bias == "tf" and pd.isna(small.pr_lambda)
    ablation = t[t.cell == "small_wt_pr@pr_lambda=0.1"].iloc[0]
    assert pd.isna(ablation.valid_paper) and ablation.source == "no published number"
    assert ablation.pr_form == "authors_code" and pd.isna(ablation.valid_sd)  # one seed: no sd


def test_paper_reference_tables_have_sources(repo_root):
    for name, cells in (("table6", 4), ("table5", 5)):
        ref = pd.read_csv(repo_root / f"paper/reference/press_wolf_{name}.csv")
        assert len(ref) == cells and ref.source.notna().all()
        assert (ref.valid_ppl > ref.test_ppl).all()
