"""The Inan settings that reach each Table 1 job: the appendix's values per size and data set."""

from __future__ import annotations

from support.workflow import printed_specs, run_snakemake


def test_paper_preset_carries_the_appendix_settings_per_size_and_data_set(workflow_dir):
    args = ["-n", "-p", "--forceall", "results/tables/inan_table1.csv", "--configfile", "config/paper.yaml"]
    out = run_snakemake(args, cwd=workflow_dir).stdout
    specs = {(s["dataset"], s["size"], s["variant"]): s["size_settings"]
             for s in printed_specs(out)}
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
