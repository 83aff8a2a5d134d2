"""Inan et al. on the engine: RE model, the AL hook, the 6.2 pieces (tiny synthetic data, fast)."""

from __future__ import annotations

import json
import random

import pytest
import torch
import torch.nn.functional as F

from replicate.data import Corpus
from replicate.errors import ReplicateError
from replicate.inan.losses import augmented_loss
from replicate.inan.readings import points, reading_names, reading_seeds, reading_settings
from replicate.inan.subspace_exp import (AdamPreconditioner, make_extra_loss, project_embedding_, run_one,
                                         slice_start, unit_norm_hook)
from replicate.inan.train import AugmentedLoss, run_settings
from replicate.lstm.config import resolve
from replicate.lstm.model import LSTMLM

SIZE = {"hidden_size": 8, "init_scale": 0.1, "dropout_rate": 0.3, "batch_size": 2, "bptt": 5, "lr": 1.0,
        "epochs": 1, "max_epoch": 1, "decay": 0.5, "clip": 5.0, "tau": 3.0, "gamma": 0.5}


def _model(variant, vocab=13):
    engine, al = run_settings(SIZE, "small", variant, seed=1)
    model_cfg, _ = resolve(engine, vocab)
    return LSTMLM(model_cfg), al


def test_re_has_no_bias_and_shares_storage():
    model, al = _model("re")
    assert al is None
    assert model.output_bias is None
    assert model.output_weight is model.embedding.weight
    assert model.output_weight.data_ptr() == model.embedding.weight.data_ptr()
    model.check_tying()
    # one matrix in the parameter list; a change of the embedding is a change of the output layer
    names = [n for n, _ in model.named_parameters()]
    assert not any("decoder" in n for n in names)
    with torch.no_grad():
        model.embedding.weight[3].fill_(0.7)
    feats = torch.ones(1, 8)
    assert float(model.logits(feats).detach()[0, 3]) == pytest.approx(0.7 * 8, rel=1e-6)
    sd = model.state_dict()
    fresh, _ = _model("re")
    fresh.load_state_dict(sd)
    fresh.check_tying()
    assert fresh.output_weight.data_ptr() == fresh.embedding.weight.data_ptr()


def test_vd_variant_is_untied_with_inan_dropout():
    vd, al_none = _model("vd")
    assert al_none is None and vd.output_bias is not None and vd.output_weight is not vd.embedding.weight
    assert vd.cfg.dropout == "inan" and vd.cfg.dropout_rate == pytest.approx(0.3)


def test_real_variant_is_tied_without_bias_with_the_augmented_loss():
    real, al = _model("real")
    assert isinstance(al, AugmentedLoss) and (al.tau, al.gamma, al.soft_target_grad) == (3.0, 0.5, False)
    assert al.alpha == pytest.approx(1.5)  # alpha = gamma * tau
    assert real.output_bias is None and real.output_weight is real.embedding.weight


def test_run_overrides_reach_the_engine_and_the_loss():
    """Overrides set the engine's settings and the AL's tau; tau and gamma never reach the engine; max_epoch
    counts epochs at lr 1 (schedule later), valid runs as one stream, no dropout on the embedding (paper)."""
    engine, al9 = run_settings(SIZE, "small", "al", seed=4, overrides={"epochs": 7, "tau": 9.0})
    assert engine["epochs"] == 7 and "tau" not in engine and "gamma" not in engine and engine["seed"] == 4
    assert al9.alpha == pytest.approx(4.5)
    assert engine["schedule"] == "later" and engine["valid_batch_size"] == 1
    assert not resolve(engine, 13)[0].embedding_dropout


def test_unknown_variant_is_refused():
    with pytest.raises(ReplicateError):
        run_settings(SIZE, "small", "nope", seed=1)


