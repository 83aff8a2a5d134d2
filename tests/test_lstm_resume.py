"""Deterministic resume: a run killed with SIGKILL in the middle of an epoch and rerun ends with
bit-identical perplexities to an uninterrupted run (CPU, tiny config, variational dropout so that the
RNG state and the carried hidden state matter)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from replicate import io as rio
from support.workflow import train_command

REPO = Path(__file__).resolve().parents[1]
SPEC = {"name": "tiny/seed1", "settings": {
    "size": "small", "hidden_size": 16, "batch_size": 4, "epochs": 2, "checkpoint_minutes": 0, "log_every": 20,
    "dropout": "variational", "dropout_word": 0.2, "dropout_input": 0.3, "dropout_hidden": 0.2,
    "dropout_output": 0.3, "weight_decay": 1e-3}}
PPL_KEYS = ("train_ppl", "train_clean_ppl", "valid_ppl", "test_ppl")


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory) -> Path:
    g = torch.Generator().manual_seed(0)
    path = tmp_path_factory.mktemp("corpus") / "corpus.pt"
    # a learnable stream: mostly "next id", some noise
    train = (torch.arange(24000) % 50 + (torch.rand(24000, generator=g) < 0.3) * 7) % 50
    rio.torch_save(path, {"vocab": [f"w{i}" for i in range(50)], "train": train,
                          "valid": train[:1500].clone(), "test": train[1500:3000].clone()})
    return path


def _command(corpus: Path, root: Path, **settings) -> tuple[list[str], Path]:
    """The command that trains SPEC's settings (as press_wolf.overrides) in ``root``, and its run folder."""
    overrides = {k: v for k, v in {**SPEC["settings"], **settings}.items() if k != "size"}
    return train_command(corpus, root, overrides), root / "results" / "press_wolf" / "small" / "seed1"


def _env():
    return {**os.environ, "PYTHONPATH": str(REPO)}



@pytest.mark.slow
def test_sigkill_mid_epoch_then_rerun_is_bit_identical(tiny_corpus, tmp_path):
    (ref_cmd, ref_dir), (cmd, run_dir) = _command(tiny_corpus, tmp_path / "ref"), _command(tiny_corpus, tmp_path / "killed")
    subprocess.run(ref_cmd, cwd=tmp_path / "ref", check=True, env=_env(), capture_output=True, timeout=300)
    reference = rio.read_json(ref_dir / "metrics.json")

    log = open(tmp_path / "killed.log", "w")
    proc = subprocess.Popen(cmd, cwd=tmp_path / "killed", stdout=log, stderr=subprocess.STDOUT, env=_env())
    deadline = time.time() + 240
    while "epoch 2/2 batch 100/" not in (tmp_path / "killed.log").read_text():
        assert proc.poll() is None, "run ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    log.close()
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert state["epoch"] == 1 and 0 < state["batch"] < 299, "the kill must land inside epoch 2"
    assert not (run_dir / "metrics.json").exists()

    rerun = subprocess.run(cmd, cwd=tmp_path / "killed", check=True, env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert "resumed from" in rerun.stdout
    attempts = (run_dir / "train.log").read_text().split("=== attempt 2 started ")
    assert len(attempts) == 2 and "=== attempt 1 started " in attempts[0] and "starts from scratch" in attempts[0]
    assert "epoch 2/2 batch 100/" in attempts[0] and "=== attempt 1 ended" not in attempts[0]  # SIGKILL: no ending
    assert "resumes from checkpoint.pt" in attempts[1] and "=== attempt 2 ended" in attempts[1]
    resumed = rio.read_json(run_dir / "metrics.json")
    for key in PPL_KEYS:
        assert resumed[key] == reference[key], key  # bit-identical floats
    assert [r["valid_ppl"] for r in resumed["history"]] == [r["valid_ppl"] for r in reference["history"]]
    assert all(1 < reference[k] < 1e4 for k in PPL_KEYS)


@pytest.mark.slow
def test_checkpoint_of_other_settings_is_refused(tiny_corpus, tmp_path):
    cmd, out = _command(tiny_corpus, tmp_path, epochs=1)
    subprocess.run(cmd, cwd=tmp_path, check=True, env=_env(), capture_output=True, timeout=300)
    cmd, out = _command(tiny_corpus, tmp_path, epochs=1, hidden_size=12)
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2  # the finished run is not overwritten by other settings (run_checks)
    assert "holds a finished run whose settings differ" in proc.stderr and "hidden_size: 16 -> 12" in proc.stderr
    (out / "metrics.json").unlink()  # as Snakemake does before a rerun: then the checkpoint is refused
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "belongs to different settings" in proc.stderr and "fix: delete" in proc.stderr


def test_checkpoint_of_other_code_is_refused(tiny_corpus, tmp_path, monkeypatch):
    """A code change reruns the job (code params); it must not resume the old code's checkpoint."""
    from replicate.data import load_corpus
    from replicate.errors import ReplicateError
    from replicate.lstm import runner

    corpus = load_corpus(tiny_corpus)
    spec = {**SPEC, "settings": {**SPEC["settings"], "epochs": 1, "max_batches": 2, "eval_max_tokens": 200}}
    runner.train_run(spec, corpus, tmp_path, threads=1, device="cpu", log=lambda *a: None)
    monkeypatch.setattr(runner.provenance, "source_hash", lambda *modules: "other-code")
    with pytest.raises(ReplicateError, match="different settings or code"):
        runner.train_run(spec, corpus, tmp_path, threads=1, device="cpu", log=lambda *a: None)


def test_rerun_of_a_finished_run_restores_its_outputs(tiny_corpus, tmp_path):
    """Snakemake deletes a job's outputs before it reruns the job: resuming the finished checkpoint
    only re-evaluates, and must write metrics.json AND history.csv again, with the same numbers."""
    from replicate.data import load_corpus
    from replicate.lstm import runner

    corpus = load_corpus(tiny_corpus)
    spec = {**SPEC, "settings": {**SPEC["settings"], "epochs": 1, "max_batches": 2, "eval_max_tokens": 200}}
    first = runner.train_run(spec, corpus, tmp_path, threads=1, device="cpu", log=lambda *a: None)
    history = (tmp_path / "history.csv").read_text()
    (tmp_path / "history.csv").unlink()
    (tmp_path / "metrics.json").unlink()
    logged = []
    again = runner.train_run(spec, corpus, tmp_path, threads=1, device="cpu", log=logged.append)
    assert any("resumed from" in line for line in logged)
    assert (tmp_path / "history.csv").read_text() == history
    assert again["valid_ppl"] == first["valid_ppl"] and again["history"] == first["history"]
