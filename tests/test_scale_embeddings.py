"""Embedding analysis (scale study): similarity math, update counting, snapshots, benchmarks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from replicate.scale import embeddings as emb
from replicate.lstm.config import ModelConfig, TrainConfig
from replicate.lstm.model import LSTMLM
from replicate.lstm.train import StepInfo, Trainer


# ----------------------------------------------------------------------------- similarity math
def test_identical_matrices_correlate_perfectly():
    a = torch.randn(60, 8, generator=torch.Generator().manual_seed(0))
    assert emb.structure_spearman(a, a.clone()) == pytest.approx(1.0)
    assert emb.knn_overlap(a, a.clone(), k=10) == pytest.approx(1.0)


def test_similarity_ignores_rotation_and_scale():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(50, 6, generator=g)
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=g))
    b = 3.0 * a @ q  # same cosine structure
    assert emb.structure_spearman(a, b) == pytest.approx(1.0, abs=1e-9)
    assert emb.knn_overlap(a, b, k=5) == pytest.approx(1.0)


def test_independent_random_matrices_are_unrelated():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(300, 40, generator=g), torch.randn(300, 40, generator=g)
    rho = emb.structure_spearman(a, b)
    assert abs(rho) < 0.03
    overlap = emb.knn_overlap(a, b, k=10)
    chance = 10 / 299
    assert overlap < 3 * chance


@pytest.mark.parametrize("noise", [0.5, 1.0])
def test_partially_related_matrices_known_answer(noise):
    """b = a + s n (Gaussian rows): the dot products of b correlate with a's at r = 1 / (1 + s^2), and for
    Gaussian pairs Spearman's rho is (6 / pi) asin(r / 2): 0.786 at s = 0.5, 0.483 at s = 1 (width -> inf).
    At width 20 and 200 words, 20 seeds read 0.778 +- 0.005 and 0.471 +- 0.011: within 0.03."""
    g = torch.Generator().manual_seed(3)
    a = torch.randn(200, 20, generator=g, dtype=torch.float64)
    b = a + noise * torch.randn(200, 20, generator=g, dtype=torch.float64)
    expected = 6 / math.pi * math.asin(1 / (1 + noise ** 2) / 2)
    assert emb.structure_spearman(a, b) == pytest.approx(expected, abs=0.03)


def test_knn_indices_exclude_self():
    a = torch.randn(20, 4, generator=torch.Generator().manual_seed(4))
    idx = emb.knn_indices(a, 5)
    assert not (idx == torch.arange(20)[:, None]).any()


def test_similarity_rows_flags_shared_init_from_snapshots():
    g = torch.Generator().manual_seed(5)
    init = torch.randn(10, 4, generator=g).half()
    other = torch.randn(10, 4, generator=g).half()
    r1, r2 = emb.SnapshotRecorder(torch.arange(10)), emb.SnapshotRecorder(torch.arange(10))
    r1.snapshots = {"0/tied": init, "1/tied": init + 1}
    r2.snapshots = {"0/input": init, "0/output": other, "1/input": init, "1/output": other}
    rows = emb.canonical_order(emb.similarity_rows({("tied", 1): r1, ("untied", 1): r2}, knn_k=3))
    got = rows.set_index(["epoch", "comparison"])["shared_init"]
    assert bool(got[(0, "tied_vs_untied_input")]) is True
    assert bool(got[(0, "tied_vs_untied_output")]) is False
    assert set(rows["comparison"]) == {"tied_vs_untied_input", "tied_vs_untied_output",
                                       "untied_input_vs_untied_output"}
    assert rows.loc[(rows.epoch == 0) & (rows.comparison == "tied_vs_untied_input"), "spearman"].item() == \
        pytest.approx(1.0)


# ----------------------------------------------------------------------------- update counting
def _tiny(tying: str, vocab: int = 6, hidden: int = 3) -> LSTMLM:
    torch.manual_seed(0)
    return LSTMLM(ModelConfig(vocab_size=vocab, hidden_size=hidden, num_layers=1, tying=tying))


def _step(model, tracker, inputs, targets, step, lr=1.0, wd=0.0):
    model.zero_grad(set_to_none=True)
    hidden = model.init_hidden(inputs.shape[1])
    features, _ = model(inputs, hidden)
    model.nll(features, targets).backward()
    tracker(StepInfo(model, inputs, targets, lr, wd, 1, step, step))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad + wd * p, alpha=-lr)


def test_update_counts_hand_checked():
    """Step 1 inputs {0, 1}, step 2 inputs {2}: input rows of words 3-5 never move, every output row
    moves at both steps, every tied row moves at both steps."""
    untied, tied = _tiny("untied"), _tiny("tied")
    tu, tt = emb.UpdateTracker(6), emb.UpdateTracker(6)
    batches = [(torch.tensor([[0], [1]]), torch.tensor([[1], [2]])),
               (torch.tensor([[2], [2]]), torch.tensor([[2], [3]]))]
    for step, (x, y) in enumerate(batches):
        _step(untied, tu, x, y, step)
        _step(tied, tt, x, y, step)
    assert tu.steps == tt.steps == 2
    assert tu.changed["input"].tolist() == [1, 1, 1, 0, 0, 0]
    assert tu.input_steps.tolist() == [1, 1, 1, 0, 0, 0]
    assert tu.changed["output"].tolist() == [2] * 6
    assert set(tt.changed) == {"tied"}
    assert tt.changed["tied"].tolist() == [2] * 6
    assert (tu.norm_sum["input"][3:] == 0).all() and (tu.norm_sum["input"][:3] > 0).all()
    assert (tu.norm_sum["output"] > 0).all()


def test_weight_decay_moves_every_row():
    model, tracker = _tiny("untied"), emb.UpdateTracker(6)
    _step(model, tracker, torch.tensor([[0]]), torch.tensor([[1]]), 0, wd=1e-3)
    assert tracker.changed["input"].tolist() == [1] * 6


def test_update_tracker_through_trainer_and_resume_state(tmp_path):
    """Via the real Trainer hook: untied input rows change exactly when the word is an input."""
    g = torch.Generator().manual_seed(0)
    train = torch.randint(0, 8, (400,), generator=g)  # words 8, 9 never appear
    valid = torch.randint(0, 10, (50,), generator=g)
    model = _tiny("untied", vocab=10, hidden=4)
    tracker = emb.UpdateTracker(10)
    cfg = TrainConfig(batch_size=4, bptt=5, epochs=1, max_batches=6, log_every=100)
    Trainer(model, cfg, train, valid, on_step=tracker, log=lambda *_: None).run()
    assert tracker.steps == 6
    assert torch.equal(tracker.changed["input"], tracker.input_steps)
    assert tracker.changed["input"][8:].tolist() == [0, 0]
    assert tracker.changed["output"].tolist() == [6] * 10
    clone = emb.UpdateTracker(10)
    clone.load_state_dict(tracker.state_dict())
    assert clone.steps == 6 and torch.equal(clone.changed["output"], tracker.changed["output"])
    table = emb.bucket_table(tracker.per_word(torch.bincount(train, minlength=10)), per_decade=2)
    out = table[table.matrix == "output"]
    assert (out["update_fraction"] == 1.0).all()
    unseen = table[(table.matrix == "input") & (table.bucket == -1)]
    assert unseen["n_words"].item() == 2 and unseen["update_fraction"].item() == 0.0


def test_snapshot_recorder_survives_resume(tmp_path):
    """Stateful on_epoch: after a finished run, a resumed trainer restores every epoch's snapshot."""
    g = torch.Generator().manual_seed(0)
    train, valid = torch.randint(0, 10, (300,), generator=g), torch.randint(0, 10, (40,), generator=g)
    cfg = TrainConfig(batch_size=2, bptt=5, epochs=2, max_batches=3, log_every=100)
    ids = emb.top_ids(torch.bincount(train, minlength=10), 4)
    rec = emb.SnapshotRecorder(ids)
    Trainer(_tiny("tied", vocab=10, hidden=4), cfg, train, valid, run_dir=tmp_path, on_epoch=rec,
            log=lambda *_: None).run()
    assert rec.epochs() == [0, 1, 2]
    assert rec.get(2, "tied").shape == (4, 4) and rec.get(2, "tied").dtype == torch.float16
    again = emb.SnapshotRecorder(ids)
    Trainer(_tiny("tied", vocab=10, hidden=4), cfg, train, valid, run_dir=tmp_path, on_epoch=again,
            log=lambda *_: None).run()
    assert again.epochs() == [0, 1, 2]
    assert torch.equal(again.get(2, "tied"), rec.get(2, "tied"))
    assert again.final["tied"].shape == (10, 4)