def test_augmented_loss_hook_value_and_resume_guard():
    model, al = _model("al")
    logits = torch.randn(5, 2, 13)
    targets = torch.randint(0, 13, (5, 2))
    got = al(logits, targets, None, model)
    want = 0.5 * 3.0 * augmented_loss(logits - model.output_bias, targets, model.embedding.weight, 3.0)
    torch.testing.assert_close(got, want)
    al.load_state_dict(al.state_dict())  # same settings: fine
    with pytest.raises(ReplicateError):
        al.load_state_dict({**al.state_dict(), "tau": 4.0})


@pytest.fixture
def al_case():
    """An AL model with a unigram-like output bias far from zero, features, targets, and the soft target
    y~ = softmax(E[t] E^T / tau) of the paper, from the embedding alone."""
    torch.manual_seed(0)
    model, al = _model("al")
    with torch.no_grad():
        model.decoder_bias.copy_(torch.randn(13) * 3)
    feats, targets = torch.randn(6, 8), torch.randint(0, 13, (6,))
    emb = model.embedding.weight.detach()
    y_soft = torch.softmax(emb[targets] @ emb.t() / 3.0, dim=-1)
    return model, al, feats, targets, y_soft


def _kl(y_soft, y_hat):
    return (y_soft * (y_soft.log() - y_hat.log())).sum(-1).mean()


def test_augmented_loss_prediction_is_the_papers_without_bias(al_case):
    """y^ = softmax(W h / tau) (paper): a plain transcription of the formula from the features and W alone."""
    model, al, feats, targets, y_soft = al_case
    y_hat = torch.softmax(feats @ model.output_weight.t() / 3.0, dim=-1)
    torch.testing.assert_close(al(model.logits(feats), targets, feats, model), 1.5 * _kl(y_soft, y_hat))


def test_augmented_loss_gives_the_bias_no_gradient_in_the_papers_form(al_case):
    model, al, feats, targets, _ = al_case
    model.zero_grad()
    al(model.logits(feats), targets, feats, model).backward()
    assert float(model.decoder_bias.grad.abs().max()) < 1e-6


def test_augmented_loss_with_prediction_bias_is_the_earlier_form(al_case):
    """With ``prediction_bias`` y^ = softmax((W h + b) / tau), which differs from the paper's on this case."""
    model, al, feats, targets, y_soft = al_case
    y_hat_b = torch.softmax((feats @ model.output_weight.t() + model.decoder_bias) / 3.0, dim=-1)
    with_bias = AugmentedLoss(3.0, 0.5, prediction_bias=True)
    got = with_bias(model.logits(feats), targets, feats, model)
    torch.testing.assert_close(got, 1.5 * _kl(y_soft, y_hat_b))
    assert float((got - al(model.logits(feats), targets, feats, model)).detach().abs()) > 1e-3


def test_augmented_loss_resumes_only_a_checkpoint_of_its_own_form():
    """A checkpoint from before the switch (no key) was trained with the bias: only that form resumes it."""
    old = {"tau": 3.0, "gamma": 0.5, "soft_target_grad": False}
    AugmentedLoss(3.0, 0.5, prediction_bias=True).load_state_dict(old)
    with pytest.raises(ReplicateError):
        AugmentedLoss(3.0, 0.5).load_state_dict(old)
    AugmentedLoss(3.0, 0.5).load_state_dict({**old, "prediction_bias": False})
    with pytest.raises(ReplicateError):  # checkpoints without tau_power were trained with alpha = gamma * tau
        AugmentedLoss(3.0, 0.5, tau_power=2).load_state_dict({**old, "prediction_bias": False})


def test_augmented_loss_weight_is_gamma_tau_to_the_power(al_case):
    """alpha = gamma * tau ** tau_power; run_settings passes tau_power through."""
    model, al, feats, targets, _ = al_case
    sq = AugmentedLoss(3.0, 0.5, tau_power=2)
    assert sq.alpha == pytest.approx(4.5) and al.alpha == pytest.approx(1.5)
    logits = model.logits(feats)
    torch.testing.assert_close(sq(logits, targets, feats, model), 3.0 * al(logits, targets, feats, model))
    assert run_settings({**SIZE, "tau_power": 2}, "small", "al", seed=1)[1].alpha == pytest.approx(4.5)
    with pytest.raises(ReplicateError):
        AugmentedLoss(3.0, 0.5, tau_power=-1)


