"""Cluster resource estimates (replicate/resources.py, workflow/rules/resources.smk) and the SLURM
profile's validity. Fast; one dry run through the SLURM profile (no cluster needed)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from support.workflow import REPO_ROOT, SMOKE_RESULTS, run_snakemake
from replicate import resources as res
from replicate.lstm.config import resolve
from replicate.press_wolf.cells import CELLS, cell_settings

SLURM_PROFILE = REPO_ROOT / "profiles" / "slurm" / "config.yaml"
DEFAULT_PROFILE = REPO_ROOT / "profiles" / "default" / "config.yaml"


def estimate(cell, dataset="ptb", device="cpu", threads=2, **overrides):
    shape = res.corpus_shape(dataset)
    model, train = resolve(cell_settings(cell, overrides), shape["vocab"])
    return res.lstm_estimate(model, train, shape, device, threads)


@pytest.mark.parametrize("cell,expected", [
    ("small", 4_653_200), ("small_wt", 2_653_200), ("small_pr", 4_693_400), ("small_wt_pr", 2_693_400),
    ("large", 66_034_000), ("large_wt", 51_034_000),
])
def test_parameter_counts_match_papers(cell, expected):
    """P&W size column: small 4.65M / 2.65M, +PR 4.69M / 2.69M, large 66M / 51M."""
    assert estimate(cell).parameters == expected


@pytest.mark.parametrize("tying,projection", [("untied", False), ("tied", True), ("tied_nobias", False)])
def test_parameter_count_equals_the_model(tying, projection):
    from replicate.lstm.model import LSTMLM

    model, _ = resolve({"size": "small", "hidden_size": 32, "tying": tying, "projection": projection}, 500)
    assert res.lstm_parameters(500, 32, 2, tying, projection) == LSTMLM(model).num_parameters()


def test_bigger_models_get_more_memory_and_time():
    cells = ["small", "medium", "large"]
    for device in ("cpu", "cuda"):
        est = [estimate(c, device=device) for c in cells]
        assert [e.mem_mb for e in est] == sorted(e.mem_mb for e in est) and est[0].mem_mb < est[-1].mem_mb
        assert est[0].runtime_min < est[1].runtime_min < est[2].runtime_min, device
    # a bigger vocabulary (WikiText-2) and an untied output layer need more
    assert estimate("small", "wikitext2").mem_mb > estimate("small").mem_mb
    assert estimate("small", "wikitext2").runtime_min > estimate("small").runtime_min
    assert estimate("large").mem_mb > estimate("large_wt").mem_mb
    # more threads -> less CPU time; a GPU is faster than a CPU at large size
    assert estimate("large", threads=8).runtime_min < estimate("large", threads=2).runtime_min
    assert estimate("large", device="cuda").runtime_min < estimate("large").runtime_min


def test_retries_scale_memory_and_time():
    e = estimate("medium")
    assert e.for_attempt(1) == e
    assert (e.for_attempt(3).mem_mb, e.for_attempt(3).runtime_min) == (3 * e.mem_mb, 3 * e.runtime_min)


def test_smoke_and_paper_cells_are_plausible():
    smoke = yaml.safe_load((REPO_ROOT / "config" / "smoke.yaml").read_text())["press_wolf"]
    e = estimate("small", **smoke.get("overrides", {}))
    assert e.runtime_min <= res.STARTUP_MINUTES + 5 and e.mem_mb <= 2048
    # full protocol: the small model (~1 h measured on 2 threads here) gets hours, not minutes or weeks
    assert 60 <= estimate("small").runtime_min <= 8 * 60
    assert 2 * 60 <= estimate("large", device="cuda").runtime_min <= 48 * 60
    for cell in CELLS:
        assert estimate(cell).mem_mb % res.MEM_STEP_MB == 0


def test_sweep_estimate_grows_with_width():
    section = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())["initial_loss"]
    est = [res.sweep_estimate(section, w, 2) for w in (64, 1024, 4096)]
    assert est[0].mem_mb < est[1].mem_mb < est[2].mem_mb
    assert est[0].runtime_min <= est[1].runtime_min < est[2].runtime_min


def test_device_kind():
    assert [res.device_kind(d) for d in ("auto", "cpu", "cuda", "cuda:1")] == ["cpu", "cpu", "cuda", "cuda"]
    with pytest.raises(KeyError, match="wikitext103"):
        res.corpus_shape("wikitext103")


def _eval_resource(value, attempt, threads=2):
    return value if isinstance(value, int) else eval(str(value), {"attempt": attempt, "threads": threads})


def test_the_memory_limit_defaults_to_this_machines_memory(tmp_path, monkeypatch):
    """/proc/meminfo's MemTotal, rounded down to 0.1 GiB; a container's lower cgroup limit wins, "max" is none."""
    total_kib = int(re.search(r"^MemTotal:\s+(\d+) kB", open("/proc/meminfo").read(), re.M).group(1))
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    monkeypatch.setattr(res, "CGROUP_MEMORY_LIMITS", (v2, v1))
    assert res.machine_memory_gib() == int(total_kib / 2**20 * 10) / 10
    v2.write_text("max\n")
    v1.write_text(f"{2**63 - 4096}\n")
    assert res.machine_memory_gib() == int(total_kib / 2**20 * 10) / 10
    v2.write_text(f"{3 * 2**30 + 2**29}\n")
    assert res.machine_memory_gib() == 3.5
    schema = yaml.safe_load((REPO_ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert "default" not in schema["properties"]["max_job_memory_gib"]  # not a fixed number: the machine's


def test_slurm_profile_is_valid():
    prof = yaml.safe_load(SLURM_PROFILE.read_text())
    assert prof["executor"] == "slurm"
    assert prof["retries"] >= 1 and prof["jobs"] >= 1 and prof["latency-wait"] >= 30
    defaults = prof["default-resources"]
    # a GPU key here would put every job (data, tables) on a GPU
    assert not {"gpu", "gpu_model", "gres"} & set(defaults)
    sections = [defaults, *prof["set-resources"].values()]
    for res_map in sections:
        for key in ("mem_mb", "runtime", "cpus_per_task"):
            if key in res_map:
                for attempt in (1, 2):
                    value = _eval_resource(res_map[key], attempt)
                    assert isinstance(value, int) and value > 0, (key, res_map[key])
        assert not ("mem_mb" in res_map and "mem_mb_per_cpu" in res_map)
        assert not ("gpu" in res_map and "gres" in res_map)
    # growth on retry
    assert _eval_resource(defaults["mem_mb"], 2) > _eval_resource(defaults["mem_mb"], 1)
    # every rule named in set-resources exists
    rules = set(run_snakemake(["--list-rules"], cwd=REPO_ROOT).stdout.split())
    unknown = set(prof["set-resources"]) - rules
    assert not unknown, f"set-resources names unknown rules: {unknown}"
    # the model-size estimates must not be shadowed: set-resources wins over the rule's functions
    for rule in ("press_wolf_train", "inan_train", "inan_ablation_train"):
        assert not {"mem_mb", "runtime"} & set(prof["set-resources"].get(rule, {})), rule


def test_default_workflow_profile_does_not_undo_the_cluster_profile():
    """profiles/default is loaded as the WORKFLOW profile on top of --profile profiles/slurm and wins per
    key: it must not set a key of the SLURM profile to another value (e.g. latency-wait 5 instead of 60)."""
    default = yaml.safe_load(DEFAULT_PROFILE.read_text()) or {}
    slurm = yaml.safe_load(SLURM_PROFILE.read_text())
    clashes = {k: (default[k], slurm[k]) for k in set(default) & set(slurm) if default[k] != slurm[k]}
    assert not clashes, f"profiles/default overrides the SLURM profile: {clashes}"


def test_dry_run_through_slurm_profile_asks_gpu_and_size_estimates(workflow_dir):
    """No cluster needed: the planned jobs carry the estimates, and gpu=1 only when device is cuda."""
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="pip install -e '.[slurm]'")
    proc = run_snakemake(["-n", "all", "--profile", "profiles/slurm", "--configfile", "config/paper.yaml",
                          "--config", "device=cuda"], cwd=workflow_dir)
    jobs = re.findall(r"rule press_wolf_train:.*?wildcards: cell=(\w+), seed=\d+\n\s+resources: ([^\n]+)",
                      proc.stdout + proc.stderr, flags=re.S)
    found = {cell: dict(kv.split("=", 1) for kv in resources.split(", ")) for cell, resources in jobs}
    assert {"small", "large"} <= set(found), found
    for cell, resources in found.items():
        assert resources["gpu"] == "1", (cell, resources)
        assert int(resources["mem_mb"]) == estimate(cell, device="cuda").mem_mb, (cell, resources)
    assert int(found["large"]["runtime"]) > int(found["small"]["runtime"])
    proc = run_snakemake(["-n", f"{SMOKE_RESULTS}/press_wolf/small/seed1/metrics.json", "--profile", "profiles/slurm",
                          "--configfile", "config/smoke.yaml"], cwd=workflow_dir)
    assert re.search(r"resources: [^\n]*gpu=0", proc.stdout + proc.stderr)


@pytest.mark.slow
def test_corpus_shapes_match_prepared_corpora(smoke_run):
    for dataset, shape in res.CORPUS_SHAPES.items():
        stats = json.loads((smoke_run / SMOKE_RESULTS / f"data/{dataset}/stats.json").read_text())
        assert stats["vocab_size"] == shape["vocab"]
        assert {s: stats["tokens"][s] for s in ("train", "valid", "test")} == {
            s: shape[s] for s in ("train", "valid", "test")}
