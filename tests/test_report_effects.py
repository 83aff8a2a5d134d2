"""Effect sizes and the seed-noise allowance: the verdict rule (two questions: does the effect point the
claimed way outside our noise, is the paper's value inside our interval), the pools of repeated runs found in
a synthetic bundle (picked up as soon as a second seed lands), and the verdicts they lead to."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from replicate.report import build as X
from replicate.report.build import CLAIMS, load
from replicate.reportkit import claims as C
from replicate.reportkit import effects as E
from replicate.reportkit import noise
from replicate.reportkit.labels import NOT_RUN


def _judged(paper, ours, allowance=None, level=False, check=C.HOLDS) -> str:
    return E.judge(check, [E.Effect("x", paper, ours, allowance=allowance, level=level)])[0]


@pytest.mark.parametrize("what, ours, allowance, paper", [
    ("AL's gain over VD-LSTM (Inan Table 1, small, valid)", 1.37, 1.76, 6.3),
    ("RE's gain over VD-LSTM", 0.12, 1.77, 2.7),
    ("AL over RE", 1.25, 1.75, 3.6),
    ("tying's train effect (Press & Wolf Table 6)", 0.35, 0.62, 1.6)])
def test_an_interval_around_zero_far_below_the_papers_value_is_not_reproduced(what, ours, allowance, paper):
    """Our interval includes 0, and its top lies below the paper's value: not 'inconclusive' (the old rule asked
    only whether the effect differs from 0), but 'not reproduced: smaller than reported'."""
    verdict, why = E.judge(C.HOLDS, [E.Effect(what, paper, ours, allowance=allowance)])
    assert verdict == E.NOT_REPRODUCED == "not reproduced: smaller than reported"
    assert why == (f"{what} {ours:.3g} ppl ± {allowance:.3g} against the paper's {paper:.3g} ppl: our interval "
                   f"{ours - allowance:.3g} to {ours + allowance:.3g} includes 0 and lies below the paper's value")


def test_verdict_rule_each_outcome():
    """Each verdict of the vocabulary from a case with a known answer (interval = ours ± allowance)."""
    assert _judged(3.2, 3.47, 1.31) == E.REPRODUCED                  # 2.16..4.78 excludes 0, holds 3.2
    assert _judged(6.3, 3.16, 0.9) == E.SMALLER                      # 2.26..4.06: 6.3 above it
    assert _judged(2.1, 4.1, 1.09) == E.LARGER                       # 3.01..5.19: 2.1 below it
    assert _judged(None, 0.3, 0.1) == E.HOLDS                        # no paper size: the direction only
    assert _judged(6.3, 1.37, 1.76) == E.NOT_REPRODUCED              # -0.39..3.13: 0 in, 6.3 above
    assert _judged(2.7, 0.9, 2.0) == E.INCONCLUSIVE                  # -1.1..2.9: both 0 and 2.7 in
    assert _judged(1.6, -2.0, 1.35) == E.FAILS                       # -3.35..-0.65: the other way
    assert _judged(0.0, -0.75, 0.22) == E.FAILS                      # "REAL best" with REAL worse beyond the noise
    assert _judged(-1.0, 0.5, 0.6) == E.NOT_REPRODUCED_LARGER        # a paper effect below our interval around 0
    assert _judged(3.2, 4.39) == E.INCONCLUSIVE                      # one seed: the noise is not measured
    assert _judged(3.2, 3.47, 1.31, check=C.FAILS) == C.FAILS        # the check fails for a reason no effect carries
    assert _judged(3.2, 3.47, 1.31, check=NOT_RUN) == NOT_RUN
    assert E.judge(C.INCONCLUSIVE, [])[0] == C.INCONCLUSIVE and E.judge(C.HOLDS, [])[0] == C.HOLDS


def test_a_claim_takes_the_verdict_of_its_weakest_effect():
    """valid reproduced + test larger: 'holds, larger'; + one not reproduced: that; + one the other way: fails;
    an unmeasured effect beats a measured 'not reproduced' (nothing is known of it), a failing check beats
    every 'holds'."""
    ok, larger = E.Effect("v", 3.2, 3.47, allowance=1.31), E.Effect("t", 2.1, 4.1, allowance=1.09)
    short, against = E.Effect("a", 6.3, 1.37, allowance=1.76), E.Effect("b", 1.6, -2.0, allowance=1.35)
    unknown, within = E.Effect("u", 3.2, 4.39), E.Effect("w", 2.7, 0.9, allowance=2.0)
    judge = lambda *es, check=C.HOLDS: E.judge(check, list(es))[0]  # noqa: E731
    assert judge(ok, ok) == E.REPRODUCED and judge(ok, larger) == judge(larger, ok) == E.LARGER
    assert judge(ok, larger, within) == E.INCONCLUSIVE and judge(within, short) == E.NOT_REPRODUCED
    assert judge(short, unknown) == E.INCONCLUSIVE and judge(unknown, against) == E.FAILS
    assert judge(ok, larger, check=C.FAILS) == C.FAILS and judge(short, check=C.FAILS) == E.NOT_REPRODUCED
    assert judge(ok, E.Effect("n", None, 0.3, allowance=0.1)) == E.REPRODUCED  # the sized effect speaks


def test_each_verdict_says_why_in_the_words_the_report_prints():
    """The reason beside a verdict names the effect, our number ± its allowance against the paper's, and where
    the paper's value lies against our interval."""
    e = lambda paper, ours, allowance=None, **kw: E.Effect("valid ppl, a − b", paper, ours, **(  # noqa: E731
        dict(allowance=allowance) | kw))
    assert E.judge(NOT_RUN, [e(3.2, 4.39, 1.0)]) == (NOT_RUN, "")
    assert E.judge(C.HOLDS, [e(3.2, None, 1.0)]) == (C.INCONCLUSIVE, "valid ppl, a − b: not measured")
    assert E.judge(C.HOLDS, [e(1.6, -2.0, 1.35)]) == (
        C.FAILS, "valid ppl, a − b -2 ppl ± 1.35 against the paper's 1.6 ppl: outside the noise, the other way")
    assert E.judge(C.HOLDS, [e(3.2, 4.39)]) == (C.INCONCLUSIVE, "valid ppl, a − b: seed noise not measured (one seed)")
    assert E.judge(C.HOLDS, [e(3.2, 4.39, noise="no repeated run")]) == (
        C.INCONCLUSIVE, "valid ppl, a − b: seed noise not measured (no repeated run)")
    assert E.judge(C.HOLDS, [e(None, 0.12, 0.9)]) == (C.INCONCLUSIVE, "valid ppl, a − b 0.12 ppl ± 0.9: within the noise")
    assert E.judge(C.HOLDS, [e(1.0, 0.12, 0.9)]) == (
        C.INCONCLUSIVE, "valid ppl, a − b 0.12 ppl ± 0.9 against the paper's 1 ppl: within the noise, as is the "
                        "paper's value")
    assert E.judge(C.FAILS, [e(3.2, 4.39, 1.5)]) == (C.FAILS, "its own check fails")
    assert E.judge(C.HOLDS, [e(6.3, 3.16, 0.9)]) == (
        E.SMALLER, "valid ppl, a − b 3.16 ppl ± 0.9 against the paper's 6.3 ppl: the paper's value lies above our "
                   "interval 2.26 to 4.06")
    assert E.judge(C.HOLDS, [e(2.1, 4.1, 1.0)]) == (
        E.LARGER, "valid ppl, a − b 4.1 ppl ± 1 against the paper's 2.1 ppl: the paper's value lies below our "
                  "interval 3.1 to 5.1")
    assert E.judge(C.HOLDS, [e(0.06, 0.151, unit="", level=True)]) == (
        E.NOT_REPRODUCED_LARGER, "valid ppl, a − b 0.151 against the paper's 0.06: the paper's value lies outside "
                                 "our interval 0.0755 to 0.302 (measured once: ours ÷ 2 to × 2)")
    assert E.judge(C.HOLDS, [e(3.2, 4.39, 1.5)]) == (E.REPRODUCED, "")