def test_prediction_bias_switch_reaches_al_and_cannot_change_real(al_case):
    """run_settings passes the switch through; +REAL has no bias, so the switch cannot change it."""
    _, _, feats, targets, _ = al_case
    assert run_settings({**SIZE, "prediction_bias": True}, "small", "al", seed=1)[1].prediction_bias
    real, al_real = _model("real")
    logits = real.logits(feats)
    torch.testing.assert_close(al_real(logits, targets, feats, real),
                               AugmentedLoss(3.0, 0.5, prediction_bias=True)(logits, targets, feats, real))


def test_subspace_loss_reduces_to_ce_at_beta_zero_and_matches_formula():
    assert make_extra_loss(0.0, 10.0) is None  # the engine then minimises CE alone
    torch.manual_seed(0)
    model, _ = _model("vd")
    logits, targets = torch.randn(4, 3, 13), torch.randint(0, 13, (4, 3))
    ce = F.cross_entropy(logits.reshape(-1, 13), targets.reshape(-1))
    j = augmented_loss(logits, targets, model.embedding.weight, 2.0)
    for beta in (0.3, 1.0):
        extra = make_extra_loss(beta, 2.0)(logits, targets, None, model)
        torch.testing.assert_close(ce + extra, beta * j * 4.0 * 13 + (1 - beta) * ce)


def test_unit_norm_hook_normalises_rows_before_the_forward():
    model, _ = _model("vd")
    handle = unit_norm_hook(model)
    with torch.no_grad():
        model.embedding.weight.mul_(3.0)
    model(torch.zeros(3, 2, dtype=torch.long), model.init_hidden(2))
    torch.testing.assert_close(model.embedding.weight.norm(dim=1), torch.ones(13))
    handle.remove()


def test_slice_start_is_fixed_by_the_seed_alone():
    """The slice of a published run: the same start in every process and whatever the global RNGs hold
    (known answers), spread over every valid start, the whole corpus when the slice is as long."""
    random.seed(0)
    first = slice_start(1000, 100, 3)
    random.seed(1)
    torch.manual_seed(1)
    assert (first, slice_start(1000, 100, 3), slice_start(1000, 100, 1)) == (346, 346, 233)
    starts = [slice_start(1000, 100, s) for s in range(200)]
    assert min(starts) >= 0 and max(starts) <= 900
    assert min(starts) < 100 and max(starts) > 800  # uniform over 0..900: both misses have chance (8/9)^200
    assert {slice_start(100, 100, s) for s in range(5)} == {0}
    with pytest.raises(ReplicateError):
        slice_start(10, 100, 1)


def test_adam_preconditioner_matches_torch_adam():
    torch.manual_seed(0)
    p1 = torch.nn.Parameter(torch.randn(4))
    p2 = torch.nn.Parameter(p1.detach().clone())
    model = torch.nn.Module()
    model.w = p1
    pre, ref = AdamPreconditioner(), torch.optim.Adam([p2], lr=0.01)
    info = type("Info", (), {"model": model})()
    for _ in range(3):
        for p in (p1, p2):
            p.grad = (p ** 2).detach() + 0.1
        pre(info)
        with torch.no_grad():
            p1.add_(p1.grad, alpha=-0.01)
        ref.step()
    torch.testing.assert_close(p1.detach(), p2.detach())


def test_embedding_norm_readings_project_the_right_axis():
    torch.manual_seed(0)
    w = torch.randn(13, 4) * 3
    rows, cols, none = w.clone(), w.clone(), w.clone()
    project_embedding_(rows, "word_vectors")
    project_embedding_(cols, "dimensions")
    project_embedding_(none, "none")
    torch.testing.assert_close(rows.norm(dim=1), torch.ones(13))  # every word vector (row of E = column of L)
    torch.testing.assert_close(cols.norm(dim=0), torch.ones(4))  # every row of the d x |V| matrix L
    assert torch.equal(none, w)
    with pytest.raises(ReplicateError):
        project_embedding_(w, "rows")


