"""No wrong number reaches a result, a table or the bundle: strict JSON, diverged runs stopped before
metrics.json, tables and publish refusing non-finite numbers, runs mislabelled with a preset and tables built
from skipped runs, checkpoints checked against their checksum, an all-or-nothing restore, result files 0644, a
full disk at the engine's checkpoint named, a section 6.2 point refusing bad values named."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import json
import math
import os
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from replicate import cli
from support.workflow import REPO_ROOT
from replicate import io as rio
from replicate.data import Corpus
from replicate.errors import ReplicateError
from replicate.lstm import runner
from replicate.lstm.config import resolve
from replicate.press_wolf.cells import cell_settings
from replicate.publish import bundle as bundle_mod
from replicate.publish import checks
from replicate.publish.bundle import restore

SPEC = {"name": "tiny/seed1", "settings": {"size": "small", "hidden_size": 8, "batch_size": 4, "bptt": 5,
                                           "epochs": 1, "max_batches": 3, "eval_max_tokens": 200, "log_every": 100}}


def quiet(*_):
    pass


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    g = torch.Generator().manual_seed(0)
    train = (torch.arange(3000) % 40 + (torch.rand(3000, generator=g) < 0.3) * 7) % 40
    return Corpus([f"w{i}" for i in range(40)], train, train[:300].clone(), train[300:600].clone())


# ----------------------------------------------------------------------------- 1. every number written is finite
def test_strict_json_names_the_file_and_the_key_and_writes_nothing(tmp_path):
    path = tmp_path / "metrics.json"
    rio.write_json(path, {"valid_ppl": 120.0})
    bad = {"valid_ppl": 1.0, "history": [{"epoch": 1, "valid_ppl": math.inf}], "test": torch.tensor(math.nan)}
    with pytest.raises(ReplicateError) as err:
        rio.write_json(path, bad)
    message = str(err.value)
    assert str(path) in message and "history[0].valid_ppl = inf" in message and "test = nan" in message
    assert "fix:" in message
    assert json.loads(path.read_text()) == {"valid_ppl": 120.0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]
    rio.write_json(path, {"undefined": None})  # null is how an undefined value is written
    assert "null" in path.read_text()


def test_a_diverged_run_fails_named_and_writes_no_metrics(corpus, tmp_path, monkeypatch):
    """The perplexity overflows (a mean loss past ~709 nats is inf) while the loss stays finite: the run stops
    with a named error, metrics.json is never written."""
    from replicate.lstm import train

    real = train.Trainer.final_metrics

    def overflowed(self):
        return {**real(self), "valid_ppl": math.inf}

    monkeypatch.setattr(train.Trainer, "final_metrics", overflowed)
    with pytest.raises(ReplicateError, match=r"run tiny/seed1: non-finite result \(valid_ppl = inf\): the run "
                                             r"diverged \(lr 1, clip 5\); no metrics.json is written") as err:
        runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    assert "lower the learning rate or the clip value" in str(err.value)
    assert not (tmp_path / "metrics.json").exists()


def test_a_finite_run_still_writes_its_metrics(corpus, tmp_path):
    result = runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    assert math.isfinite(result["valid_ppl"]) and json.loads((tmp_path / "metrics.json").read_text())["valid_ppl"]


def test_a_subspace_run_whose_w_never_moved_is_refused(tmp_path):
    """``inan subspace`` with no epoch trained and W from 0: the distance is undefined, not written as NaN."""
    from replicate.inan.subspace_exp import run_one

    g = torch.Generator().manual_seed(0)
    small = Corpus([f"w{i}" for i in range(30)], torch.randint(0, 30, (600,), generator=g),
                   torch.randint(0, 30, (100,), generator=g), torch.randint(0, 30, (10,), generator=g))
    settings = {"slice_words": 300, "hidden_size": 6, "num_layers": 2, "init_scale": 0.1, "batch_size": 3, "bptt": 5,
                "lr": 0.5, "epochs": 0, "max_epoch": 1, "decay": 1.0, "clip": 5.0, "eval_max_tokens": 50,
                "optimizer": "sgd", "output_init": "zero"}
    with pytest.raises(ReplicateError, match=r"W is still exactly 0 after 0 epochs.*nothing is written"):
        run_one(settings, small, tmp_path / "r", seed=1, tau=5.0, beta=1.0, log=quiet)


def _metrics(path: Path, **numbers) -> Path:
    """A metrics.json of a finished Press & Wolf run with ``numbers`` (json.dumps writes inf as Infinity, as the
    writer did before strict JSON)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"run": f"{path.parent.parent.name}/{path.parent.name}", "train_ppl": 50.0, "train_clean_ppl": 49.0,
              "valid_ppl": 120.0, "test_ppl": 115.0, "num_parameters": 10, "epochs_completed": 1,
              "resolved": {"model": {"projection": False}, "train": {}}, **numbers}
    path.write_text(json.dumps(record))
    return path


