"""Soft-target statistics of the augmented loss on embeddings with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from replicate.inan.soft_target import summarise, word_stats


def test_zero_embedding_gives_the_uniform_distribution():
    v = 50
    s = summarise(torch.zeros(v, 8), tau=10.0, targets=torch.randint(0, v, (200,)), top_k=10)
    assert s["vocab_entropy_ratio"] == pytest.approx(1.0)
    assert s["token_target_mass"] == pytest.approx(1 / v) and s["uniform_target_mass"] == pytest.approx(1 / v)
    assert s["vocab_top_mass"] == pytest.approx(10 / v)


def test_orthogonal_words_have_the_closed_form_target_mass():
    """E = s * I (|V| = d): the logits of word t are s^2/tau on t and 0 elsewhere, so
    y~_t = e^(s^2/tau) / (e^(s^2/tau) + |V| - 1) and the entropy has a closed form too."""
    v, s, tau = 20, 3.0, 2.0
    st = word_stats(s * torch.eye(v), tau, top_k=1, chunk=7)  # chunks that do not divide |V|
    a = math.exp(s * s / tau)
    p_t, p_o = a / (a + v - 1), 1 / (a + v - 1)
    entropy = -(p_t * math.log(p_t) + (v - 1) * p_o * math.log(p_o))
    assert st["target_mass"] == pytest.approx(torch.full((v,), p_t, dtype=torch.float64))
    assert st["top_mass"] == pytest.approx(torch.full((v,), p_t, dtype=torch.float64))
    assert st["entropy_ratio"] == pytest.approx(torch.full((v,), entropy / math.log(v), dtype=torch.float64))


def test_token_weighting_follows_target_frequencies():
    """Word 0 informative (large norm), the rest zero: its weight in the token mean is its frequency."""
    v = 10
    emb = torch.zeros(v, 4)
    emb[0, 0] = 10.0
    targets = torch.tensor([0] * 3 + [1] * 7)
    s = summarise(emb, tau=1.0, targets=targets)
    per_word = word_stats(emb, 1.0)["target_mass"]
    assert s["token_target_mass"] == pytest.approx(0.3 * float(per_word[0]) + 0.7 * float(per_word[1]))
    assert s["vocab_target_mass"] == pytest.approx(float(per_word.mean()))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        word_stats(torch.zeros(5, 2), tau=0.0)
    with pytest.raises(ValueError):
        word_stats(torch.zeros(5, 2), tau=1.0, top_k=6)


def test_cli_reads_a_run_folder(tmp_path):
    from replicate.inan.cli import main
    from replicate.io import torch_save, write_json

    v = 12
    torch_save(tmp_path / "corpus.pt", {"vocab": [f"w{i}" for i in range(v)], "train": torch.arange(v).repeat(3),
                                        "valid": torch.arange(v), "test": torch.arange(v)})
    run = tmp_path / "small_al"
    torch_save(run / "checkpoint.pt", {"model": {"embedding.weight": torch.zeros(v, 3)}, "epoch": 2})
    write_json(run / "metrics.json", {"valid_ppl": 99.0, "inan": {"variant": "al", "tau": 10.0,
                                                                    "soft_target_grad": False}})
    out = tmp_path / "soft.csv"
    assert main(["soft-target", "--corpus", str(tmp_path / "corpus.pt"), "--top-k", "2", "--tau", "5", "10",
                 "--out", str(out), str(run)]) == 0
    import pandas as pd

    df = pd.read_csv(out)
    assert list(df["tau"]) == [5.0, 10.0] and (df["variant"] == "al").all() and (df["epochs_done"] == 2).all()
    assert df["token_entropy_ratio"].tolist() == pytest.approx([1.0, 1.0])
    assert (tmp_path / "soft.csv.provenance.json").is_file()


def test_a_finished_al_run_records_its_soft_target_at_its_own_tau_and_norm(tmp_path):
    """What ``inan train`` adds to an AL run's metrics.json: y~ of the final embedding at the run's tau and
    target_norm (a flat embedding: uniform; a checkpoint whose bytes changed: refused)."""
    from types import SimpleNamespace

    from replicate.errors import ReplicateError
    from replicate.inan.runs import final_soft_target
    from replicate.io import torch_save

    emb = torch.eye(6) * 30.0
    torch_save(tmp_path / "checkpoint.pt", {"model": {"embedding.weight": emb}})
    targets = torch.tensor([0, 1, 1, 2])
    flat = final_soft_target(tmp_path, targets, SimpleNamespace(tau=10.0, target_norm=None))
    assert flat == summarise(emb, 10.0, targets, top_k=6)
    assert 0 < flat["token_entropy_ratio"] < 1 and flat["token_target_mass"] > 1 / 6
    normed = final_soft_target(tmp_path, targets, SimpleNamespace(tau=10.0, target_norm=1.0))
    assert normed["token_entropy_ratio"] > flat["token_entropy_ratio"]  # unit vectors: a flatter y~
    ckpt = tmp_path / "checkpoint.pt"
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: the file is no longer the one written
    ckpt.write_bytes(bytes(data))
    with pytest.raises(ReplicateError, match="does not match its checksum"):
        final_soft_target(tmp_path, targets, SimpleNamespace(tau=10.0, target_norm=None))


def test_loss_terms_match_a_transcription_of_the_objective():
    """CE and alpha * KL(y~ || softmax(W h / tau)) of a small model, written out; the bias switch matters."""
    from replicate.inan.soft_target import loss_terms
    from replicate.inan.train import AugmentedLoss
    from replicate.lstm.config import ModelConfig
    from replicate.lstm.model import LSTMLM

    torch.manual_seed(0)
    model = LSTMLM(ModelConfig(vocab_size=13, hidden_size=6, num_layers=1, dropout="none"))
    with torch.no_grad():
        model.output_bias.copy_(torch.randn(13) * 2)
        model.embedding.weight.mul_(20)
    tokens = torch.randint(0, 13, (40,))
    got = loss_terms(model, tokens, AugmentedLoss(tau=2.0, gamma=1.5))  # alpha = 3
    with torch.no_grad():
        feats, _ = model(tokens[:-1].view(-1, 1), model.init_hidden(1))
        h, y = feats.reshape(-1, 6), tokens[1:]
        w, b, emb = model.output_weight, model.output_bias, model.embedding.weight
        ce = torch.nn.functional.cross_entropy(h @ w.t() + b, y)
        y_soft = torch.softmax(emb[y] @ emb.t() / 2.0, -1)
        y_hat = torch.softmax(h @ w.t() / 2.0, -1)
        kl = (y_soft * (y_soft.log() - y_hat.log())).sum(-1).mean()
    assert got["ce"] == pytest.approx(float(ce), rel=1e-5) and got["j_aug"] == pytest.approx(float(kl), rel=1e-4)
    assert got["alpha_j_aug"] == pytest.approx(3.0 * float(kl), rel=1e-4)
    assert got["al_share"] == pytest.approx(3.0 * float(kl) / (float(ce) + 3.0 * float(kl)), rel=1e-4)
    assert got["loss_tokens"] == 39
    assert abs(loss_terms(model, tokens, AugmentedLoss(2.0, 1.5, prediction_bias=True))["j_aug"] - got["j_aug"]) > 1e-3


def test_cli_measures_the_target_the_run_trained_with(tmp_path):
    """A run with ``target_norm`` in its metrics is measured at that norm; ``--target-norm`` asks for others."""
    import pandas as pd

    from replicate.inan.cli import main
    from replicate.io import torch_save, write_json

    v = 40
    torch.manual_seed(0)
    torch_save(tmp_path / "corpus.pt", {"vocab": [f"w{i}" for i in range(v)], "train": torch.arange(v),
                                        "valid": torch.arange(v), "test": torch.arange(v)})
    run = tmp_path / "small_al_later_tnorm"
    torch_save(run / "checkpoint.pt", {"model": {"embedding.weight": torch.randn(v, 8) * 0.01}, "epoch": 1})
    write_json(run / "metrics.json", {"valid_ppl": 9.0, "inan": {"variant": "al", "tau": 1.0, "target_norm": 20.0}})
    out = tmp_path / "soft.csv"
    assert main(["soft-target", "--corpus", str(tmp_path / "corpus.pt"), "--out", str(out), str(run)]) == 0
    df = pd.read_csv(out)
    assert len(df) == 1 and df["target_norm"].iloc[0] == 20.0 and df["token_target_mass"].iloc[0] > 0.99
    assert main(["soft-target", "--corpus", str(tmp_path / "corpus.pt"), "--target-norm", "none", "20",
                 "--out", str(out), str(run)]) == 0
    df = pd.read_csv(out)
    assert df["target_norm"].isna().tolist() == [True, False]
    assert df["token_entropy_ratio"].iloc[0] > 0.999 > 0.01 > df["token_entropy_ratio"].iloc[1]
    with pytest.raises(SystemExit):
        main(["soft-target", "--corpus", "x", "--target-norm", "-1", "--out", str(out), str(run)])