def test_readings_merge_overrides_and_figure_reading_runs_first():
    cfg = {"seeds": [1, 2], "reading_seeds": [1], "epochs": 12, "lr": 0.003, "optimizer": "adam",
           "readings": {"a": {}, "f": {"optimizer": "sgd", "output_init": "zero", "lr": 1.0}},
           "figure_reading": "f", "compare_readings": ["a", "f"], "panel_a": {}, "panel_b": {}}
    assert reading_names(cfg) == ["f", "a"]
    s = reading_settings(cfg, "f")
    assert s["optimizer"] == "sgd" and s["output_init"] == "zero" and s["lr"] == 1.0 and s["epochs"] == 12
    assert "readings" not in s and "reading_seeds" not in s
    assert reading_seeds(cfg, "f") == [1, 2] and reading_seeds(cfg, "a") == [1]
    with pytest.raises(ReplicateError, match="not defined"):
        reading_names({**cfg, "compare_readings": ["a", "zz"]})
    with pytest.raises(ReplicateError, match="unknown key"):
        reading_settings({**cfg, "readings": {"a": {"dropout": 0.5}}}, "a")


def test_points_cover_both_panels():
    pts = points({"panel_a": {"tau": 10, "betas": [0, 1]}, "panel_b": {"beta": 1, "taus": [2, 10]}})
    assert pts == [("a", 10.0, 0.0), ("a", 10.0, 1.0), ("b", 2.0, 1.0), ("b", 10.0, 1.0)]


TINY_RUN = {"slice_words": 300, "hidden_size": 6, "num_layers": 2, "init_scale": 0.1, "batch_size": 3, "bptt": 5,
            "lr": 0.01, "epochs": 1, "max_epoch": 1, "decay": 1.0, "clip": 5.0, "eval_max_tokens": 50,
            "log_every": 100, "optimizer": "adam"}  # a 6.2 run in seconds
SGD_ZERO_W = {**TINY_RUN, "lr": 0.5, "optimizer": "sgd", "output_init": "zero"}  # reading (f)'s optimiser and W init


@pytest.fixture
def corpus() -> Corpus:
    """Random tokens over a 30-word vocabulary: 600 to train, 100 to validate."""
    g = torch.Generator().manual_seed(0)
    return Corpus([f"w{i}" for i in range(30)], torch.randint(0, 30, (600,), generator=g),
                  torch.randint(0, 30, (100,), generator=g), torch.randint(0, 30, (10,), generator=g))


def test_subspace_run_one_tiny(tmp_path, corpus):
    torch.manual_seed(0)
    rec = run_one({**TINY_RUN, "epochs": 2, "max_epoch": 2}, corpus, tmp_path / "r", seed=2, tau=5.0, beta=1.0, log=lambda *_: None)
    assert set(rec["distance_by_epoch"]) == {"0", "1", "2"}
    assert 0.0 <= rec["distance"] <= 1.0
    assert rec["embedding_row_norm_max_dev"] < 1e-5
    assert rec["distance"] != rec["distance_by_epoch"]["0"]  # training moved W or L
    assert set(rec["angle_distance_by_epoch"]) == {"0", "1", "2"} and 0.0 <= rec["angle_distance"] <= 1.0


def test_output_bias_false_holds_the_bias_at_zero(tmp_path, corpus):
    """Reading knob output_bias: false: the output bias starts at 0 and is never trained; the default
    trains it."""
    torch.manual_seed(0)
    off = run_one({**SGD_ZERO_W, "output_bias": False}, corpus, tmp_path / "a", seed=1, tau=5.0, beta=1.0,
                  log=lambda *_: None)
    on = run_one(SGD_ZERO_W, corpus, tmp_path / "b", seed=1, tau=5.0, beta=1.0, log=lambda *_: None)
    assert off["output_bias_norm"] == 0.0 and on["output_bias_norm"] > 0.0