def test_the_press_wolf_table_refuses_a_non_finite_run(tmp_path):
    from replicate.press_wolf.table import collect

    good = _metrics(tmp_path / "small/seed1/metrics.json")
    bad = _metrics(tmp_path / "small_wt/seed1/metrics.json", valid_ppl=math.inf)
    assert len(collect([good])) == 1
    with pytest.raises(ReplicateError, match=r"small_wt/seed1/metrics.json: valid_ppl = inf is not finite"):
        collect([good, bad])


def test_the_inan_tables_refuse_non_finite_runs_and_points(tmp_path):
    from replicate.inan import report

    run = _metrics(tmp_path / "vd/metrics.json", test_ppl=math.nan, inan={"variant": "vd"})
    with pytest.raises(ReplicateError, match=r"test_ppl = nan is not finite"):
        report.ablation([run], "smoke")
    point = tmp_path / "tau10_beta1.json"
    point.write_text(json.dumps({"tau": 10, "beta": 1, "distance_mean": math.nan, "runs": []}))
    with pytest.raises(ReplicateError, match=r"tau10_beta1.json: distance_mean = nan is not finite"):
        report.figure1_epochs([point], [("a", 10.0, 1.0)], "smoke")


# ----------------------------------------------------------------------------- 2. publish: presets, numbers, tables
def _pw_run(results: Path, cell: str, protocol: str, preset: str, **numbers) -> Path:
    """A finished Press & Wolf run as ``train_run`` records it, trained with ``preset``'s settings, labelled
    ``protocol``."""
    settings = cell_settings(cell, checks.preset(preset)["press_wolf"].get("overrides"), seed=1)
    model, train = resolve(settings, 10000)
    record = {"run": f"{cell}/seed1", "settings": settings,
              "resolved": {"model": dataclasses.asdict(model), "train": dataclasses.asdict(train)},
              "epochs_completed": train.epochs, "train_ppl": 60.0, "train_clean_ppl": 58.0, "valid_ppl": 130.0,
              "test_ppl": 125.0, "num_parameters": 4_651_600, "code_version": "c" * 16,
              "provenance": {"config": {"protocol": protocol, "dataset": "ptb", "settings": settings},
                             "git": {"commit": "0" * 40, "dirty": False}}, **numbers}
    path = results / "press_wolf" / cell / "seed1" / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    (path.parent / "history.csv").write_text("epoch,valid_ppl\n1,130.0\n")
    return path


def _table6(results: Path, cells: list[str], valid: float = 130.0) -> Path:
    path = results / "tables" / "press_wolf_table6.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"cell": c, "protocol": "smoke", "valid_ours": valid} for c in cells]).to_csv(path, index=False)
    return path


