"""Deterministic resume: a run killed with SIGKILL, or stopped with SIGTERM or Ctrl-C (then after a checkpoint
of the batch in progress), in the middle of an epoch and rerun ends with bit-identical perplexities to an
uninterrupted run (CPU, tiny config, variational dropout so that the RNG state and the carried hidden state
matter)."""

from __future__ import annotations

import os
import re
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


def _signal_when_logged(proc: subprocess.Popen, log: Path, line: str, signum: int, timeout: float = 240) -> None:
    """Send ``signum`` to ``proc`` as soon as its log holds ``line`` (it must still be training then)."""
    deadline = time.time() + timeout
    while line not in log.read_text():
        assert proc.poll() is None, "the run ended before the signal"
        assert time.time() < deadline
        time.sleep(0.01)
    proc.send_signal(signum)



@pytest.mark.slow
def test_sigkill_mid_epoch_then_rerun_is_bit_identical(tiny_corpus, tmp_path):
    (ref_cmd, ref_dir), (cmd, run_dir) = _command(tiny_corpus, tmp_path / "ref"), _command(tiny_corpus, tmp_path / "killed")
    subprocess.run(ref_cmd, cwd=tmp_path / "ref", check=True, env=_env(), capture_output=True, timeout=300)
    reference = rio.read_json(ref_dir / "metrics.json")

    log = open(tmp_path / "killed.log", "w")
    proc = subprocess.Popen(cmd, cwd=tmp_path / "killed", stdout=log, stderr=subprocess.STDOUT, env=_env())
    _signal_when_logged(proc, tmp_path / "killed.log", "epoch 2/2 batch 100/", signal.SIGKILL)
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
    assert proc.returncode == 2  # the finished run is not overwritten by other settings (experiments)
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


# ----------------------------------------------------------------------------- a clean stop (SIGINT, SIGTERM)
STOP = {**SPEC["settings"], "epochs": 2, "max_batches": 40, "checkpoint_minutes": 10, "log_every": 10,
        "eval_max_tokens": 500}
QUICK = {**STOP, "max_batches": 20, "eval_max_tokens": 200}  # the in-process runs