def test_zero_output_init_with_sgd_starts_w_at_zero_and_moves_it(tmp_path, monkeypatch, corpus):
    """Reading (f): W starts at exactly 0 (rank 0: the distance at init is undefined, recorded as None: null in
    the strict JSON) and training moves it (a defined distance after the epoch)."""
    import replicate.inan.subspace_exp as sx

    seen = {}
    real_tracker = sx.DistanceTracker

    class Spy(real_tracker):
        def __call__(self, epoch, model, record):
            if epoch == 0:
                seen["w0"] = model.output_weight.detach().abs().max().item()
            return super().__call__(epoch, model, record)

    monkeypatch.setattr(sx, "DistanceTracker", Spy)
    torch.manual_seed(0)
    rec = sx.run_one(SGD_ZERO_W, corpus, tmp_path / "r", seed=1, tau=5.0, beta=1.0, log=lambda *_: None)
    assert seen["w0"] == 0.0
    assert rec["distance_by_epoch"]["0"] is None and rec["angle_distance_by_epoch"]["0"] is None
    assert 0.0 <= rec["distance"] <= 1.0


def test_subspace_point_reuses_a_finished_seed_only_under_the_same_settings_and_code(tmp_path, monkeypatch, corpus):
    import replicate.inan.subspace_exp as sx

    spec = {"subspace": TINY_RUN, "tau": 5.0, "beta": 1.0, "seeds": [1]}
    calls = []

    def fake_run_one(s, c, run_dir, seed, tau, beta, device="cpu", log=print):
        calls.append(seed)
        return {"seed": seed, "distance": 0.5, "angle_distance": 0.7, "distance_by_epoch": {"0": 0.9, "1": 0.5}}

    monkeypatch.setattr(sx, "run_one", fake_run_one)
    first = sx.run_point(spec, corpus, tmp_path)
    assert calls == [1] and first["distance_mean"] == 0.5 and first["angle_distance_mean"] == 0.7
    sx.run_point(spec, corpus, tmp_path)
    assert calls == [1]  # reused: same settings, same code
    done = tmp_path / "seed1.json"
    record = json.loads(done.read_text())
    record["code_version"] = "0" * 16  # as if trained by other code
    done.write_text(json.dumps(record))
    sx.run_point(spec, corpus, tmp_path)
    assert calls == [1, 1]
    sx.run_point({**spec, "subspace": {**TINY_RUN, "lr": 0.02}}, corpus, tmp_path)
    assert calls == [1, 1, 1]


def _point(tmp_path, reading, tau, beta, distance):
    path = tmp_path / f"{reading}_{tau}_{beta}.json"
    path.write_text(json.dumps({"reading": reading, "tau": tau, "beta": beta, "n_seeds": 1,
                                "distance_mean": distance, "angle_distance_mean": distance + 0.2,
                                "runs": [{"settings": {"optimizer": "adam", "lr": 0.003, "epochs": 12}}]}))
    return path