def test_publish_refuses_a_smoke_run_labelled_reduced_and_names_the_settings(tmp_path):
    results = tmp_path / "results"
    _pw_run(results, "small", protocol="reduced", preset="smoke")
    with pytest.raises(ReplicateError) as err:
        bundle_mod.plan(results, tmp_path / "bundle")
    message = str(err.value)
    assert "press_wolf/small/seed1 is labelled reduced but did not train with config/config.yaml" in message
    assert "engine.train.epochs: 2 -> 13" in message and "engine.train.max_batches: 4 -> None" in message
    assert "--configfile config/<preset>.yaml" in message and "@ ablation cell" in message


def test_publish_takes_a_run_whose_settings_are_its_presets(tmp_path):
    results = tmp_path / "results"
    _pw_run(results, "small", protocol="smoke", preset="smoke")
    plan = bundle_mod.plan(results, tmp_path / "bundle")
    assert [r.id for r in plan.scans["press_wolf"].runs] == ["press_wolf/small/seed1"]
    cell = "small_wt_pr@pr_form=squared@epochs=4"  # an ablation: its own overrides are part of its name
    record = json.loads(_pw_run(tmp_path / "other", cell, protocol="reduced", preset="reduced").read_text())
    assert checks.mismatch("press_wolf", "lstm", f"press_wolf/{cell}/seed1", "reduced", record) is None
    record["resolved"]["train"]["lr"] = 0.5  # a setting no cell name carries
    assert "engine.lrs" in checks.mismatch("press_wolf", "lstm", f"press_wolf/{cell}/seed1", "reduced", record)


def test_publish_refuses_a_run_with_non_finite_numbers(tmp_path):
    results = tmp_path / "results"
    _pw_run(results, "small", protocol="smoke", preset="smoke")
    _pw_run(results, "small_wt", protocol="smoke", preset="smoke", valid_ppl=math.inf)
    with pytest.raises(ReplicateError, match=r"press_wolf/small_wt/seed1 has non-finite numbers \(press_wolf/"
                                             r"small_wt/seed1/metrics.json: valid_ppl = inf\)"):
        bundle_mod.plan(results, tmp_path / "bundle")


def test_publish_never_ships_a_table_built_from_a_skipped_run_or_holding_an_inf(tmp_path):
    results = tmp_path / "results"
    _pw_run(results, "small", protocol="smoke", preset="smoke")
    _table6(results, ["small", "small_wt"])
    (results / "press_wolf/small_wt/seed1").mkdir(parents=True)
    (results / "press_wolf/small_wt/seed1/checkpoint.pt").write_bytes(b"being trained again")
    with pytest.raises(ReplicateError, match=r"tables/press_wolf_table6.csv has a row of press_wolf/small_wt/seed1, "
                                             r"which is skipped \(no readable metrics.json\)"):
        bundle_mod.plan(results, tmp_path / "bundle")
    _table6(results, ["small"], valid=math.inf)
    with pytest.raises(ReplicateError, match=r"press_wolf_table6.csv holds non-finite numbers \(valid_ours row 1 = inf"):
        bundle_mod.plan(results, tmp_path / "bundle")
    _table6(results, ["small"])
    assert bundle_mod.plan(results, tmp_path / "bundle").scans["press_wolf"].files


# ----------------------------------------------------------------------------- 3. checkpoints carry a checksum
def test_a_checkpoint_with_one_flipped_byte_is_refused_on_resume(corpus, tmp_path):
    runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    ckpt = tmp_path / "checkpoint.pt"
    assert rio.checksum_status(ckpt) is True
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0x01
    ckpt.write_bytes(bytes(data))
    (tmp_path / "metrics.json").unlink()
    with pytest.raises(ReplicateError) as err:
        runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    message = str(err.value)
    assert f"checkpoint {ckpt} does not match its checksum in {ckpt}.sha256" in message
    assert "to train the run from scratch" in message and "delete" in message and "resumes unchecked" in message
    assert not (tmp_path / "metrics.json").exists()


