"""Early stopping of the scale study (replicate.scale.stopping): the rule on synthetic histories, then real
tiny runs: it stops at the patience, respects the cap, a rerun after a stop trains nothing more, and a run
killed in the middle of an epoch resumes bit-identically."""

from __future__ import annotations

import pytest
import torch

from replicate.data import Corpus
from replicate.errors import ReplicateError
from replicate.lstm.runner import train_run
from replicate.scale import stopping


def hist(*valids):
    return [{"epoch": i + 1, "valid_ppl": v} for i, v in enumerate(valids)]


def test_rule_stops_after_patience_epochs_without_a_new_best():
    assert stopping.stop_reason(hist(10, 9), 2, 20) is None
    assert stopping.stop_reason(hist(10, 9, 9.5), 2, 20) is None
    assert stopping.stop_reason(hist(10, 9, 9.5, 9.2), 2, 20) == "patience"
    assert stopping.stop_reason(hist(10, 9, 9, 9), 2, 20) == "patience"  # a tie is no improvement
    assert stopping.stop_reason(hist(10, 9, 9.5, 8), 2, 20) is None      # a new best resets it
    assert stopping.best_epoch(hist(10, 9, 9, 9.5)) == (2, 9.0)           # earliest of ties


def test_rule_respects_the_cap_and_records_why():
    assert stopping.stop_reason(hist(5, 4, 3), 2, 3) == "cap"
    assert stopping.stop_reason(hist(5, 6, 7), 2, 3) == "patience"        # both: it had stopped improving
    assert stopping.stop_reason(hist(5, 4, 3), None, 3) == "cap"
    assert stopping.stop_reason(hist(5, 6, 7, 8), None, 5) is None
    rec = stopping.stopping_record(hist(5, 4, 4.5, 4.6), 2, 10)
    assert rec == {"patience": 2, "max_epochs": 10, "stopped_epoch": 4, "best_epoch": 2, "best_valid_ppl": 4.0,
                   "stop_reason": "patience"}
    with pytest.raises(ReplicateError, match="use a whole number"):
        stopping.stop_reason(hist(5), 0, 3)


def test_annealed_lr_divides_once_per_epoch_without_a_new_best():
    assert stopping.annealed_lr([], 1.0, 4) == 1.0
    assert stopping.annealed_lr(hist(10, 9, 8), 1.0, 4) == 1.0                  # every epoch a new best
    assert stopping.annealed_lr(hist(10, 11), 1.0, 4) == 0.25                   # epoch 2: no new best
    assert stopping.annealed_lr(hist(10, 11, 9, 9), 1.0, 4) == 0.0625           # a tie is no improvement
    assert stopping.annealed_lr(hist(10, 11, 12, 10.5, 8), 2.0, 2) == 0.25      # 3 plateaus, not reset by 8
    assert stopping.annealed_lr([{"epoch": 1, "valid_ppl": None}], 1.0, 4) == 0.25  # no valid: no new best
    with pytest.raises(ReplicateError, match="not above 1"):
        stopping.annealed_lr(hist(10), 1.0, 1)


# ---------------------------------------------------------------------------------------- real tiny runs
def tiny_corpus(n=3000, vocab=30) -> Corpus:
    g = torch.Generator().manual_seed(0)
    train = (torch.arange(n) % vocab + (torch.rand(n, generator=g) < 0.3) * 7) % vocab
    # a valid split unlike the training stream: the model over-fits, valid ppl turns up after a few epochs
    valid = torch.randint(0, vocab, (600,), generator=g)
    return Corpus(vocab=[f"w{i}" for i in range(vocab)], train=train, valid=valid, test=valid[:200].clone())


SETTINGS = {"size": "small", "hidden_size": 12, "batch_size": 4, "bptt": 10, "schedule": "later", "checkpoint_minutes": 0,
            "log_every": 1000, "dropout": "zaremba", "dropout_rate": 0.3}


def run(tmp_path, name, patience, epochs, **kw):
    spec = {"name": name, "settings": {**SETTINGS, "epochs": epochs, "max_epoch": epochs}}
    return train_run(spec, tiny_corpus(), tmp_path / name, threads=1, device="cpu", log=lambda *_: None,
                     trainer_cls=stopping.StoppingTrainer, patience=patience, **kw)


def test_tiny_run_stops_at_patience_and_rerun_trains_nothing_more(tmp_path):
    m = run(tmp_path, "p", patience=1, epochs=30)
    s = m["stopping"]
    assert s["stop_reason"] == "patience" and s["stopped_epoch"] < 30
    assert s["stopped_epoch"] - s["best_epoch"] == 1 and m["epochs_completed"] == s["stopped_epoch"]
    valids = [r["valid_ppl"] for r in m["history"]]
    assert s["best_valid_ppl"] == min(valids) and valids[-1] >= min(valids)
    again = run(tmp_path, "p", patience=1, epochs=30)  # resumes the finished checkpoint: no new epoch
    assert again["history"] == m["history"] and again["stopping"] == s
    assert again["valid_ppl"] == m["valid_ppl"]


