"""Press & Wolf cells: precedence of settings and the cell@key=value ablation syntax."""

from __future__ import annotations

import re

import pytest

from replicate.validate import SettingError
from replicate.lstm.config import resolve
from replicate.press_wolf.cells import cell_settings, check_cell_lists, parse_cell, spell


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


@pytest.mark.parametrize("cell,words", [
    ("small@lr=0.5@lr=2", "lr is given twice"),
    ("small@lr=1 @bptt=3", "contains whitespace"),
    ("small@lr=", "lr has an empty value"),
    ("small@lr=1.0", "write lr=1"),
    ("small@pr_lambda=5e-2", "write pr_lambda=0.05"),
    ("small@projection=True", "write projection=true"),
    ("small@epochs=04", "write epochs=4"),
])
def test_a_cell_has_one_spelling(cell, words):
    with pytest.raises(SettingError, match=re.escape(words)):
        parse_cell(cell)


def test_spelling_round_trips():
    for value in (True, None, 3, 0.05, 1e-05, 1e20, 2.5, "squared"):
        assert parse_cell(f"small@pr_form={spell(value)}")[1]["pr_form"] == value
    assert parse_cell("small_wt_pr@pr_form=squared@epochs=4")[1] == {"pr_form": "squared", "epochs": 4}  # order free


def _pw(cells, ablations=(), tables=None):
    return {"cells": list(cells), "ablations": list(ablations), "tables": tables or {}}


def test_cell_lists_tables_only_of_trained_cells():
    check_cell_lists(_pw(["small", "small_wt"], tables={"table6": ["small"]}))
    check_cell_lists(_pw([], tables={}))  # no Press & Wolf runs at all
    with pytest.raises(SettingError, match=r"press_wolf.tables.table6 lists 'small_wt', which neither press_wolf.cells"):
        check_cell_lists(_pw(["small"], tables={"table6": ["small", "small_wt"]}))
    with pytest.raises(SettingError, match="which neither press_wolf.cells nor press_wolf.ablations trains"):
        check_cell_lists(_pw([], tables={"table6": ["small"]}))  # cells: [] is not ignored
    with pytest.raises(SettingError, match="'small@lr=1@bptt=3' and 'small@bptt=3@lr=1' are the same run"):
        check_cell_lists(_pw(["small@lr=1@bptt=3"], ablations=["small@bptt=3@lr=1"]))


def test_a_table_may_list_a_trained_ablation():
    check_cell_lists(_pw(["small"], ablations=["small@epochs=4"], tables={"table6": ["small", "small@epochs=4"]}))