def test_readings_table_tells_a_rapid_decrease_from_an_even_fall_and_a_step(tmp_path, repo_root):
    from replicate.inan.report import readings_table

    panels = points({"panel_a": {"tau": 10, "betas": [0, 0.5, 1]}, "panel_b": {"beta": 1, "taus": [2, 10, 20]}})
    shapes = {"rapid": {0: 0.98, 0.5: 0.2, 1: 0.1, 2: 0.3, 20: 0.05},
              "even": {0: 0.98, 0.5: 0.54, 1: 0.1, 2: 0.3, 20: 0.05},
              "step": {0: 0.98, 0.5: 0.89, 1: 0.88, 2: 0.88, 20: 0.88}}
    paths = []
    for reading, d in shapes.items():
        paths += [_point(tmp_path, reading, 10.0, b, d[b]) for b in (0.0, 0.5, 1.0)]
        paths += [_point(tmp_path, reading, t, 1.0, d[t]) for t in (2.0, 20.0)]
    df = readings_table(paths, panels, repo_root / "paper/reference/inan_figure1.csv", "smoke").set_index("reading")
    assert bool(df.loc["rapid", "rapid_in_beta"]) and bool(df.loc["rapid", "lower_at_larger_tau"])
    assert not bool(df.loc["even", "rapid_in_beta"])  # half the fall in half the beta range
    # a step that then stays flat: 90 % of a 0.10 fall in the first interval is rapid (the size verdict judges the end)
    assert bool(df.loc["step", "rapid_in_beta"]) and not bool(df.loc["step", "lower_at_larger_tau"])
    assert df.loc["rapid", "distance_beta1"] == pytest.approx(0.1)
    assert df.loc["rapid", "angle_distance_beta1"] == pytest.approx(0.3)
    assert df.loc["step", "first_step_share"] == pytest.approx(0.09 / 0.10)
    assert df.loc["rapid", "paper_distance_beta1_approx"] == pytest.approx(0.06)
    assert df["metric"].str.startswith("relative residual").all()


def _screen_run(root, variant, tag, schedule, train_tokens, valids, reduction="screen"):
    d = root / f"small_{variant}_{tag}"
    d.mkdir()
    (d / "history.csv").write_text("epoch,valid_ppl\n" + "".join(f"{i + 1},{v}\n" for i, v in enumerate(valids)))
    m = {"run": f"inan/ptb/small_{variant}_{tag}", "valid_ppl": valids[-1], "test_ppl": valids[-1], "train_ppl": 1.0,
         "history": [{"epoch": i + 1, "valid_ppl": v, "seconds": 1500.0, "eval_seconds": 300.0}
                     for i, v in enumerate(valids)],
         "resolved": {"train": {"schedule": schedule, "decay": 0.9, "decay_interval": 5, "max_epoch": 5, "epochs": 2,
                                "max_train_tokens": train_tokens}},
         "inan": {"variant": variant, "seed": 1, "reduction": reduction, "alpha": None}}
    (d / "metrics.json").write_text(json.dumps(m))
    return d / "metrics.json"


def test_screen_gain_is_over_the_vd_run_of_the_same_schedule_and_training_budget(tmp_path):
    """A full-data VD-LSTM run beside the reduced-budget ones is its own baseline, never the reduced runs'."""
    from replicate.inan.report import screen

    paths = [_screen_run(tmp_path, "vd", "interval", "interval", 1000, [320.0, 330.0]),
             _screen_run(tmp_path, "al", "interval_x", "interval", 1000, [310.0, 300.0]),
             _screen_run(tmp_path, "vd", "interval_full", "interval", None, [120.0, 110.0], reduction="full data")]
    df = screen(paths, "reduced").set_index("tag")
    assert df.loc["interval_x", "gain_over_vd"] == pytest.approx(30.0)
    assert df.loc["interval_x", "best_gain_over_vd"] == pytest.approx(20.0)
    assert df.loc["interval_full", "gain_over_vd"] == pytest.approx(0.0)  # not 330 - 110
    assert df.loc["interval", "gain_over_vd"] == pytest.approx(0.0)
    assert df.loc["interval_full", "protocol"].startswith("reduced (full data")
    assert df.loc["interval_x", "hours"] == pytest.approx(1.0)  # 2 epochs x (1,500 s training + 300 s validation)


def test_re_bias_is_the_shared_matrix_with_its_own_output_bias():
    """Not the paper's RE: one V x H matrix for input and output (shared storage), plus an output bias of |V|."""
    from replicate.inan.train import PAPER_VARIANTS, VARIANTS

    model, al = _model("re_bias")
    re_model, _ = _model("re")
    vd, _ = _model("vd")
    assert al is None and "re_bias" not in PAPER_VARIANTS and "not the paper's RE" in VARIANTS["re_bias"]["label"]
    assert model.output_weight is model.embedding.weight
    assert model.output_weight.data_ptr() == model.embedding.weight.data_ptr()
    model.check_tying()
    assert model.output_bias is not None and tuple(model.output_bias.shape) == (13,)
    names = dict(model.named_parameters())
    assert "decoder_bias" in names and "decoder_weight" not in names
    assert model.num_parameters() == re_model.num_parameters() + 13 == vd.num_parameters() - 13 * 8
    with torch.no_grad():
        model.decoder_bias.fill_(0.5)
        model.embedding.weight[3].fill_(0.7)
    assert float(model.logits(torch.ones(1, 8)).detach()[0, 3]) == pytest.approx(0.7 * 8 + 0.5, rel=1e-6)