@pytest.mark.parametrize("paper, verdict", [(0.0, E.HOLDS), (float("inf"), E.HOLDS), (float("nan"), E.HOLDS),
                                            (1.0, E.SMALLER), (0.3, E.REPRODUCED), (0.1, E.LARGER)])
def test_a_paper_effect_of_zero_or_not_finite_sets_no_size_to_compare(paper, verdict):
    """0.3 ± 0.1 beyond the noise: against a paper effect of 1, 0.3 or 0.1 the size is compared; 0 (a tie the
    paper reports), inf or nan give no size, so the direction alone decides."""
    assert _judged(paper, 0.3, 0.1) == verdict


@pytest.mark.parametrize("paper, ours, allowance, verdict", [
    (3.2, 1.0, 1.0, E.NOT_REPRODUCED),  # exactly the allowance: the interval touches 0, so it includes it
    (3.2, 1.0, 2.2, E.INCONCLUSIVE),    # the paper's value on the top of the interval is inside it
    (3.2, 1.0, 2.19, E.NOT_REPRODUCED), # just below it
    (3.2, 2.0, 1.2, E.REPRODUCED),      # the paper's on the top, 0 just outside
    (3.2, 2.0, 1.19, E.SMALLER),
    (3.2, 4.4, 1.2, E.REPRODUCED),      # the paper's on the bottom
    (3.2, 4.41, 1.2, E.LARGER),
    (3.2, 0.0, 0.0, E.NOT_REPRODUCED),  # zero within a zero allowance, the paper's far above
    (3.2, -1.01, 1.0, E.FAILS),         # just outside the allowance, the other way
    (3.2, -1.0, 1.0, E.NOT_REPRODUCED), # on it
])
def test_verdict_rule_at_its_boundaries(paper, ours, allowance, verdict):
    assert _judged(paper, ours, allowance) == verdict


