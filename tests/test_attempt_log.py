"""Every attempt of a training run is kept in its run folder's train.log (Snakemake deletes the job's own
log before each attempt), with a header and how it ended; --drop-checkpoint deletes a finished run's
checkpoint only."""

from __future__ import annotations

import json
import os
import re
import signal

import pytest
import torch

from replicate import io as rio
from replicate.cli import ATTEMPT_LOG, training_attempt
from support.workflow import train_command


def _attempts(folder):
    """The attempts in train.log, each from its header's number on."""
    return re.split(r"^=== attempt (?=\d+ started )", (folder / ATTEMPT_LOG).read_text(), flags=re.MULTILINE)[1:]


def test_attempts_append_with_numbered_headers_and_endings(tmp_path):
    with training_attempt(tmp_path) as log:
        log("[run] epoch 1/2 batch 10/20")
    with pytest.raises(KeyboardInterrupt):
        with training_attempt(tmp_path) as log:
            log("[run] epoch 2/2 batch 3/20")
            raise KeyboardInterrupt
    with pytest.raises(RuntimeError, match="boom"):
        with training_attempt(tmp_path):
            raise RuntimeError("boom")
    first, second, third = _attempts(tmp_path)
    assert first.startswith("1 started") and "starts from scratch" in first
    assert "[run] epoch 1/2 batch 10/20" in first and "=== attempt 1 ended" in first and ": finished ===" in first
    assert second.startswith("2 started") and "[run] epoch 2/2 batch 3/20" in second
    assert "interrupted (Ctrl-C)" in second and "epoch 1/2" not in second
    assert third.startswith("3 started") and "failed: RuntimeError: boom" in third


def test_header_says_whether_the_attempt_resumes(tmp_path):
    (tmp_path / "checkpoint.pt").write_bytes(b"x")
    with training_attempt(tmp_path):
        pass
    assert "resumes from checkpoint.pt" in _attempts(tmp_path)[0]


def test_sigterm_ends_the_attempt_with_exit_status_143_and_says_so(tmp_path):
    with pytest.raises(SystemExit) as exc:
        with training_attempt(tmp_path):
            os.kill(os.getpid(), signal.SIGTERM)
    assert exc.value.code == 143
    assert "terminated (SIGTERM)" in _attempts(tmp_path)[0]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler does not outlive the attempt


def test_drop_checkpoint_deletes_it_only_when_the_run_finished(tmp_path):
    ckpt = tmp_path / "checkpoint.pt"
    ckpt.write_bytes(b"weights")
    with pytest.raises(RuntimeError):
        with training_attempt(tmp_path, drop_checkpoint=True):
            raise RuntimeError("NaN loss")
    assert ckpt.is_file(), "a failed run keeps its checkpoint to resume"
    with training_attempt(tmp_path, drop_checkpoint=True):
        pass
    assert not ckpt.exists()
    assert "checkpoint.pt deleted" in _attempts(tmp_path)[1]


def test_train_writes_the_attempt_log_and_drops_the_checkpoint(tmp_path, monkeypatch):
    from replicate.cli import train as main

    g = torch.Generator().manual_seed(0)
    stream = torch.randint(0, 30, (3000,), generator=g)
    corpus = tmp_path / "corpus.pt"
    rio.torch_save(corpus, {"vocab": [f"w{i}" for i in range(30)], "train": stream, "valid": stream[:400].clone(),
                            "test": stream[400:800].clone()})
    monkeypatch.chdir(tmp_path)
    args = train_command(corpus, tmp_path, {"hidden_size": 8, "batch_size": 4, "epochs": 1, "max_batches": 3,
                                            "eval_max_tokens": 200})[4:]
    out = tmp_path / "results" / "press_wolf" / "small" / "seed1"
    assert main(args) == 0
    assert (out / "checkpoint.pt").is_file() and (out / "metrics.json").is_file()
    assert main([*args, "--drop-checkpoint"]) == 0  # a rerun resumes the finished checkpoint, then drops it
    assert not (out / "checkpoint.pt").exists() and (out / "metrics.json").is_file()
    first, second = _attempts(out)
    assert "starts from scratch" in first and "[small/seed1] done:" in first
    assert "resumes from checkpoint.pt" in second and "resumed from" in second and "checkpoint.pt deleted" in second