def test_a_garbled_checkpoint_names_the_intact_one_before_it_which_resumes_bit_identically(corpus, tmp_path):
    """Each save keeps the checkpoint it replaces (checkpoint.prev.pt, checksummed); when the current one is
    garbled, the refusal names the previous one, and resuming from it ends as the uninterrupted run does; a
    finished run drops it."""
    spec = {**SPEC, "settings": {**SPEC["settings"], "epochs": 3}}
    whole = runner.train_run(spec, corpus, tmp_path / "whole", threads=1, device="cpu", log=quiet)
    assert not (tmp_path / "whole" / runner.PREVIOUS).exists()

    def stop_after_two(epoch, model, record):
        if epoch == 2:
            raise KeyboardInterrupt

    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        runner.train_run(spec, corpus, run, threads=1, device="cpu", log=quiet, on_epoch=stop_after_two)
    ckpt, prev = run / "checkpoint.pt", run / runner.PREVIOUS
    assert rio.checksum_status(prev) is True and torch.load(prev, weights_only=True)["epoch"] == 1
    assert torch.load(ckpt, weights_only=True)["epoch"] == 2
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0x01
    ckpt.write_bytes(bytes(data))
    with pytest.raises(ReplicateError) as err:
        runner.train_run(spec, corpus, run, threads=1, device="cpu", log=quiet)
    assert f"move {prev} and its {prev.name}.sha256 over checkpoint.pt and checkpoint.pt.sha256" in str(err.value)
    os.replace(prev, ckpt)
    os.replace(rio.checksum_path(prev), rio.checksum_path(ckpt))
    again = runner.train_run(spec, corpus, run, threads=1, device="cpu", log=quiet)
    assert again["valid_ppl"] == whole["valid_ppl"] and again["test_ppl"] == whole["test_ppl"]
    assert not prev.exists() and not rio.checksum_path(prev).exists()


def test_a_checkpoint_written_before_checksums_still_resumes_and_says_so(corpus, tmp_path):
    first = runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    rio.checksum_path(tmp_path / "checkpoint.pt").unlink()  # as the checkpoints of runs in flight today
    (tmp_path / "metrics.json").unlink()
    logged = []
    again = runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=logged.append)
    assert any("has no checksum" in line and "resuming from it unchecked" in line for line in logged), logged
    assert any("resumed from" in line for line in logged)
    assert again["valid_ppl"] == first["valid_ppl"]


def test_a_kill_between_the_checksum_and_the_rename_leaves_a_pair_that_checks(tmp_path, monkeypatch):
    ckpt = tmp_path / "checkpoint.pt"
    rio.torch_save(ckpt, {"epoch": 1})
    real = os.replace

    def killed(src, dst):
        if Path(dst) == ckpt:
            raise KeyboardInterrupt  # after the new checksum is written, before the new file is in place
        real(src, dst)

    monkeypatch.setattr(rio.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        rio.torch_save(ckpt, {"epoch": 2})
    monkeypatch.setattr(rio.os, "replace", real)
    assert torch.load(ckpt, weights_only=True) == {"epoch": 1} and rio.checksum_status(ckpt) is True
    rio.torch_save(ckpt, {"epoch": 2})
    assert rio.checksum_status(ckpt) is True and json.loads(rio.checksum_path(ckpt).read_text())["replaces"] is None
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[:-1] + bytes([data[-1] ^ 0x01]))
    assert rio.checksum_status(ckpt) is False


# ----------------------------------------------------------------------------- 3b. a fault is not rerun as it is
DIVERGES = {**SPEC, "settings": {**SPEC["settings"], "epochs": 2, "max_batches": 10, "lr": 100, "clip": 1000}}