def test_sigterm_mid_epoch_checkpoints_that_batch_and_the_rerun_is_bit_identical(tiny_corpus, tmp_path, monkeypatch):
    """A real SIGTERM to `python -m replicate train` in epoch 2 (checkpoint_minutes 10: no checkpoint of its own
    before the epoch ends): the job checkpoints the batch in progress, exits 143, and the same command resumes from
    that batch and ends with the perplexities and weights of an uninterrupted run, bit for bit."""
    from replicate.cli import train as main

    ref_cmd, ref_dir = _command(tiny_corpus, tmp_path / "ref", **STOP)
    cmd, run_dir = _command(tiny_corpus, tmp_path / "stopped", **STOP)
    with open(tmp_path / "stopped.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=tmp_path / "stopped", stdout=log, stderr=subprocess.STDOUT, env=_env())
    monkeypatch.chdir(tmp_path / "ref")
    assert main(ref_cmd[4:]) == 0  # the uninterrupted run, while the other one starts
    _signal_when_logged(proc, tmp_path / "stopped.log", "epoch 2/2 batch 10/", signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    stop = re.search(r"SIGTERM: stopped after a checkpoint at epoch 2, batch (\d+) \(the signal came at epoch 2, "
                     r"batch (\d+)\)", (tmp_path / "stopped.log").read_text())
    assert stop and state["epoch"] == 1 and state["batch"] == int(stop.group(1))
    assert 10 <= int(stop.group(2)) <= state["batch"] <= int(stop.group(2)) + 1 < 40, "at most one batch lost"
    assert "terminated (SIGTERM)" in (run_dir / "train.log").read_text()
    assert not (run_dir / "metrics.json").exists()

    monkeypatch.chdir(tmp_path / "stopped")
    assert main(cmd[4:]) == 0  # the same command again
    assert re.search(rf"resumed from \S+/checkpoint.pt: epoch 2, batch {state['batch']}\n",
                     (run_dir / "train.log").read_text())
    resumed, reference = rio.read_json(run_dir / "metrics.json"), rio.read_json(ref_dir / "metrics.json")
    for key in PPL_KEYS:
        assert resumed[key] == reference[key], key  # bit-identical floats
    assert [r["valid_ppl"] for r in resumed["history"]] == [r["valid_ppl"] for r in reference["history"]]
    weights = [torch.load(d / "checkpoint.pt", weights_only=True)["model"] for d in (run_dir, ref_dir)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[1])


class SignalAt:
    """An on_step hook that sends this process ``signum`` at the given global steps (once per listed step)."""

    def __init__(self, signum: int, *steps: int):
        self.signum, self.steps = signum, list(steps)

    def __call__(self, info) -> None:
        while info.step in self.steps:
            self.steps.remove(info.step)
            os.kill(os.getpid(), self.signum)


def _stopped_run(corpus, folder, hook=None):
    """QUICK's run in ``folder`` with the clean stop on (as a training command has it)."""
    from replicate.lstm import runner

    spec = {"name": "tiny/seed1", "settings": QUICK}
    with runner.stop_at_batch_end():
        return runner.train_run(spec, corpus, folder, threads=1, device="cpu", log=lambda *a: None, on_step=hook)


def test_ctrl_c_checkpoints_the_batch_in_progress_and_a_second_one_stops_at_once(tiny_corpus, tmp_path):
    from replicate.data import load_corpus

    corpus = load_corpus(tiny_corpus)
    with pytest.raises(KeyboardInterrupt):
        _stopped_run(corpus, tmp_path / "once", SignalAt(signal.SIGINT, 12))  # during batch 13 of epoch 1
    state = torch.load(tmp_path / "once" / "checkpoint.pt", weights_only=True)
    assert (state["epoch"], state["batch"]) == (0, 13)
    with pytest.raises(KeyboardInterrupt):
        _stopped_run(corpus, tmp_path / "twice", SignalAt(signal.SIGINT, 12, 12))
    assert not (tmp_path / "twice" / "checkpoint.pt").exists(), "the second Ctrl-C does not wait for the batch"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers do not outlive the block


def test_a_signal_in_the_last_batch_stops_before_the_final_evaluation(tiny_corpus, tmp_path):
    from replicate.data import load_corpus

    corpus = load_corpus(tiny_corpus)
    reference = _stopped_run(corpus, tmp_path / "ref")
    with pytest.raises(KeyboardInterrupt):
        _stopped_run(corpus, tmp_path / "run", SignalAt(signal.SIGINT, 2 * 20 - 1))
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert (state["epoch"], state["batch"]) == (2, 0) and not (tmp_path / "run" / "metrics.json").exists()
    resumed = _stopped_run(corpus, tmp_path / "run")
    assert all(resumed[k] == reference[k] for k in PPL_KEYS)


def test_a_trainer_built_inside_frozen_code_stops_cleanly_too(tmp_path, monkeypatch):
    """Section 6.2 builds its Trainer inside inan.subspace_exp.run_one (frozen: no hook reaches it); the signal
    finds the Trainer on the interrupted stack. Here Ctrl-C comes in the progress line after batch 4."""
    from replicate.data import Corpus
    from replicate.inan.subspace_exp import run_one
    from replicate.lstm import runner, train

    progress = train.Trainer._progress

    def progress_then_ctrl_c(self, *args):
        progress(self, *args)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(train.Trainer, "_progress", progress_then_ctrl_c)
    g = torch.Generator().manual_seed(0)
    corpus = Corpus([f"w{i}" for i in range(30)], torch.randint(0, 30, (600,), generator=g),
                    torch.randint(0, 30, (100,), generator=g), torch.randint(0, 30, (10,), generator=g))
    settings = {"slice_words": 300, "hidden_size": 6, "num_layers": 2, "init_scale": 0.1, "batch_size": 3, "bptt": 5,
                "lr": 0.5, "epochs": 1, "max_epoch": 1, "decay": 1.0, "clip": 5.0, "eval_max_tokens": 50,
                "optimizer": "sgd", "log_every": 4}
    with pytest.raises(KeyboardInterrupt), runner.stop_at_batch_end():
        run_one(settings, corpus, tmp_path / "seed1", seed=1, tau=5.0, beta=1.0, log=lambda *a: None)
    state = torch.load(tmp_path / "seed1" / "checkpoint.pt", weights_only=True)
    assert (state["epoch"], state["batch"]) == (0, 4)
