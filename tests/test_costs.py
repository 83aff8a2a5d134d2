"""Costs from one source (replicate/resources.py): the plan's one_thread_min per job, added up per
experiment by `python -m replicate costs`, and the generated table of docs/reproducibility.md."""

from __future__ import annotations

import os

import pytest

from support.workflow import REPO_ROOT, data_dir
from replicate import console, resources
from replicate.lstm.config import resolve

PLAN = """
rule press_wolf_train:
    output: results/press_wolf/small/seed1/metrics.json
    resources: tmpdir=/tmp, mem_mb=1280, runtime=380, one_thread_min=129, gpu=0
rule inan_subspace_point:
    resources: tmpdir=/tmp, gpu=0
rule press_wolf_train:
    resources: tmpdir=/tmp, runtime=380, one_thread_min=131
localrule press_wolf_table:
    output: results/tables/press_wolf_table6.csv
rule data_summary:
    resources: tmpdir=/tmp
rule all:
    input: results/tables/press_wolf_table6.csv
"""


def test_plan_is_added_up_per_experiment_and_unestimated_jobs_are_named():
    parsed = resources.parse_plan(PLAN)
    assert (parsed["press_wolf"].jobs, parsed["press_wolf"].minutes) == (3, 260)
    assert dict(parsed["press_wolf"].unestimated) == {"press_wolf_table": 1}
    assert dict(parsed["inan"].unestimated) == {"inan_subspace_point": 1} and parsed["inan"].minutes == 0
    assert parsed[resources.OTHER].jobs == 1, "`all` is no job; data_summary is"
    text = resources.table(parsed)
    assert "| press_wolf | 3 | 4.3 | 0.1 | press_wolf_table x1 |" in text
    assert text.endswith("| total | 5 | 4.3 | 0.1 |  |")


def test_gpu_hours_come_from_the_stated_rate_and_say_they_are_an_estimate():
    """The paper preset's 9,570 one-thread hours are ~130 GPU hours at the stated 2 TFLOP/s (74x one thread)."""
    assert resources.gpu_hours(9570) == pytest.approx(9570 * 27e9 / 2e12, rel=0.01)
    assert "estimated, not measured" in resources.GPU_ESTIMATE and "2 TFLOP/s" in resources.GPU_ESTIMATE
    assert "GPU hours (estimate, not measured)" in resources.table(resources.parse_plan(PLAN)).splitlines()[0]
    assert f"GPU hours: {resources.GPU_ESTIMATE}" in resources.docs_block([resources.parse_plan(PLAN)] * 2)


def test_expected_time_comes_from_the_measured_throughput():
    """The lead's measurement (MEASURED_ON): a 13-epoch Press & Wolf small run is about 2 h on one thread."""
    model, train = resolve({"size": "small"}, resources.CORPUS_SHAPES["ptb"]["vocab"])
    est = resources.lstm_estimate(model, train, resources.CORPUS_SHAPES["ptb"])
    assert 1.8 <= est.one_thread_hours <= 2.4
    assert est.runtime_min / 60 > est.one_thread_hours, "the time limit stays above the expected time"


def _generated_block(page: str) -> str:
    return page.split(resources.BLOCK_BEGIN)[1].split(resources.BLOCK_END)[0].strip()


@pytest.mark.slow
def test_docs_cost_table_is_what_the_command_plans(workflow_dir, monkeypatch):
    """docs/reproducibility.md's block is the command's for the default and the paper preset (regenerate:
    python -m replicate costs --write-docs)."""
    monkeypatch.chdir(workflow_dir)
    monkeypatch.setenv("REPLICATE_DATA_DIR", str(data_dir()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    plans = [resources.parse_plan(resources.plan(args)) for _, args in resources.DOCS_PLANS]
    page = (REPO_ROOT / "docs" / "reproducibility.md").read_text(encoding="utf-8")
    assert _generated_block(page) == resources.docs_block(plans).strip()


def test_write_docs_replaces_only_the_block(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"# Costs\n\nbefore\n{resources.BLOCK_BEGIN}\nold\n{resources.BLOCK_END}\nafter\n", encoding="utf-8")
    plans = [resources.parse_plan(PLAN), resources.parse_plan(PLAN.replace("=129", "=6000"))]
    resources.write_docs(plans, page=str(page))
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Costs\n\nbefore\n") and text.endswith(f"{resources.BLOCK_END}\nafter\n")
    assert _generated_block(text) == resources.docs_block(plans).strip() and "old" not in text
    assert resources.table(plans[0]) in text
    assert ("The paper preset (`python -m replicate costs all --configfile config/paper.yaml`): 5 jobs, 102.2 "
            "estimated one-thread hours, 1.4 GPU hours (estimate, not measured).") in text


def test_headline_adds_up_the_jobs_and_names_the_longest():
    jobs = [("press_wolf_train", 120), ("inan_train", 600), ("press_wolf_table", None), ("all", None), ("inan", None)]
    line = console.headline(jobs, cores=2)
    assert line.startswith("Estimated cost: 12.0 one-thread CPU hours in 3 jobs (1 of them cheap")
    assert "on 2 core(s) at least 10.0 h of wall clock; longest job: inan_train, 10.0 one-thread h" in line
    assert resources.MEASURED_ON in line
    assert "6.0 h of wall clock" in console.headline([("press_wolf_train", 360)] * 2, cores=2)
    assert "wall clock as the cluster runs the jobs" in console.headline([("inan_train", 60)], cores=None)
    assert console.headline([("data_summary", None)], cores=8) == ("Estimated cost: 1 cheap jobs (tables, figures, "
                                                                 "data steps), no training.")


@pytest.mark.parametrize("notice, noted", [(3, True), (30, False), (0, False)])
def test_announce_says_how_to_look_first_above_the_notice(notice, noted):
    lines = []
    console.announce([("inan_train", 600)], 2, notice, lines.append)
    assert lines[0].startswith("Estimated cost: 10.0")
    assert (len(lines) == 2 and "snakemake -n TARGETS" in lines[1]) is noted


def test_dry_run_of_an_experiment_target_ends_with_its_cost(workflow_dir):
    """`snakemake -n inan` plans the experiment alone and prints what running it resources."""
    from support.workflow import run_snakemake

    out = run_snakemake(["-n", "inan"], cwd=workflow_dir).stdout
    assert "rule inan_train:" in out and "rule press_wolf_train:" not in out
    cost = out[out.index("Estimated cost:"):]
    assert "one-thread CPU hours" in cost and "longest job: inan_train" in cost.replace("\n", " ")


@pytest.mark.parametrize("preset", ["config/config.yaml", "config/paper.yaml"])
def test_every_time_limit_is_above_its_estimate_by_the_stated_factor(preset, workflow_dir):
    """A cluster job asks for at least LIMIT_OVER_ESTIMATE x its expected wall time (its one_thread_min at its
    threads): the +REAL row's limit once fell below its own estimate."""
    import re

    from support.workflow import run_snakemake

    out = run_snakemake(["-n", "--forceall", "all", "--configfile", preset], cwd=workflow_dir).stdout
    checked = 0
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        runtime, minutes = re.search(r"\bruntime=(\d+)", block), re.search(r"\bone_thread_min=(\d+)", block)
        if not (runtime and minutes):
            continue
        threads = int(m[1]) if (m := re.search(r"\n\s+threads: (\d+)", block)) else 1
        expected = resources.expected_wall_min(int(minutes[1]), threads)
        assert int(runtime[1]) >= resources.LIMIT_OVER_ESTIMATE * expected, block[:300]
        checked += 1
    assert checked > 10
