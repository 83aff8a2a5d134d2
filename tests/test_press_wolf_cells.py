"""Press & Wolf cells: precedence of settings and the cell@key=value ablation syntax."""

from __future__ import annotations

import pytest

from replicate.validate import SettingError
from replicate.lstm.config import resolve
from replicate.press_wolf.cells import cell_settings, parse_cell


def test_cell_settings_precedence_and_ablation_syntax():
    assert parse_cell("small_wt_pr@pr_lambda=0.05@epochs=3") == ("small_wt_pr", {"pr_lambda": 0.05, "epochs": 3})
    assert parse_cell("small@pr_lambda=null@dropout=none") == ("small", {"pr_lambda": None, "dropout": "none"})
    s = cell_settings("small_wt_pr@pr_lambda=0.05", {"pr_lambda": 0.2, "epochs": 2}, seed=7)
    assert s == {"size": "small", "tying": "tied", "projection": True, "gate_bias": "tf", "pr_lambda": 0.05,
                 "epochs": 2, "seed": 7}
    model, train = resolve(s, vocab_size=10000)
    assert model.tying == "tied" and model.projection and train.pr_lambda == 0.05 and train.bptt == 20
    with pytest.raises(SettingError, match=r"unknown key 'lamda' \(did you mean 'pr_lambda'\?\)"):
        parse_cell("small@lamda=1")
    with pytest.raises(SettingError, match="seed is not a cell override"):  # the seed<N> folder sets it
        parse_cell("small@seed=3")
    with pytest.raises(SettingError, match="'small@epochs': override 'epochs' is not key=value"):
        parse_cell("small@epochs")
    with pytest.raises(SettingError, match=r"unknown Press & Wolf cell 'smal_wt' \(did you mean 'small_wt'\?\)"):
        parse_cell("smal_wt")