@pytest.mark.parametrize("paper, ours, allowance, verdict", [
    (0.06, 0.12, None, E.REPRODUCED), (0.06, 0.121, None, E.NOT_REPRODUCED_LARGER),      # one seed: × 2
    (0.06, 0.03, None, E.REPRODUCED), (0.06, 0.029, None, E.NOT_REPRODUCED),             # ... or ÷ 2
    (0.06, 0.151, 0.1, E.REPRODUCED), (0.06, 0.151, 0.05, E.NOT_REPRODUCED_LARGER),      # its own interval
    (0.06, 0.04, 0.01, E.NOT_REPRODUCED), (None, 0.1, 0.01, E.INCONCLUSIVE), (0.06, 0.0, None, E.INCONCLUSIVE)])
def test_a_level_asks_only_whether_the_papers_value_is_inside_our_interval(paper, ours, allowance, verdict):
    """A level (Inan's distance at β = 1): no direction question; with seeds its t interval, measured once a
    factor of 2 either way (a non-positive level measured once has no interval)."""
    assert _judged(paper, ours, allowance, level=True) == verdict


def test_every_verdict_has_its_colour_and_is_printed_in_the_rule():
    """Each verdict of the vocabulary is named in the rule the report prints and coloured in the HTML."""
    from replicate.report.render import CELL_CLASSES

    assert set(CELL_CLASSES) == set(E.VERDICTS)
    assert all(f"**{v}**" in E.RULE for v in E.VERDICTS if v != E.NOT_REPRODUCED_LARGER)
    assert "not reproduced: smaller / larger than reported" in E.RULE


@pytest.mark.parametrize("ours", [None, float("nan"), float("inf")])
def test_an_effect_without_a_number_of_ours_never_holds(ours):
    assert _judged(3.2, ours, 1.0) == C.INCONCLUSIVE


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
    assert two.cost()[0] == 200.0 and two.cost()[2] == 2
    # a claim at the paper's settings never borrows the 2-epoch noise
    a = noise.allowance(pools, ["press_wolf"], 120.0, 1, 1)
    assert a.value is None and "no repeated run" in a.note
    # the second seed lands: the pool at the paper's settings is picked up
    _run(tmp_path, "press_wolf/small/seed2", 121.0, 116.0)
    _run(tmp_path, "press_wolf/small_wt/seed2", 117.0, 111.5, wall=None)
    pools = noise.scan(tmp_path)
    p = pools["press_wolf"]
    assert p.runs() == ["small/seed1", "small/seed2", "small_wt/seed1", "small_wt/seed2"] and p.dof() == 2
    assert p.cost()[2] == 3  # one run without a benchmark file: counted as untimed, not as zero seconds
    s = p.rel_sd("valid_ppl")
    a = noise.allowance(pools, ["inan_table1", "press_wolf"], 94.0, 1, 1)
    # a 95 % t interval on the pool's 2 dof (t = 4.30), not the 2 of a z; borrowed, and said so at the number
    assert a.value == pytest.approx(4.302653 * s * 94.0 * math.sqrt(2), rel=1e-6) and a.note.startswith("borrowed")
    assert a.flag == "borrowed" and a.dof == 2
    one_pair = noise.allowance({"press_wolf": two}, ["press_wolf"], 345.0, 1, 1)
    assert one_pair.flag == "one pair" and "t = 12.7" in one_pair.note and one_pair.dof == 1


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