# ----------------------------------------------------------------------------- buckets, helpers
def test_frequency_buckets_hand_values():
    assert emb.frequency_buckets([0, 1, 3, 10, 31, 32, 100], per_decade=2).tolist() == [-1, 0, 0, 2, 2, 3, 4]
    assert emb.frequency_buckets([1, 9, 10, 99, 100], per_decade=1).tolist() == [0, 0, 1, 1, 2]


def test_top_ids_are_most_frequent_with_stable_ties():
    assert emb.top_ids(torch.tensor([5, 9, 5, 1, 9]), 3).tolist() == [1, 4, 0]


# ----------------------------------------------------------------------------- word similarity
def test_benchmark_file_and_spearman(tmp_path):
    path = tmp_path / "mini_simlex.txt"
    path.write_text("word1\tword2\tPOS\tSimLex999\n"
                    "Cat\tdog\tN\t9.0\n"
                    "cat\tcar\tN\t5.0\n"
                    "dog\tcar\tN\t1.0\n"
                    "cat\tzebra\tN\t3.0\n")  # zebra is not in the vocabulary
    pairs = emb.load_benchmark(path, score_column=3)
    assert list(pairs["word1"]) == ["cat", "cat", "dog", "cat"]
    vocab = ["cat", "dog", "car"]
    # cosines: cat.dog = 0.99, cat.car = 0.5, dog.car ~ 0.39: same order as the scores
    e = torch.tensor([[1.0, 0.0], [0.99, math.sqrt(1 - 0.99 ** 2)], [0.5, -math.sqrt(0.75)]])
    r = emb.benchmark_spearman(e, vocab, pairs)
    assert r["n_pairs"] == 4 and r["n_covered"] == 3
    assert r["spearman"] == pytest.approx(1.0)
    # scrambled rows: cat.dog = 0.5, cat.car = 0.99, dog.car ~ 0.37 against scores 9, 5, 1: ranks (2, 3, 1)
    # against (3, 2, 1), rho = 1 - 6 (1 + 1 + 0) / (3 (9 - 1)) = 0.5
    r = emb.benchmark_spearman(-e[[0, 2, 1]], vocab, pairs)
    assert r["spearman"] == pytest.approx(0.5)


