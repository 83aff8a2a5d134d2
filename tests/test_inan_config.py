"""The Inan settings that reach each Table 1 job: the appendix's values per size and data set."""

from __future__ import annotations

from support.workflow import inan_specs


def test_paper_preset_carries_the_appendix_settings_per_size_and_data_set():
    specs = {(s["dataset"], s["size"], s["variant"]): s["size_settings"] for s in inan_specs("config/paper.yaml")}
    assert len(specs) == 2 * 3 * 4
    expected = {"small": (5, 0.9, 5.0, 0.3), "medium": (10, 0.9, 5.0, 0.5), "large": (1, 0.97, 6.0, 0.65)}
    wt2_dropout = {"small": 0.2, "medium": 0.4, "large": 0.4}
    for (dataset, size, _), s in specs.items():
        interval, decay, clip, dropout = expected[size]
        # the paper's text: the appendix's decay epoch at lr 1, then x decay per epoch; decay_interval keeps the
        # port's reading one switch away (schedule: interval)
        assert (s["schedule"], s["max_epoch"], s["decay_interval"], s["decay"], s["clip"]) == (
            "later", interval, interval, decay, clip)
        if dataset == "ptb":
            assert (s["gamma"], s["dropout_rate"]) == (0.5, dropout)
        else:
            assert (s["gamma"], s["dropout_rate"]) == (1.0, wt2_dropout[size])


# ------------------------------------------------------------------ the screen (inan.screen of the default preset)
import copy  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402
from snakemake.exceptions import WorkflowError  # noqa: E402
from snakemake.utils import validate  # noqa: E402

from support.workflow import REPO_ROOT  # noqa: E402

INAN_SCHEMA = str(REPO_ROOT / "workflow" / "schemas" / "inan.schema.yaml")


def _merged_inan() -> dict:
    """The default preset's inan section."""
    return yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())["inan"]


def test_the_screen_validates_and_fills_the_soft_target_budget():
    inan = validate(_merged_inan(), INAN_SCHEMA) or _merged_inan()
    validate(inan, INAN_SCHEMA)
    assert inan["screen"]["soft_target_loss_tokens"] == 3000
    assert "target_norm" not in inan["sizes"]["small"]  # no default: the Table 1 specs stay as they were


@pytest.mark.parametrize("where,value,words", [
    (("sizes", "small", "target_norm"), 0, ["0", "less than or equal to the minimum"]),
    (("sizes", "small", "target_norm"), "big", ["big"]),
    (("screen", "runs", 2, "overrides", "target_norm"), -2.0, ["-2.0"]),
    (("screen", "runs", 2, "overrides", "embedding_dropout"), "yes", ["yes"]),
    (("screen", "runs", 1, "baseline"), "Later!", ["Later!"]),
    (("screen", "runs", 1, "variant"), "rebias", ["rebias"]),
    (("table1", "variants"), ["vd", "re_bias"], ["re_bias"]),  # not a Table 1 row
])
def test_bad_screen_values_are_refused(where, value, words):
    inan = _merged_inan()
    node = inan
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(WorkflowError) as err:
        validate(copy.deepcopy(inan), INAN_SCHEMA)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_run_list_checks():
    from replicate.errors import ReplicateError
    from replicate.inan.screen import check_runs

    check_runs(_merged_inan()["screen"]["runs"])
    ok = [{"variant": "vd", "tag": "later"}, {"variant": "re_bias", "tag": "later"}]
    for bad, words in (([ok[0], {"variant": "re", "tag": "bias_later"}], r"reads as re_bias \+ later"),
                       (ok + [{"variant": "vd", "tag": "later"}], "two runs are named vd_later"),
                       (ok + [{"variant": "al", "tag": "x", "baseline": "nope"}], "baseline 'nope'"),
                       ([{"variant": "al", "tag": "x"}, {"variant": "re", "tag": "y", "baseline": "x"}], "baseline 'x'")):
        with pytest.raises(ReplicateError, match=words):
            check_runs(bad)


def test_screen_runs_reach_their_jobs():
    """Each screen run is one job with the settings its tag names."""
    from replicate.inan.train import run_settings

    def specs(*configfiles):
        return {f"{s['variant']}_{s['tag']}": s for s in inan_specs(*configfiles, kind="screen")}

    over = specs("config/config.yaml")
    got = {k: run_settings(s["size_settings"], s["size"], s["variant"], s["seed"], s["overrides"])
           for k, s in over.items()}
    assert len(got) == 17
    for k, (engine, al) in got.items():
        full = "_full6" in k
        assert engine["schedule"] == "later" and engine["max_epoch"] == 5 and engine["decay"] == 0.9, k
        assert engine["epochs"] == (6 if full else 40), k
        assert (engine.get("max_train_tokens"), engine.get("eval_max_tokens")) == ((None, None) if full else
                                                                                   (92959, 20000)), k
        assert engine.get("embedding_dropout", False) == k.endswith("_embdrop"), k
        assert engine["dropout_rate"] == (0.2 if k == "re_later_drop02" else 0.3), k
        assert engine["tying"] == {"vd": "untied", "al": "untied", "re_bias": "tied"}.get(
            over[k]["variant"], "tied_nobias"), k
    al = {k: (a.tau, a.alpha, a.target_norm) for k, (_, a) in got.items() if a is not None}
    assert al == {"al_later": (10.0, 5.0, None), "al_later_tnorm7": (10.0, 5.0, 7.0),
                  "al_later_tnorm10": (10.0, 5.0, 10.0), "al_later_tau2": (2.0, 5.0, None),
                  "al_later_tau2_tnorm4p5": (2.0, 5.0, 4.5), "real_later": (10.0, 5.0, None),
                  "real_later_tnorm10": (10.0, 5.0, 10.0), "al_later_full6": (10.0, 5.0, None),
                  "al_later_full6_alpha10": (10.0, 10.0, None), "al_later_full6_alpha20": (10.0, 20.0, None)}
    assert got["real_later"][1].soft_target_grad and not got["al_later"][1].soft_target_grad
