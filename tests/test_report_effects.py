"""Effect sizes and the seed-noise allowance: the size rule, the pools of repeated runs found in a
synthetic bundle (picked up as soon as a second seed lands), and the size verdicts they lead to."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from replicate.report import effects as E
from replicate.report import noise
from replicate.report.claims import CLAIMS
from replicate.report.sources import load


def _verdict(paper, ours, allowance=None, level=False) -> str:
    return E.size_verdict(E.Effect("x", paper, ours, allowance=allowance, level=level))


def test_size_rule_each_outcome():
    e = _verdict
    assert e(3.2, 4.39, 1.0) == E.SAME
    assert e(6.3, 1.37, 0.9) == E.DIRECTION_ONLY
    assert e(2.7, 0.12, 0.9) == E.TIE                      # 0.12 ppl on one seed: a tie, not "holds"
    assert e(1.6, -0.32, 0.1) == E.OPPOSITE
    assert e(0.06, 0.36, level=True) == E.DIRECTION_ONLY   # a distance 6x the paper's
    assert e(0.06, 0.1, level=True) == E.SAME
    assert e(None, 0.3) == E.NO_PAPER and e(None, 0.01, 0.05) == E.TIE
    assert e(0.0, -0.75, 1.0) == E.TIE and e(0.0, -0.75, 0.5).startswith(E.PAPER_TIE)
    assert e(3.2, 4.39) == f"{E.SAME} ({E.NOISE_UNKNOWN})"  # no allowance: said, not hidden
    assert E.worst([E.SAME, E.TIE, E.DIRECTION_ONLY]) == E.TIE


@pytest.mark.parametrize("paper, ours, allowance, verdict", [
    (3.2, 1.0, 1.0, E.TIE),                # exactly the allowance is still within it
    (3.2, 1.6, 0.1, E.SAME),               # exactly 1/FACTOR of the paper's
    (3.2, 6.4, 0.1, E.SAME),               # exactly FACTOR times
    (3.2, 3.2, 0.1, E.SAME),
    (3.2, 1.59, 0.1, E.DIRECTION_ONLY),    # just under 1/FACTOR
    (3.2, 6.41, 0.1, E.DIRECTION_ONLY),    # just over FACTOR
    (3.2, 0.0, 0.0, E.TIE),
    (-2.0, -3.0, 0.1, E.SAME),             # both negative: same direction
    (-2.0, 3.0, 0.1, E.OPPOSITE),
])
def test_size_rule_at_its_boundaries(paper, ours, allowance, verdict):
    assert _verdict(paper, ours, allowance) == verdict


@pytest.mark.parametrize("ours", [None, float("nan"), float("inf")])
def test_size_rule_without_a_number_of_ours(ours):
    assert _verdict(3.2, ours, 1.0) == E.NOT_MEASURED


def test_size_rule_zero_effect_without_allowance_is_no_opposite():
    """ours = 0 and no allowance: not of the opposite sign, a size of 0 x the paper's."""
    assert _verdict(3.2, 0.0) == f"{E.DIRECTION_ONLY} ({E.NOISE_UNKNOWN})"


@pytest.mark.parametrize("x, unit, shown", [
    (3.14159, "ppl", "3.14 ppl"), (-0.0123456, "nats", "-0.0123 nats"), (1234.5, "ppl", "1.23e+03 ppl"),
    (0.5, "", "0.5"), (None, "ppl", "—"), (float("nan"), "ppl", "—"), (float("inf"), "ppl", "—")])
def test_effect_as_shown(x, unit, shown):
    assert E.fmt_effect(x, unit) == shown


def _run(root: Path, rel: str, valid: float, test: float, wall: float | None = 100.0) -> None:
    run = root / rel
    run.mkdir(parents=True)
    seed = int(run.name.removeprefix("seed")) if run.name.startswith("seed") else 1
    (run / "metrics.json").write_text(json.dumps({"settings": {"seed": seed}, "valid_ppl": valid, "test_ppl": test,
                                                  "train_ppl": 40.0}))
    if wall is not None:
        bench = root / "benchmarks" / Path(rel).with_suffix(".tsv")
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text(f"s\tcpu_time\tmax_rss\tmean_load\n{wall}\t{wall * 0.9}\t500\t99\n")