def _verdict(res, claim_id: str):
    return next(c.evaluate(res) for c in CLAIMS if c.id == claim_id)


def test_verdicts_follow_the_repeats_in_the_bundle(tmp_path):
    single = load(_bundle(tmp_path / "one", repeat=False))
    for claim_id in ("pw_small_tying", "inan_re_vd", "inan_al_vd"):  # one seed each: the rule needs a repeat
        v = _verdict(single, claim_id)
        assert v.verdict == C.INCONCLUSIVE and "seed noise not measured" in v.why, claim_id
    assert "ran small only of the claimed sizes small, medium, large" in _verdict(single, "inan_real_best").why
    repeated = load(_bundle(tmp_path / "two", repeat=True))
    v = _verdict(repeated, "pw_small_tying")  # valid 4.39 ± ~1.8 holds the paper's 3.2; test (no spread) does not
    valid, test = v.effects
    assert valid.seeds == (2, 2) and valid.allowance > 0 and valid.dof == 2 and E.judge_one(valid)[0] == E.REPRODUCED
    assert test.allowance == 0 and v.verdict == E.LARGER and v.why.startswith("test ppl, small − small + WT 4.39 ppl ± 0")
    re = _verdict(repeated, "inan_re_vd")  # 0.12 ppl against a borrowed allowance of about 2 ppl, the paper's 2.7
    assert re.verdict == E.NOT_REPRODUCED and "borrowed" in re.effects[0].noise and re.effects[0].flag == "borrowed"
    assert re.why.endswith("includes 0 and lies below the paper's value") and re.effects[0].dof == 2
    assert _verdict(repeated, "inan_al_vd").verdict == E.NOT_REPRODUCED  # 1.37 ± ~2: 0 inside, 6.3 far above


HOLDING = (E.REPRODUCED, E.SMALLER, E.LARGER, E.HOLDS)  # the verdicts that say the direction holds


def _holds_outside_noise(verdicts) -> list[str]:
    """Claims whose verdict says the direction holds while an effect is within its allowance or has none (a
    failure each)."""
    return [c.id for c, v in verdicts if v.verdict in HOLDING
            and any(not e.level and (e.allowance is None or abs(e.ours) <= e.allowance) for e in v.effects)]


def test_no_claim_holds_within_its_allowance(tmp_path, repo_root):
    """For every claim, on the published bundle and on synthetic bundles with and without repeats: none reads
    'holds' while an effect it rests on is within its seed-noise allowance (or has none)."""
    bundles = [repo_root / "paper/measured", _bundle(tmp_path / "one", False), _bundle(tmp_path / "two", True)]
    for root in bundles:
        verdicts = X.evaluate_all(load(root))
        assert not _holds_outside_noise(verdicts), root
        assert all(v.verdict in C.VERDICTS for _, v in verdicts)
    # the check itself can fail: an effect inside its allowance next to a 'holds'
    fake = C.Verdict(C.HOLDS, "x", effects=[E.Effect("x", 1.0, 0.5, allowance=1.0)])
    assert fake.verdict == C.INCONCLUSIVE
    assert _holds_outside_noise([(CLAIMS[0], _Forced(E.REPRODUCED, fake.effects))]) == [CLAIMS[0].id]
    assert _holds_outside_noise([(CLAIMS[0], _Forced(C.HOLDS, fake.effects))]) == [CLAIMS[0].id]


class _Forced:
    """A verdict that reads 'holds' whatever its effects (to show the check above can fail)."""
    def __init__(self, verdict, effects):
        self.verdict, self.effects = verdict, effects


def test_every_row_of_the_glossarys_names_is_a_label():
    """The report's labels are read from docs/glossary.md's table "Names in the report": each of its rows is one
    label (a row the pattern misses would leave its name unlabelled), and a label with a table's pipe in it
    reads unescaped."""
    from replicate.reportkit import labels

    text = labels.GLOSSARY.read_text(encoding="utf-8")
    section = text[text.index("## Names in the report"):].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    read = labels.read_glossary(section)
    assert len(rows) == sum(map(len, read.values())) > 80
    assert read == labels.read_glossary(text)  # no row elsewhere in the glossary reads as a label
    assert labels.column("soft_entropy_ratio") == "y~ entropy / log |V|" and labels.value("inv_sqrt_d") == "1/√d"
    assert list(labels.MATRICES)[:2] == ["tied", "tied_pr"]