def test_a_diverged_run_records_its_fault_and_its_rerun_is_refused_until_a_setting_changes(corpus, tmp_path):
    """lr 100, clip 1000 (as small@lr=100@clip=1000): the perplexity overflows after the last checkpoint. fault.json
    records it; the same settings are refused at once, naming the fault, the checkpoint kept and the ways on."""
    fault, ckpt = tmp_path / runner.FAULT, tmp_path / "checkpoint.pt"
    with pytest.raises(ReplicateError, match="non-finite result") as err:
        runner.train_run(DIVERGES, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    assert f"refused ({fault} records this fault" in str(err.value) and "@lr=..." in str(err.value)
    record = rio.read_json(fault)
    assert record["checkpoint"] == str(ckpt) and "valid_ppl = inf" in record["fault"]
    logged = []
    with pytest.raises(ReplicateError) as err:
        runner.train_run(DIVERGES, corpus, tmp_path, threads=1, device="cpu", log=logged.append)
    message = str(err.value)
    assert "run tiny/seed1 is not rerun" in message and f"resume its checkpoint {ckpt}" in message
    assert "valid_ppl = inf" in message and "@lr=..." in message and f"delete {fault} to retry" in message
    assert not any("resumed from" in line for line in logged), "refused before it trains"
    fingerprint = {**record["fingerprint"], "code_version": "other code"}
    assert runner.check_fault(fault, fingerprint, "tiny/seed1") is None  # other code (or settings): no refusal
    fault.unlink()  # the retry that the message offers: it resumes and diverges again
    with pytest.raises(ReplicateError, match="non-finite result"):
        runner.train_run(DIVERGES, corpus, tmp_path, threads=1, device="cpu", log=quiet)


def test_a_non_finite_loss_is_recorded_as_the_runs_fault(corpus, tmp_path):
    def poison(info):  # NaN weights after the 2nd step's gradient: the 3rd step's loss is NaN
        if info.step == 1:
            next(info.model.parameters()).data.fill_(math.nan)

    with pytest.raises(ReplicateError, match=r"non-finite training loss \(nan\) at epoch 1, batch 3/3"):
        runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet, on_step=poison)
    assert rio.read_json(tmp_path / runner.FAULT)["checkpoint"] is None  # none written before the fault
    with pytest.raises(ReplicateError, match=r"is not rerun: .* it would train from scratch and hit it again"):
        runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)


# ----------------------------------------------------------------------------- 4. restore: all or nothing
def test_restore_refuses_a_bundle_missing_a_listed_file_and_restores_nothing(tmp_path):
    bundle, results = tmp_path / "measured", tmp_path / "results"
    run = bundle / "press_wolf/small/seed1"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text("{}")
    files = {rel: {"sha256": "0" * 64, "bytes": 2, "experiment": "press_wolf"}
             for rel in ("press_wolf/small/seed1/metrics.json", "press_wolf/small/seed1/history.csv")}
    (bundle / "MANIFEST.json").write_text(json.dumps({"files": files}))
    with pytest.raises(ReplicateError, match=r"lacks 1 file\(s\) its MANIFEST.json lists \(press_wolf/small/seed1/"
                                             r"history.csv\); nothing restored"):
        restore(bundle, results)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main(["publish", "--restore", "--bundle", str(bundle), "--results", str(results)])
    assert rc != 0 and "history.csv" in out.getvalue()
    assert not results.exists()


