"""Press & Wolf cells: precedence of settings and the cell@key=value ablation syntax."""

from __future__ import annotations

import pytest

from replicate.errors import ReplicateError
from replicate.lstm.config import resolve
from replicate.press_wolf.cells import cell_settings, parse_cell


def test_cell_settings_precedence_and_ablation_syntax():
    assert parse_cell("small_wt_pr@pr_lambda=0.05@seed=3") == ("small_wt_pr", {"pr_lambda": 0.05, "seed": 3})
    s = cell_settings("small_wt_pr@pr_lambda=0.05", {"pr_lambda": 0.2, "epochs": 2}, seed=7)
    assert s == {"size": "small", "tying": "tied", "projection": True, "gate_bias": "tf", "pr_lambda": 0.05,
                 "epochs": 2, "seed": 7}
    model, train = resolve(s, vocab_size=10000)
    assert model.tying == "tied" and model.projection and train.pr_lambda == 0.05 and train.bptt == 20
    with pytest.raises(ReplicateError, match="bad cell override"):
        parse_cell("small@lamda=1")
    with pytest.raises(ReplicateError, match="unknown Press & Wolf cell"):
        parse_cell("tiny")
