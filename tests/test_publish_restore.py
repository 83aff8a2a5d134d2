"""``python -m replicate publish --restore``: the bundle's runs back into an empty results folder (a new
machine), after which Snakemake plans no training for them; the refusals (no corpora, a file that differs
from the manifest or from one already in the results folder)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from replicate import cli
from replicate.errors import ReplicateError
from replicate.publish.bundle import restore

from support.workflow import SMOKE_RESULTS, job_counts, run_snakemake, workflow_copy

pytestmark = pytest.mark.slow

# rules whose runs the bundle holds whole (an Inan screen's +AL run with the soft-target record its weights gave)
RESTORED = {"press_wolf_train", "inan_train", "inan_ablation_train", "inan_screen_train", "inan_screen_soft_target",
            "inan_subspace_point", "initial_loss_sweep", "scale_train", "scale_transformer"}
NOT_RESTORED = {"scale_train_recorded"}  # its embedding snapshots are not published


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main(list(args))
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def bundle(smoke_run, tmp_path_factory) -> Path:
    """The smoke run published into an empty bundle."""
    bundle = tmp_path_factory.mktemp("restore") / "measured"
    rc, out = _cli("publish", "--results", str(smoke_run / SMOKE_RESULTS), "--bundle", str(bundle), "--no-readme",
                   "--allow-dirty")
    assert rc == 0, out
    return bundle


def _fresh_checkout(smoke_run: Path, dest: Path) -> Path:
    """A workflow whose results folder holds only the smoke run's prepared data, prepared after the bundle
    was published (a clone on a new machine, then `snakemake <corpora>`)."""
    dest.mkdir()
    wd = workflow_copy(dest)
    data = wd / SMOKE_RESULTS / "data"
    shutil.copytree(smoke_run / SMOKE_RESULTS / "data", data)
    raw = sorted(data.glob("raw/**/*")) + [data / "raw"]
    for path in [*raw, *sorted(p for p in data.rglob("*") if p not in raw)]:  # now: the raw files, then the corpora
        os.utime(path)
    return wd


def test_restored_runs_are_not_trained_again(bundle, smoke_run, tmp_path):
    wd = _fresh_checkout(smoke_run, tmp_path / "checkout")
    smoke = ["-n", "all", "--configfile", "config/smoke.yaml"]
    before = job_counts(run_snakemake(smoke, cwd=wd).stdout)
    assert RESTORED | NOT_RESTORED <= set(before), before

    rc, out = _cli("publish", "--restore", "--bundle", str(bundle), "--results", str(wd / SMOKE_RESULTS))
    assert rc == 0 and "restored into" in out, out
    after = job_counts(run_snakemake(smoke, cwd=wd).stdout)
    assert not RESTORED & set(after), f"restored runs planned again: {after}"
    assert {rule: after.get(rule) for rule in NOT_RESTORED} == {rule: before[rule] for rule in NOT_RESTORED}
    # the runs it leaves out are named with their count: the jobs the plan still holds for them
    left_out = sum(after[rule] for rule in NOT_RESTORED)
    assert f"not restored, so Snakemake trains them again: {left_out} runs" in out and "scale lstm" in out, out
    assert "prepare_data" not in after  # the corpora are older than the restored runs
    # each restored file is the bundle's, byte for byte
    metrics = "press_wolf/small/seed1/metrics.json"
    assert (wd / SMOKE_RESULTS / metrics).read_bytes() == (bundle / metrics).read_bytes()

    again, left_out = restore(bundle, wd / SMOKE_RESULTS)  # a second restore finds every file there already
    assert again and not any(again.values()) and {run.kind for run in left_out} == {"lstm"}


def _with_corpora(root: Path) -> Path:
    for name in ("ptb", "wikitext2"):
        (root / "data" / name).mkdir(parents=True)
        (root / "data" / name / "corpus.pt").write_bytes(b"stand-in")
    return root


def test_no_restore_before_the_corpora_are_prepared(bundle, tmp_path):
    with pytest.raises(ReplicateError, match="prepare the data first: snakemake --cores 2 .*data/ptb/corpus.pt"):
        restore(bundle, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_a_different_file_in_the_results_stops_the_restore_before_any_copy(bundle, tmp_path):
    results = _with_corpora(tmp_path / "results")
    clash = results / "press_wolf/small/seed1/metrics.json"
    clash.parent.mkdir(parents=True)
    clash.write_text("{}")
    with pytest.raises(ReplicateError, match="exists and differs from the bundle's copy"):
        restore(bundle, results)
    assert not (results / "press_wolf/small_wt").exists() and not (results / "inan").exists()


def test_a_bundle_file_that_differs_from_its_manifest_is_not_restored(bundle, tmp_path):
    copy = tmp_path / "measured"
    shutil.copytree(bundle, copy)
    history = copy / "press_wolf/small/seed1/history.csv"
    history.write_text(history.read_text() + "\n")
    with pytest.raises(ReplicateError, match="history.csv differs from MANIFEST.json"):
        restore(copy, _with_corpora(tmp_path / "results"), ["press_wolf"])


def test_only_the_named_experiments_are_restored(bundle, tmp_path):
    results = _with_corpora(tmp_path / "results")
    copied, left_out = restore(bundle, results, ["press_wolf"])
    assert not left_out  # every Press & Wolf run is restorable
    assert copied and all(run.startswith("press_wolf/") for run in copied)
    assert all(json.loads((results / f"{run}/metrics.json").read_text())["valid_ppl"] > 0 for run in copied)
    assert not (results / "inan").exists()