# ----------------------------------------------------------------------------- 5. result files
def test_result_files_are_readable_by_all_and_stale_temporaries_go(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    stale, fresh = tmp_path / ".t.json.old.tmp", tmp_path / ".t.json.live.tmp"
    for p in (stale, fresh):
        p.write_bytes(b"")
    hours_ago = time.time() - 2 * rio.STALE_SECONDS
    os.utime(stale, (hours_ago, hours_ago))
    rio.write_json(tmp_path / "t.json", {"v": 1})
    assert (tmp_path / "t.json").stat().st_mode & 0o777 == 0o666 & ~umask
    assert not stale.exists() and fresh.exists()  # a fresh one may be another writer's


# ----------------------------------------------------------------------------- 6. I/O faults
def test_a_full_disk_at_the_engines_checkpoint_stops_the_run_naming_the_checkpoint(corpus, tmp_path, monkeypatch):
    """The run as the runner drives it: the frozen engine saves through replicate.io, so a full disk during
    torch.save is a named error with the checkpoint's path (not torch's RuntimeError), and no result is written."""
    def full(obj, fh, *args, **kwargs):
        fh.write(b"PK")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(ReplicateError, match=rf"cannot write {tmp_path / 'checkpoint.pt'}: the disk is full"):
        runner.train_run(SPEC, corpus, tmp_path, threads=1, device="cpu", log=quiet)
    assert not (tmp_path / "metrics.json").exists() and not list(tmp_path.glob(".*.tmp"))


# ----------------------------------------------------------------------------- 7. a section 6.2 point: bad values named
POINT = {"slice_words": 100, "hidden_size": 4, "num_layers": 2, "init_scale": 0.1, "batch_size": 2, "bptt": 5,
         "lr": 0.01, "epochs": 1, "max_epoch": 1, "decay": 1.0, "clip": 5.0, "eval_max_tokens": 20, "max_batches": 2,
         "log_every": 100, "seeds": [1], "readings": {"tiny": {}}, "figure_reading": "tiny", "compare_readings": []}


def _subspace(corpus, tmp_path, run_id="subspace/tiny/tau10_beta1", **change) -> tuple[int, str]:
    """``python -m replicate train inan <run_id>`` of a tiny 6.2 point, run in ``tmp_path`` (results under res/)."""
    (tmp_path / "res" / "data" / "ptb").mkdir(parents=True)
    rio.torch_save(tmp_path / "res" / "data" / "ptb" / "corpus.pt", {"vocab": corpus.vocab, "train": corpus.train,
                                                                    "valid": corpus.valid, "test": corpus.test})
    overlay = tmp_path / "tiny.yaml"
    overlay.write_text(json.dumps({"results_dir": "res", "inan": {"subspace": {**POINT, **change}}}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main(["train", "inan", run_id, "--threads", "1", "--configfile",
                       str(REPO_ROOT / "config" / "config.yaml"), str(overlay)])
    return rc, out.getvalue()


@pytest.mark.parametrize("run_id, change, words", [
    ("subspace/tiny/tau10_beta1.5", {}, "beta=1.5 is not allowed: 1.5 is greater than the maximum of 1"),
    ("subspace/tiny/tau-1_beta1", {}, "tau=-1 is not allowed"),
    ("subspace/tiny/tau10.0_beta1", {}, "tau10.0 is not the one spelling of its value"),
    ("subspace/tiny/tau10_beta1", {"seeds": []}, "inan.subspace.seeds=[] is not allowed"),
    ("subspace/tiny/tau10_beta1", {"seeds": ["a"]}, "'a' is not of type 'integer'"),
    ("subspace/tiny/tau10_beta1", {"slice_words": 5}, "inan.subspace.slice_words=5 is not allowed"),
    ("subspace/tiny/tau10_beta1", {"lrr": 1}, "unknown key 'inan.subspace.lrr' (did you mean 'lr'?)"),
])
def test_a_subspace_point_names_a_bad_value_and_writes_nothing(corpus, tmp_path, monkeypatch, run_id, change, words):
    monkeypatch.chdir(tmp_path)
    rc, out = _subspace(corpus, tmp_path, run_id, **change)
    assert rc == 2 and words in out and "fix:" in out and "Traceback" not in out, out
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["data"]


def test_a_subspace_point_writes_its_json_readable_by_all_and_no_temporary(corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    umask = os.umask(0o022)
    os.umask(umask)
    rc, out = _subspace(corpus, tmp_path)
    assert rc == 0, out
    point = tmp_path / "res" / "inan" / "subspace" / "tiny" / "tau10_beta1.json"
    assert json.loads(point.read_text())["n_seeds"] == 1
    for written in (point, tmp_path / "res" / "inan" / "subspace" / "runs" / "tiny" / "tau10_beta1" / "seed1.json"):
        assert written.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob(".*.tmp"))