def test_benchmark_men_format_without_header(tmp_path):
    path = tmp_path / "men.txt"
    path.write_text("sun sunlight 50.0\nbakery bread 45\n")
    pairs = emb.load_benchmark(path, score_column=2)
    assert pairs["score"].tolist() == [50.0, 45.0]


def test_benchmark_missing_file_is_a_user_error(tmp_path):
    from replicate.errors import ReplicateError

    with pytest.raises(ReplicateError, match="not found"):
        emb.load_benchmark(tmp_path / "nope.txt")


def test_word_similarity_without_benchmarks_says_so(tmp_path):
    from replicate.scale.cli import word_similarity

    out = word_similarity([], {}, ["a"], tmp_path)
    assert out["benchmark"].tolist() == ["none"] and out["status"].str.startswith("not provided").all()


def test_final_similarity_drops_shared_init_pairs():
    from replicate.scale.cli import final_similarity

    sim = pd.DataFrame({"comparison": ["x", "x", "y"], "epoch": [2, 2, 2], "shared_init": [True, False, True],
                        "same_seed": [True, False, True], "spearman": [1.0, 0.3, 0.9]})
    out = final_similarity(sim, 2)
    assert out.set_index("comparison")["spearman"].to_dict() == {"x": 0.3, "y": 0.9}
    assert np.isfinite(out["spearman"]).all()


def test_final_similarity_reads_the_last_epoch_every_run_reached():
    """Early-stopped runs end at different epochs: epoch 3 holds only the run that trained longest, so the
    comparison between the two kinds of matrix lives at epoch 2."""
    from replicate.scale.cli import final_similarity

    sim = pd.DataFrame({"comparison": ["tied_vs_untied_output", "untied_input_vs_untied_input"], "epoch": [2, 3],
                        "shared_init": False, "same_seed": False, "spearman": [0.7, 0.8]})
    assert final_similarity(sim, 2)["comparison"].tolist() == ["tied_vs_untied_output"]