def test_pools_group_seeds_by_cell_and_protocol(tmp_path):
    _run(tmp_path, "press_wolf/small/seed1", 120.0, 115.0)
    _run(tmp_path, "press_wolf/small_wt/seed1", 118.0, 112.0)
    _run(tmp_path, "press_wolf/small_wt_pr@epochs=2/seed2", 360.0, 350.0)
    _run(tmp_path, "press_wolf/small_wt_pr@epochs=2/seed3", 330.0, 324.0)
    _run(tmp_path, "inan/table1/ptb/small_vd", 94.0, 89.0)
    pools = noise.scan(tmp_path)
    assert pools["press_wolf"].repeated == {}                     # one seed per cell: no noise at this protocol
    two = pools["press_wolf@epochs=2"]
    assert two.runs() == ["small_wt_pr@epochs=2/seed2", "small_wt_pr@epochs=2/seed3"] and two.dof() == 1
    mean = 345.0
    assert two.rel_sd("valid_ppl") == pytest.approx(math.sqrt(((360 / mean - 1) ** 2 + (330 / mean - 1) ** 2) / 1))
    assert two.wall_s == 200.0 and two.timed == 2
    # a claim at the paper's settings never borrows the 2-epoch noise
    a = noise.allowance(pools, ["press_wolf"], 120.0, 1, 1)
    assert a.value is None and "no repeated run" in a.note
    # the second seed lands: the pool at the paper's settings is picked up
    _run(tmp_path, "press_wolf/small/seed2", 121.0, 116.0)
    _run(tmp_path, "press_wolf/small_wt/seed2", 117.0, 111.5, wall=None)
    pools = noise.scan(tmp_path)
    p = pools["press_wolf"]
    assert p.runs() == ["small/seed1", "small/seed2", "small_wt/seed1", "small_wt/seed2"] and p.dof() == 2
    assert p.timed == 3  # one run without a benchmark file: counted as untimed, not as zero seconds
    s = p.rel_sd("valid_ppl")
    a = noise.allowance(pools, ["inan_table1", "press_wolf"], 94.0, 1, 1)
    assert a.value == pytest.approx(2 * s * 94.0 * math.sqrt(2)) and a.note.startswith("borrowed")


def _bundle(root: Path, repeat: bool) -> Path:
    """Press & Wolf Table 6 and Inan Table 1 in the owners' formats, plus per-run metrics (with a
    second seed of small and small_wt when ``repeat``)."""
    t = root / "tables"
    t.mkdir(parents=True)
    rows = []
    for cell, valid, paper in (("small", 122.25, 120.7), ("small_wt", 117.86, 117.5), ("small_pr", 116.5, 116.0),
                               ("small_wt_pr", 107.6, 104.9)):
        n = 2 if repeat and cell in ("small", "small_wt") else 1
        rows.append({"cell": cell, "row": cell, "protocol": "reduced", "n_seeds": n, "train_ours": 40.0,
                     "train_paper": 38.0, "valid_ours": valid, "valid_paper": paper, "test_ours": valid - 5,
                     "test_paper": paper - 5})
        for seed in range(1, n + 1):
            _run(root, f"press_wolf/{cell}/seed{seed}", valid + (seed - 1.5) * 0.6 * (n - 1), valid - 5)
    pd.DataFrame(rows).to_csv(t / "press_wolf_table6.csv", index=False)
    pd.DataFrame([{"dataset": "ptb", "size": "small", "model": m, "valid_ppl": v, "paper_valid_ppl": p,
                   "test_ppl": v - 5, "paper_test_ppl": p - 4, "protocol": "reduced"}
                  for m, v, p in (("VD-LSTM", 94.26, 92.6), ("+AL", 92.89, 86.3), ("+RE", 94.14, 89.9),
                                  ("+REAL", 93.64, 86.3))]).to_csv(t / "inan_table1.csv", index=False)
    return root


def _size(res, claim_id: str) -> str:
    return next(c.evaluate(res) for c in CLAIMS if c.id == claim_id).size


def test_size_verdicts_follow_the_repeats_in_the_bundle(tmp_path):
    single = load(_bundle(tmp_path / "one", repeat=False))
    assert _size(single, "pw_small_tying") == f"{E.SAME} ({E.NOISE_UNKNOWN})"
    assert _size(single, "inan_re_vd") == f"{E.DIRECTION_ONLY} ({E.NOISE_UNKNOWN})"
    assert _size(single, "inan_al_vd") == f"{E.DIRECTION_ONLY} ({E.NOISE_UNKNOWN})"
    assert "ran small only of the claimed sizes small, medium, large" in _size(single, "inan_real_best")
    repeated = load(_bundle(tmp_path / "two", repeat=True))
    v = next(c.evaluate(repeated) for c in CLAIMS if c.id == "pw_small_tying")
    assert v.effects[0].seeds == (2, 2) and v.effects[0].allowance > 0 and v.size == E.SAME
    # seed sd ~0.35 % of ~94 ppl on one seed each: about 0.9 ppl, so Inan's 0.12-ppl RE gain is a tie
    re = next(c.evaluate(repeated) for c in CLAIMS if c.id == "inan_re_vd")
    assert re.size == E.TIE and "borrowed" in re.effects[0].noise
    assert _size(repeated, "inan_al_vd") == E.DIRECTION_ONLY  # 1.37 vs 6.3: beyond the noise, under half


def test_glossary_lists_every_report_label():
    """docs/glossary.md maps every name the report relabels (labels.py), so a reader of the CSV finds it."""
    from replicate.report import labels

    text = (Path(__file__).resolve().parents[1] / "docs" / "glossary.md").read_text(encoding="utf-8")
    for kind, table in (("column", labels.COLUMNS), ("value", labels.VALUES)):
        for name, label in table.items():
            assert f"| `{name}` ({kind}) | {label} |" in text, name