def test_tiny_run_respects_the_cap(tmp_path):
    m = run(tmp_path, "c", patience=None, epochs=2)
    assert m["stopping"]["stop_reason"] == "cap" and m["stopping"]["stopped_epoch"] == 2
    assert len(m["history"]) == 2


def test_tiny_annealed_run_trains_each_epoch_at_the_lr_its_history_gives(tmp_path):
    m = run(tmp_path, "a", patience=3, epochs=30, anneal=4)
    h = m["history"]
    assert [r["lr"] for r in h] == [stopping.annealed_lr(h[:i], 1.0, 4) for i in range(len(h))]
    assert min(r["lr"] for r in h) <= 1 / 16  # it annealed at least twice before the stop
    plain = run(tmp_path, "plain", patience=3, epochs=30)
    assert {r["lr"] for r in plain["history"]} == {1.0}
    n = next(i for i, r in enumerate(h) if r["lr"] < 1)  # up to the first anneal: the same trajectory
    assert [r["valid_ppl"] for r in h[:n]] == [r["valid_ppl"] for r in plain["history"][:n]]
    assert h[n]["valid_ppl"] != plain["history"][n]["valid_ppl"]
    with pytest.raises(ReplicateError, match="belongs to different settings"):  # another factor: not resumed
        run(tmp_path, "a", patience=3, epochs=30, anneal=2)


class Kill(Exception):
    pass


class KillAt:
    """An on_step hook that stops the process (an exception) at a given global step."""

    def __init__(self, step):
        self.step = step

    def __call__(self, info):
        if info.step == self.step:
            raise Kill


def test_killed_mid_epoch_resumes_bit_identically(tmp_path):
    ref = run(tmp_path, "ref", patience=1, epochs=30)
    batches = (3000 // 4 - 1) // 10
    with pytest.raises(Kill):  # inside epoch 2 (checkpoint_minutes 0: a checkpoint after every batch)
        run(tmp_path, "killed", patience=1, epochs=30, on_step=KillAt(batches + batches // 2))
    state = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)
    assert state["epoch"] == 1 and 0 < state["batch"] < batches
    resumed = run(tmp_path, "killed", patience=1, epochs=30)
    assert [r["valid_ppl"] for r in resumed["history"]] == [r["valid_ppl"] for r in ref["history"]]
    for key in ("train_ppl", "train_clean_ppl", "valid_ppl", "test_ppl"):
        assert resumed[key] == ref[key], key  # bit-identical floats
    assert resumed["stopping"] == ref["stopping"]


def test_killed_annealed_run_resumes_bit_identically_at_its_annealed_lr(tmp_path):
    ref = run(tmp_path, "ref", patience=3, epochs=30, anneal=4)
    first = next(i for i, r in enumerate(ref["history"]) if r["lr"] < 1)  # 0-based epoch of the first anneal
    batches = (3000 // 4 - 1) // 10
    with pytest.raises(Kill):  # in the middle of the first annealed epoch
        run(tmp_path, "killed", patience=3, epochs=30, anneal=4, on_step=KillAt(first * batches + batches // 2))
    resumed = run(tmp_path, "killed", patience=3, epochs=30, anneal=4)
    assert resumed["history"][first]["lr"] == ref["history"][first]["lr"] < 1
    assert [r["valid_ppl"] for r in resumed["history"]] == [r["valid_ppl"] for r in ref["history"]]
    for key in ("train_ppl", "valid_ppl", "test_ppl"):
        assert resumed[key] == ref[key], key
    assert resumed["stopping"] == ref["stopping"]


def test_the_analysis_hooks_leave_the_run_unchanged(tmp_path):
    """The analysis runs carry the update and snapshot hooks, the other grid runs none: both must be the same
    experiment, to the bit."""
    from replicate.scale import embeddings as emb

    corpus = tiny_corpus()
    plain = run(tmp_path, "plain", patience=1, epochs=4)
    tracker = emb.UpdateTracker(len(corpus.vocab))
    recorder = emb.SnapshotRecorder(emb.top_ids(corpus.train_counts(), 10))
    hooked = run(tmp_path, "hooked", patience=1, epochs=4, on_step=tracker, on_epoch=recorder)
    assert tracker.steps > 0 and recorder.epochs()[0] == 0 and len(recorder.epochs()) == len(hooked["history"]) + 1
    timing = ("seconds", "tokens_per_s", "eval_seconds")
    assert [{k: v for k, v in r.items() if k not in timing} for r in hooked["history"]] == \
        [{k: v for k, v in r.items() if k not in timing} for r in plain["history"]]
    for key in ("train_ppl", "train_clean_ppl", "valid_ppl", "test_ppl"):
        assert hooked[key] == plain[key], key
