"""A requested path that no rule writes (replicate/validate.py): the closest rule and the part that does not fit."""

from __future__ import annotations

import pytest

from replicate.press_wolf.cells import parse_cell
from replicate.validate import explain, plain

OUTPUTS = [
    ("press_wolf_train", r"results/press_wolf/{cell,[a-z_]+(@[a-z_]+=[^/@]+)*}/seed{seed,\d+}/metrics.json"),
    ("inan_train", "results/inan/table1/{dataset,ptb|wikitext2}/{size,small|medium|large}_{variant,vd|al|re|real}"
                   "/metrics.json"),
    ("scale_train", r"results/scale/runs/{dataset,ptb|wikitext2}/p{pct,\d+}_h{hidden,\d+}_"
                    r"{variant,untied|tied|untied_pr|tied_pr}/seed{seed,\d+}/summary.json"),
]


@pytest.mark.parametrize("target,words", [
    ("results/press_wolf/small/seed-1/metrics.json", ["rule press_wolf_train", "seed='-1'", "digits only"]),
    ("results/press_wolf/Small/seed1/metrics.json", ["unknown Press & Wolf cell 'Small'", "'small'"]),
    ("results/press_wolf/small@lr=/seed1/metrics.json", ["lr has an empty value"]),
    ("results/inan/table1/ptbb/small_al/metrics.json", ["dataset='ptbb'", "one of ptb, wikitext2", "'ptb'"]),
    ("results/inan/table1/ptb/huge_al/metrics.json", ["size='huge'", "one of small, medium, large"]),
    ("results/inan/table1/ptb/small_all/metrics.json", ["variant='all'", "(did you mean 'al'?)"]),
    ("results/scale/runs/ptb/p_h200_tied_drop0/seed1/summary.json", ["rule scale_train", "pct is empty"]),
    ("results/press_wolff/small/seed1/metrics.json",
     ["no rule writes", "closest path a rule writes is results/press_wolf/{cell}/seed{seed}/metrics.json"]),
])
def test_the_bad_part_of_a_path_is_named(target, words):
    message = str(explain(target, OUTPUTS, {"cell": parse_cell}))
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_plain_drops_the_constraints():
    assert plain(OUTPUTS[0][1]) == "results/press_wolf/{cell}/seed{seed}/metrics.json"
