"""Fault injection: an inf in the augmented-loss term, a SIGKILL during a checkpoint write, a full disk or a
read-only folder on a checkpoint or result write (the engine's save included). Each ends in a named error that
names the file written, and leaves every earlier file readable."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from support.workflow import REPO_ROOT
from replicate import io as rio
from replicate.data import Corpus
from replicate.errors import ReplicateError
from replicate.inan.train import run_settings
from replicate.lstm.runner import train_run

V = 30
SIZE = {"hidden_size": 8, "num_layers": 1, "init_scale": 0.1, "dropout_rate": 0.3, "batch_size": 2, "bptt": 3,
        "lr": 1.0, "epochs": 1, "max_epoch": 1, "decay": 0.5, "clip": 5.0, "tau": 10.0, "gamma": 0.5,
        "max_batches": 6, "eval_max_tokens": 20, "log_every": 1000}


def _corpus() -> Corpus:
    tokens = torch.randint(0, V, (300,), generator=torch.Generator().manual_seed(0))
    return Corpus(vocab=[f"w{i}" for i in range(V)], train=tokens[:200], valid=tokens[200:250], test=tokens[250:])


def test_inf_in_the_augmented_loss_stops_the_run_and_writes_no_result(tmp_path, monkeypatch):
    """The +AL term turns inf at its 3rd call (patched, not a real tau): the engine's guard stops the run with a
    named error, metrics.json is never written, and a checkpoint that exists holds finite weights."""
    from replicate.inan import losses

    real, calls = losses.augmented_loss, []

    def inf_at_third(*args, **kwargs):
        calls.append(1)
        value = real(*args, **kwargs)
        return value * float("inf") if len(calls) == 3 else value

    monkeypatch.setattr(losses, "augmented_loss", inf_at_third)
    engine, al = run_settings(SIZE, "small", "al", seed=1)
    with pytest.raises(ReplicateError, match=r"inan/ptb/small_al.*epoch 1, batch 3/"):
        train_run({"name": "inan/ptb/small_al", "settings": engine}, _corpus(), tmp_path, log=lambda s: None,
                  extra_loss=al)
    assert len(calls) == 3 and not (tmp_path / "metrics.json").exists()
    if (tmp_path / "checkpoint.pt").exists():
        state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
        assert all(bool(torch.isfinite(t).all()) for t in state["model"].values())


KILLED_WRITER = textwrap.dedent("""
    import sys, time, torch
    from replicate import io as rio

    def slow_save(obj, fh, *args, **kwargs):  # writes half an archive, says so, then waits for the kill
        fh.write(b"PK" + b"x" * 4096)
        fh.flush()
        print("writing", flush=True)
        time.sleep(60)

    torch.save = slow_save
    rio.torch_save(sys.argv[1], {"epoch": 2})
""")


def test_sigkill_during_a_checkpoint_write_keeps_the_previous_checkpoint(tmp_path):
    ckpt = tmp_path / "checkpoint.pt"
    rio.torch_save(ckpt, {"epoch": 1, "weights": torch.ones(3)})
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(ckpt)], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        assert proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    state = torch.load(ckpt, weights_only=True)
    assert state["epoch"] == 1 and torch.equal(state["weights"], torch.ones(3))
    assert [p.name for p in tmp_path.glob(".checkpoint.pt.*.tmp")]  # the half-written temporary, never the file


def test_a_full_disk_on_a_checkpoint_write_keeps_the_previous_one(tmp_path, monkeypatch):
    ckpt = tmp_path / "checkpoint.pt"
    rio.torch_save(ckpt, {"epoch": 1})

    def full(obj, fh, *args, **kwargs):
        fh.write(b"PK" + b"x" * 1024)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(rio.WriteError, match=rf"cannot write {ckpt}: the disk is full \(No space left on device\)"):
        rio.torch_save(ckpt, {"epoch": 2})
    assert torch.load(ckpt, weights_only=True) == {"epoch": 1} and rio.checksum_status(ckpt) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256"]  # no temporary


def test_a_full_disk_on_a_result_write_keeps_the_previous_result(tmp_path, monkeypatch):
    metrics = tmp_path / "metrics.json"
    rio.write_json(metrics, {"valid_ppl": 120.0})
    real = type(metrics).write_bytes

    def full(path, data):
        real(path, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(type(metrics), "write_bytes", full)
    with pytest.raises(rio.WriteError, match=rf"cannot write {metrics}: the disk is full") as err:
        rio.write_json(metrics, {"valid_ppl": 99.0})
    assert f"df -h {tmp_path}" in str(err.value) and "rerun the same command" in str(err.value)
    assert json.loads(metrics.read_text()) == {"valid_ppl": 120.0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_torchs_own_archive_error_on_a_full_disk_names_the_checkpoint(tmp_path, monkeypatch):
    """What a full disk gives from inside torch.save when the file's own flush raises nothing more: the error
    of torch's archive writer, named with the checkpoint's path instead of a bare RuntimeError."""
    ckpt = tmp_path / "checkpoint.pt"

    def short_write(obj, fh, *args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")

    monkeypatch.setattr(torch, "save", short_write)
    with pytest.raises(rio.WriteError, match=rf"cannot write {ckpt}: torch's archive writer failed \(\[enforce fail"):
        rio.torch_save(ckpt, {"epoch": 1})
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(torch, "save", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("other")))
    with pytest.raises(RuntimeError, match="^other$"):  # not a write fault: passed on as it is
        rio.torch_save(ckpt, {"epoch": 1})


@pytest.mark.parametrize("code, reason", [(errno.EACCES, "no permission to write there"),
                                          (errno.EROFS, "the file system is read-only")])
def test_a_read_only_folder_names_the_file_written(tmp_path, monkeypatch, code, reason):
    """mkstemp in a folder that takes no new file (chmod'ed or mounted read-only; simulated: the suite may run
    as root, whom a chmod does not stop)."""
    target = tmp_path / "results" / "metrics.json"

    def refused(prefix, suffix, dir):  # noqa: A002 - mkstemp's keyword
        raise OSError(code, os.strerror(code), os.path.join(dir, f"{prefix}abc{suffix}"))

    monkeypatch.setattr(rio.tempfile, "mkstemp", refused)
    with pytest.raises(rio.WriteError, match=rf"cannot write {target}: {reason}") as err:
        rio.write_json(target, {"valid_ppl": 1.0})
    assert (f"make {target.parent} writable" in str(err.value)) == (code == errno.EACCES)


def test_a_permission_error_on_another_file_is_not_called_a_write_fault(tmp_path):
    source = tmp_path / "elsewhere" / "raw.txt"
    with pytest.raises(PermissionError):
        with rio.atomic_path(tmp_path / "out" / "copy.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", str(source))
    assert rio.write_fault(tmp_path / "out" / "copy.txt",
                           PermissionError(errno.EACCES, "Permission denied", str(tmp_path))) is not None