def test_screen_baselines_named_treatments_and_soft_target_columns(tmp_path):
    """A named baseline wins; a VD run that names one is a treatment and never a default baseline; each +AL row
    carries its y~ statistics from its soft-target CSV."""
    import pandas as pd

    from replicate.errors import ReplicateError
    from replicate.inan.report import screen

    paths = [_screen_run(tmp_path, "vd", "later", "later", 1000, [320.0, 330.0]),
             _screen_run(tmp_path, "vd", "later_embdrop", "later", 1000, [315.0, 325.0]),
             _screen_run(tmp_path, "re", "later_embdrop", "later", 1000, [310.0, 322.0]),
             _screen_run(tmp_path, "al", "later_tnorm10", "later", 1000, [300.0, 310.0])]
    runs = [{"variant": "vd", "tag": "later"}, {"variant": "vd", "tag": "later_embdrop", "baseline": "later"},
            {"variant": "re", "tag": "later_embdrop", "baseline": "later_embdrop"},
            {"variant": "al", "tag": "later_tnorm10"}]
    soft = tmp_path / "soft.csv"
    pd.DataFrame([{"run": str(paths[3].parent), "tau": 10.0, "trained_tau": 10.0, "target_norm": 10.0,
                   "trained_target_norm": 10.0, "token_entropy_ratio": 0.6, "token_target_mass": 0.2,
                   "token_top_mass": 0.5, "embedding_norm_mean": 1.3, "loss_al_share": 0.05},
                  {"run": str(paths[3].parent), "tau": 20.0, "trained_tau": 10.0, "target_norm": 10.0,
                   "trained_target_norm": 10.0, "token_entropy_ratio": 0.9, "token_target_mass": 0.01,
                   "token_top_mass": 0.1, "embedding_norm_mean": 1.3, "loss_al_share": 0.05}]).to_csv(soft, index=False)
    df = screen(paths, "reduced", runs, [soft]).set_index("tag")
    rows = df[df["variant"] == "vd"]
    assert rows.loc["later_embdrop", "gain_over_vd"] == pytest.approx(5.0)  # the treatment against vd_later
    re_row = df[df["variant"] == "re"].iloc[0]
    assert re_row["baseline"] == "vd_later_embdrop" and re_row["gain_over_vd"] == pytest.approx(3.0)
    al_row = df[df["variant"] == "al"].iloc[0]
    assert al_row["baseline"] == "vd_later" and al_row["gain_over_vd"] == pytest.approx(20.0)
    assert (al_row["soft_entropy_ratio"], al_row["soft_target_mass"], al_row["al_share"]) == (0.6, 0.2, 0.05)
    assert pd.isna(re_row["soft_target_mass"])
    # two VD runs that name no baseline and share the budget: the +AL run's pairing is refused, not guessed
    with pytest.raises(ReplicateError, match="several VD-LSTM runs"):
        screen(paths, "reduced", [r for r in runs if r["tag"] != "later_embdrop" or r["variant"] != "vd"]
               + [{"variant": "vd", "tag": "later_embdrop"}])
    # a named baseline on another budget is refused
    other = _screen_run(tmp_path, "vd", "full", "later", None, [100.0, 90.0])
    with pytest.raises(ReplicateError, match="another learning-rate path"):
        screen([other, paths[3]], "reduced", [{"variant": "vd", "tag": "full"},
                                              {"variant": "al", "tag": "later_tnorm10", "baseline": "full"}])
