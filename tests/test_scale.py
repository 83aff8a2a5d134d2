"""Scale study: grid, gains, claim rule, transformer helpers; smoke outputs (slow)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from replicate.io import read_json
from replicate.scale import study
from replicate.scale import transformer as tt

from support.workflow import SMOKE_RESULTS

CFG = {
    "data": {"hidden": 200, "pcts": [10, 100], "wikitext2_pcts": [100], "seeds": [1, 2]},
    "model": {"pct": 100, "hiddens": [200, 400], "seeds": [1]},
    "analysis": {"pct": 100, "hidden": 200, "variants": ["untied", "tied", "tied_pr"], "seeds": [1, 2],
                 "pr_seeds": [1]},
}


def test_grid_shares_cells_between_studies():
    grid = study.lstm_grid(CFG)
    keys = [tuple(p[k] for k in study.GRID_KEYS[:5]) for p in grid]
    assert {p["dropout"] for p in grid} == {"0"}  # no scale.lstm.dropouts: one level, no dropout
    assert len(keys) == len(set(keys))
    # data: 2 pcts x 2 tyings x 2 seeds + wt2 2 x 2 = 12; model adds h400 x 2 (h200 @100 shared);
    # analysis adds tied_pr seed 1 only (pr_seeds)
    assert len(grid) == 12 + 2 + 1
    assert ("ptb", 100, 200, "tied_pr", 1) in keys and ("ptb", 100, 200, "tied_pr", 2) not in keys
    assert study.run_dir("ptb", 25, 400, "tied", 3) == "results/scale/runs/ptb/p25_h400_tied_drop0/seed3"


def test_nested_fractions_and_settings():
    assert study.train_tokens_for(929589, 100) == 929589
    assert study.train_tokens_for(929589, 10) == 92959
    s = study.run_settings({"size": "small", "overrides": {"epochs": 2}}, 400, "tied_pr", 3, 1000)
    assert s == {"size": "small", "epochs": 2, "hidden_size": 400, "tying": "tied", "projection": True,
                 "seed": 3, "max_train_tokens": 1000}  # a pct out of 1..100: refused by its path (test_experiments)


def _lr_per_update(overrides, pct, updates_per_full_epoch=1000):
    """The learning rate of every update of a run on ``pct`` % of the data (an epoch of it has pct/100
    of the updates of a full epoch), by the engine's own schedule."""
    from replicate.lstm.config import lr_at, resolve

    _, cfg = resolve({"size": "small", **overrides}, vocab_size=1)
    per_epoch = updates_per_full_epoch * pct // 100
    return [lr_at(cfg, u // per_epoch) for u in range(cfg.epochs * per_epoch)]


@pytest.mark.parametrize("overrides", [
    {"epochs": 2, "max_epoch": 1, "decay": 0.5, "schedule": "later"},  # the default preset's
    {},                                                                  # the small preset: 13 epochs, r0.8
])
def test_equal_updates_follows_the_full_run_update_by_update(overrides):
    lstm = {"size": "small", "overrides": overrides, "equal_updates": True}
    full = study.equal_update_overrides(lstm, 100)
    assert full == overrides  # the 100 % run is unchanged
    lr_full = _lr_per_update(full, 100)
    _, cfg = study.resolve({"size": "small", **overrides}, vocab_size=1)
    for pct in (10, 25):
        scaled = study.equal_update_overrides(lstm, pct)
        lr = _lr_per_update(scaled, pct)
        assert len(lr) == len(lr_full)  # as many updates as the 100 % run
        for k in range(cfg.epochs):  # equal at the last update of every 100 % epoch
            u = (k + 1) * 1000 - 1
            assert lr[u] == pytest.approx(lr_full[u], rel=1e-12), (pct, k)
        # in between: not below the 100 % run's lr, and not above its previous epoch's
        assert all(a - 1e-12 <= b <= a / cfg.decay + 1e-12 for a, b in zip(lr_full, lr))
        held = sum(1 for x in lr_full if x == cfg.lr)
        assert lr[:held] == lr_full[:held] and lr[held] < cfg.lr  # the same updates at the initial lr


def test_equal_updates_values_rounding_and_off():
    lstm = {"size": "small", "overrides": {"epochs": 2, "max_epoch": 1, "decay": 0.5, "schedule": "later"},
            "equal_updates": True}
    assert study.equal_update_overrides(lstm, 10) == {"epochs": 20, "max_epoch": 10, "decay": 0.5 ** 0.1, "schedule": "later"}
    assert study.equal_update_overrides(lstm, 25) == {"epochs": 8, "max_epoch": 4, "decay": 0.5 ** 0.25, "schedule": "later"}
    assert study.equal_update_overrides(lstm, 100) == lstm["overrides"]
    # 100/30 = 3.33: epochs 6.67 -> 7, held epochs 3.33 -> 3 (nearest integer, halves up: 2.5 -> 3)
    assert study.equal_update_overrides(lstm, 30)["epochs"] == 7 and study.equal_update_overrides(lstm, 30)["max_epoch"] == 3
    assert study.round_epochs(2.5) == 3 and study.round_epochs(2.49) == 2
    # r0.8 holds max_epoch + 1 epochs: the small preset's 5 held epochs x 4 = 20 -> max_epoch 19
    r08 = study.equal_update_overrides({"size": "small", "overrides": {}, "equal_updates": True}, 25)
    assert r08 == {"epochs": 52, "max_epoch": 19, "decay": 0.5 ** 0.25}
    off = {**lstm, "equal_updates": False}
    assert study.equal_update_overrides(off, 10) == lstm["overrides"]
    assert study.equal_update_overrides({k: v for k, v in off.items() if k != "equal_updates"}, 10) == lstm["overrides"]
    from replicate.errors import ReplicateError

    with pytest.raises(ReplicateError, match="max_batches"):
        study.equal_update_overrides({**lstm, "overrides": {"epochs": 1, "max_batches": 6}}, 50)


def test_train_spec_carries_the_scaled_overrides_and_leaves_them_alone_when_off():
    sc = {"lstm": {"size": "small", "overrides": {"epochs": 2, "max_epoch": 1, "decay": 0.5, "schedule": "later"},
                   "equal_updates": True}, "top_k": 10, "track_every": 1}
    wc = {"dataset": "ptb", "pct": "10", "hidden": "200", "variant": "tied", "seed": "1"}
    spec = study.train_spec(sc, wc, {"protocol": "reduced"}, record=True)
    assert spec["record"] is True and spec["config"]["scale_run"]["record"] is True
    assert spec["lstm"] == {"size": "small", "overrides": study.lstm_overrides(sc["lstm"], 10)}
    assert spec["equal_updates"] is True and spec["config"]["scale_run"]["lstm"]["overrides"]["epochs"] == 20
    settings = study.run_settings(spec["lstm"], 200, "tied", 1, 92959)
    assert settings["epochs"] == 20 and settings["max_epoch"] == 10
    off = {**sc, "lstm": {**sc["lstm"], "equal_updates": False}}
    spec = study.train_spec(off, wc, {"protocol": "reduced"}, record=False)
    assert spec["record"] is False
    no_dropout = {"dropout": "none", "dropout_rate": 0.0}
    assert spec["lstm"] == {"size": "small", "overrides": {**sc["lstm"]["overrides"], **no_dropout}}
    assert "equal_updates" not in spec and spec["patience"] is None


def _runs(gains_by_pct, seeds=(1, 2), noise=0.0):
    rows = []
    rng = np.random.default_rng(0)
    for pct, gain in gains_by_pct.items():
        for seed in seeds:
            base = 300 - pct
            for variant, ppl in (("untied", base), ("tied", base - gain + noise * rng.standard_normal())):
                rows.append({"run": f"{pct}{variant}{seed}", "dataset": "ptb", "pct": pct, "train_tokens": pct * 1000,
                             "hidden": 200, "variant": variant, "tying": variant, "projection": False, "seed": seed,
                             "epochs": 2, "vocab_size": 10000, "total_params": 4e6 if variant == "untied" else 2e6,
                             "embedding_params": 4e6 - 2e5 if variant == "untied" else 2e6 - 2e5,
                             "non_embedding_params": 2e5, "embedding_share": 0.95, "train_ppl": 1.0,
                             "train_clean_ppl": 1.0, "final_valid_ppl": ppl + 1, "best_valid_ppl": ppl,
                             "best_epoch": 2, "test_ppl": ppl, "tokens_per_s": 1.0})
    return study.runs_frame(rows, "reduced")


def test_gain_tables_and_claim_holds_when_gain_shrinks():
    cfg = {**CFG, "data": {**CFG["data"], "pcts": [10, 25, 50, 100], "wikitext2_pcts": []},
           "model": {"pct": 100, "hiddens": [200], "seeds": [1]}}
    runs = _runs({10: 20.0, 25: 12.0, 50: 6.0, 100: 3.0}, noise=0.5)
    by_seed = study.gain_by_seed(runs, cfg, "best_valid", "reduced")
    data = study.data_table(by_seed)
    assert list(data["train_tokens"].unique()) == [10000, 25000, 50000, 100000]
    row = data[(data.pct == 10) & (data.seed == 1)].iloc[0]
    assert row["gain"] == pytest.approx(row["untied_valid_ppl"] - row["tied_valid_ppl"])
    assert row["rel_gain"] == pytest.approx(row["gain"] / row["untied_valid_ppl"])
    gain = study.gain_table(by_seed)
    assert set(gain["study"]) == {"data", "model"} and (gain["n_seeds"] == 2).all()
    claims = study.claims_table(by_seed, "reduced").set_index("claim_id")
    assert claims.loc["scale_data_gain", "verdict"] == "holds"
    assert claims.loc["scale_model_share", "verdict"] == "not run"


def test_claim_does_not_hold_when_gain_grows():
    cfg = {**CFG, "data": {**CFG["data"], "pcts": [10, 25, 50, 100], "wikitext2_pcts": []}}
    runs = _runs({10: 1.0, 25: 5.0, 50: 10.0, 100: 20.0})
    by_seed = study.gain_by_seed(runs, cfg, "final_valid", "reduced")
    claims = study.claims_table(by_seed, "reduced").set_index("claim_id")
    assert claims.loc["scale_data_gain", "verdict"] == "does not hold"


def test_slope_test_hand_values():
    t = study.slope_test([0, 1, 2], [1.0, 3.0, 5.0])
    assert t["slope"] == pytest.approx(2.0) and t["se"] == pytest.approx(0.0)
    assert math.isnan(study.slope_test([1, 1], [1, 2])["slope"])


# ----------------------------------------------------------------------------- transformer helpers
def test_transformer_lr_schedule():
    spec = {"lr": 1.0, "warmup": 10, "steps": 110, "min_lr_ratio": 0.1}
    assert tt.lr_at(0, spec) == pytest.approx(0.1)
    assert tt.lr_at(9, spec) == pytest.approx(1.0)
    assert tt.lr_at(60, spec) == pytest.approx(0.55)
    assert tt.lr_at(110, spec) == pytest.approx(0.1)


def test_count_spikes_hand_case():
    assert tt.count_spikes([1, 1, 1, 1, 2, 1, 1, 1.05], window=3, factor=1.1) == 1


def test_theory_step0_matches_sweep_formula():
    n = 33278
    assert tt.theory_step0("untied", 128, 0.02, n) == pytest.approx(math.log(n))
    assert tt.theory_step0("tied", 1024, 0.02, n) == pytest.approx(math.log(math.exp(1024 * 0.02) + n - 1))
    assert tt.theory_step0("tied_rescale", 1024, 0.02, n) == pytest.approx(
        math.log(math.exp(0.02 * 32) + n - 1))


@pytest.mark.parametrize("tied, rescale, std", [(True, True, 1.0), (True, False, 0.1), (False, False, 0.1)])
def test_spread_step0_loss_matches_a_sampled_zero_branch_model(tied, rescale, std):
    """The log-sum-exp of a model whose blocks are identities, sampled: the spread form lands on it, while the
    essay's form misses the other logits' variance (0.5 nats for T5's unit embedding with the rescale)."""
    import torch

    from replicate.scale.study import spread_step0_loss

    d, n = 64, 33278  # the sweep's width and WikiText-2's vocabulary
    g = torch.Generator().manual_seed(0)
    emb = torch.randn(n, d, generator=g, dtype=torch.float64) * std
    out = emb if tied else torch.randn(n, d, generator=g, dtype=torch.float64) * std
    x = emb[:500]
    h = x / x.pow(2).mean(1, keepdim=True).sqrt() * (d ** -0.5 if rescale else 1.0)
    sampled = float(torch.logsumexp(h @ out.T, 1).mean())
    # within 0.02: the form takes the self-logit at its mean (its spread, sd 0.7 at std 1, adds about 0.01)
    assert spread_step0_loss(tied, rescale, d, std, n) == pytest.approx(sampled, abs=0.02)
    essay = tt.theory_step0("tied_rescale" if rescale else "tied" if tied else "untied", d, std, n)
    assert abs(essay - sampled) > 0.1


def test_t5_unit_embedding_starts_at_the_spread_form():
    """T5's pairing (unit-variance tied embedding, d^-1/2 rescale) in the sweep's model at d 64 and WikiText-2's
    vocabulary: the self-logit is sqrt(d) = 8, the other logits have variance 1, and the step-0 loss on random
    tokens (no target = input) sits at the spread form, 0.47 nats above the essay's form."""
    import torch

    from replicate.llama import TransformerLM, draw_, param_generator
    from replicate.scale.study import spread_step0_loss

    n, d = 33278, 64
    spec = {"variant": "tied_rescale_unit", "std": "0.02", "d_model": d, "n_layers": 2, "head_dim": 16,
            "init": "normal"}
    model = TransformerLM(tt.model_config(spec, n), seed=1)
    with torch.no_grad():  # as tt.train draws it
        draw_(model.embed.weight.data, tt.EMBED_STD["tied_rescale_unit"], "normal", param_generator(1, "embed.weight"))
        tokens = torch.randint(0, n, (4, 129), generator=torch.Generator().manual_seed(0))
        loss, ce, self_logit = model(tokens[:, :-1], tokens[:, 1:])
    assert float(self_logit.mean()) == pytest.approx(8.0, abs=0.2)
    # per token: log-sum-exp (nearly constant) minus the target's logit ~ N(0, 1); mean of 512: sd 0.045
    assert float(loss) == pytest.approx(spread_step0_loss(True, True, d, 1.0, n), abs=0.15)
    assert float(loss) - tt.theory_step0("tied_rescale_unit", d, 0.02, n) > 0.3


def test_transformer_train_tiny(tmp_path):
    """A few steps on a synthetic corpus: curve and summary written, tying real, step-0 loss at the closed form."""
    import torch

    from replicate.data import Corpus

    g = torch.Generator().manual_seed(0)
    corpus = Corpus(vocab=[f"w{i}" for i in range(50)], train=torch.randint(0, 50, (2000,), generator=g),
                    valid=torch.randint(0, 50, (300,), generator=g), test=torch.randint(0, 50, (10,)))
    spec = {"name": "t", "variant": "tied", "std": "0.02", "seed": 1, "d_model": 16, "n_layers": 1,
            "head_dim": 8, "init": "normal", "steps": 5, "batch_size": 2, "seq_len": 8, "lr": 1e-3, "warmup": 2,
            "min_lr_ratio": 0.1, "weight_decay": 0.1, "clip": 1.0, "eval_every": 2, "eval_tokens": 64,
            "spike_window": 2, "spike_rel": 0.1, "spike_grad_factor": 3.0}
    s = tt.train(spec, corpus, tmp_path, threads=1, device="cpu", log=lambda *_: None)
    # logits at init: h . e_j with |h| ~ sqrt(d) after the norm, e_j ~ N(0, 0.02^2), so sd 0.02 * 4 = 0.08 per
    # logit; the step-0 loss is a mean over 2 x 8 tokens: within 0.05 (2.5 sd) of the closed form (3.920)
    assert s["theory_step0_loss"] == pytest.approx(math.log(math.exp(16 * 0.02) + 49))
    assert s["step0_loss"] == pytest.approx(s["theory_step0_loss"], abs=0.05)
    curve = pd.read_csv(tmp_path / "curve.csv")
    assert list(curve["step"]) == [0, 1, 2, 3, 4] and curve["valid_loss"].notna().sum() == 3
    # the test split (one window of 8 here) is read once, after training; valid's last value is the final one
    assert math.isfinite(s["final_test_loss"]) and s["final_test_loss"] != s["final_valid_loss"]
    assert s["final_valid_loss"] == curve["valid_loss"].dropna().iloc[-1]
    assert read_json(tmp_path / "summary.json")["provenance"]["config"]["variant"] == "tied"


# ----------------------------------------------------------------------------- smoke outputs
@pytest.mark.slow
def test_smoke_scale_outputs(smoke_run):
    res = smoke_run / SMOKE_RESULTS
    data = pd.read_csv(res / "tables" / "scale_data.csv")
    for col in ("train_tokens", "gain", "rel_gain", "protocol", "seed"):
        assert col in data.columns
    assert data["train_tokens"].nunique() >= 2 and (data["protocol"] == "smoke").all()
    gain = pd.read_csv(res / "tables" / "scale_gain.csv")
    assert {"data", "model", "wikitext2"} <= set(gain["study"])
    claims = pd.read_csv(res / "tables" / "scale_claims.csv")
    assert set(claims["claim_id"]) == {"scale_data_gain", "scale_model_share", "scale_data_gain_drop0.3",
                                       "scale_model_share_drop0.3"}
    assert {"ci_low", "ci_high", "dropout"} <= set(claims.columns)
    assert {"log_ratio_lo", "log_ratio_hi", "runs_at_cap"} <= set(gain.columns)
    runs = pd.read_csv(res / "scale" / "runs.csv")
    assert set(runs["stop_reason"]) <= {"patience", "cap"} and (runs["epochs"] <= 2).all()
    # only the embedding analysis' runs (smoke: PTB 100 %, hidden 16, no dropout) record their embeddings
    folders = sorted(p.parent for p in (res / "scale" / "runs").glob("*/*/seed*/summary.json"))
    recorded = {f"{p.parent.name}/{p.name}" for p in folders if (p / "embeddings.pt").is_file()}
    assert recorded == {f"p100_h16_{v}_drop0/seed1" for v in ("untied", "tied", "untied_pr", "tied_pr")}
    assert all((p / "updates.csv").is_file() == (p / "embeddings.pt").is_file() for p in folders)
    assert {read_json(p / "summary.json")["embedding_record"] for p in folders} == {True, False}
    for stem in ("scale_answer", "scale_data_gain", "scale_model_gain", "scale_transformer", "scale_update_frequency",
                 "scale_embedding_similarity"):
        assert (res / "figures" / f"{stem}.png").stat().st_size > 0
        assert (res / "figures" / f"{stem}.svg").is_file()


@pytest.mark.slow
def test_smoke_embedding_analysis_outputs(smoke_run):
    res = smoke_run / SMOKE_RESULTS
    upd = pd.read_csv(res / "scale" / "update_frequency.csv")
    # Press & Wolf's argument, measured even in the smoke run: untied input rows move only when the
    # word is an input; output and tied rows move at every step.
    inp = upd[(upd.variant == "untied") & (upd.matrix == "input")]
    assert np.allclose(inp["update_fraction"], inp["input_fraction"])
    assert (upd[upd.matrix == "output"]["update_fraction"] == 1.0).all()
    assert (upd[upd.matrix == "tied"]["update_fraction"] == 1.0).all()
    sim = pd.read_csv(res / "tables" / "scale_embedding_similarity.csv")
    assert {"tied_vs_untied_input", "tied_vs_untied_output"} <= set(sim["comparison"])
    assert sim["spearman"].between(-1, 1).all()
    epochs = pd.read_csv(res / "scale" / "embedding_similarity_epochs.csv")
    assert epochs["epoch"].nunique() >= 2
    ws = pd.read_csv(res / "scale" / "word_similarity.csv")
    assert ws["status"].str.startswith("not provided").all()
    tf = pd.read_csv(res / "tables" / "scale_transformer.csv")
    assert set(tf["variant"]) == {"untied", "tied", "tied_rescale", "tied_rescale_unit"} and tf["selected"].all()
    unit = tf[tf["variant"] == "tied_rescale_unit"].iloc[0]
    assert unit["embed_std"] == 1.0 and unit["spread_step0_loss"] > unit["theory_step0_loss"] > unit["log_n"]
    # unit-variance logits add about var/2 = 0.5 nats to log n (T5's pairing); the others start near log n
    assert (abs(tf["step0_loss"] - tf["log_n"]) < tf["variant"].map(lambda v: 1.0 if v.endswith("unit") else 0.5)).all()
