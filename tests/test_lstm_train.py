"""Training-protocol units: lr schedule, loss scaling, PR term, hooks, NaN stop, evaluation, and one
epoch of the Trainer against a plain PyTorch reference loop (nn.LSTM, nn.Linear, cross-entropy, SGD)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from replicate.errors import ReplicateError
from replicate.lstm.config import PRESETS, ModelConfig, TrainConfig, lr_at, resolve
from replicate.lstm.model import LSTMLM
from replicate.lstm.train import Trainer, batchify

V = 40


def _data(n, seed=0):
    return torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(seed))


def _trainer(model_kw=None, train_kw=None, cls=Trainer, train=None, **kw):
    torch.manual_seed(0)
    model = LSTMLM(ModelConfig(vocab_size=V, hidden_size=8, **(model_kw or {}))).double()
    cfg = TrainConfig(**{"batch_size": 4, "bptt": 5, "epochs": 1, "log_every": 10**6, **(train_kw or {})})
    train = _data(400) if train is None else train
    return cls(model, cfg, train, _data(120, 1), _data(120, 2), **{"log": lambda s: None, **kw})


@pytest.mark.parametrize("size, expected", [
    ("small", [1, 1, 1, 1, 1, 0.5, 0.25]),  # TF r0.8: lr_decay ** max(i - max_epoch, 0), 0-based i
    ("medium", [1] * 7 + [1 / 1.2, 1 / 1.2 ** 2]),
    ("large", [1] * 15 + [1 / 1.15]),
    ("large_bd", [1] * 11 + [1 / 1.15, 1 / 1.15 ** 2]),  # Lua: decay once epoch > max_epoch has ended
])
def test_lr_schedule_per_size(size, expected):
    _, cfg = resolve({"size": size}, vocab_size=V)
    assert [lr_at(cfg, e) for e in range(len(expected))] == pytest.approx(expected)
    assert cfg.epochs == {"small": 13, "medium": 39, "large": 55, "large_bd": 55}[size]
    assert cfg.clip == (10.0 if size.startswith("large") else 5.0)
    assert PRESETS[size]["init_scale"] == {"small": 0.1, "medium": 0.05, "large": 0.04, "large_bd": 0.04}[size]


def test_loss_is_sum_over_steps_of_batch_mean_nll():
    tr = _trainer()
    tr.hidden = tr.model.init_hidden(4)
    x, y = tr.train_data[:5], tr.train_data[1:6]
    hidden0 = tr.model.init_hidden(4)
    loss, mean_nll = tr._loss(x, y)
    features, _ = tr.model(x, hidden0)
    logits = tr.model.logits(features)
    per_step = [F.cross_entropy(logits[t], y[t]) for t in range(5)]  # batch mean at each step
    torch.testing.assert_close(loss, torch.stack(per_step).sum())
    torch.testing.assert_close(mean_nll, torch.stack(per_step).mean().detach())


def test_later_schedule_holds_lr_for_max_epoch_epochs():
    _, cfg = resolve({"size": "small", "schedule": "later"}, vocab_size=V)
    assert [lr_at(cfg, e) for e in range(6)] == pytest.approx([1, 1, 1, 1, 0.5, 0.25])


def _port_lrs(interval: int, decay: float, epochs: int) -> list[float]:
    """A plain transcription of the Keras port's LearningRateScheduler (called at the start of every
    0-based epoch; it multiplies the running lr in place)."""
    lr, out = 1.0, []
    for epoch in range(epochs):
        if epoch != 0 and (epoch + 1) % interval == 0:
            lr *= decay
        out.append(lr)
    return out


@pytest.mark.parametrize("interval, decay", [(5, 0.9), (10, 0.9), (1, 0.97), (2, 0.5)])
def test_interval_schedule_matches_the_keras_port(interval, decay):
    _, cfg = resolve({"size": "small", "schedule": "interval", "decay_interval": interval, "decay": decay,
                      "epochs": 40}, vocab_size=V)
    assert [lr_at(cfg, e) for e in range(40)] == pytest.approx(_port_lrs(interval, decay, 40))
    # small: 4 epochs at lr 1, then x0.9 at the start of epochs 5, 10, 15, ... (1-based)
    if (interval, decay) == (5, 0.9):
        assert [lr_at(cfg, e) for e in range(11)] == pytest.approx([1] * 4 + [0.9] * 5 + [0.81] * 2)
    with pytest.raises(ReplicateError, match="decay_interval"):
        resolve({"size": "small", "schedule": "interval", "decay_interval": 0}, vocab_size=V)


@pytest.mark.parametrize("form, default_lambda", [("authors_code", 1 / 6.5), ("squared", 0.15), ("unsquared", 0.15)])
def test_pr_forms_default_lambda(form, default_lambda):
    assert TrainConfig(pr_form=form).pr_lambda == default_lambda
    assert TrainConfig().pr_form == "authors_code"
    with pytest.raises(ReplicateError, match="pr_form"):
        TrainConfig(pr_form="paper")


@pytest.mark.parametrize("form", ["authors_code", "squared", "unsquared"])
def test_projection_regularisation_term(form):
    tr = _trainer({"projection": True}, {"pr_form": form})
    x, y = tr.train_data[:5], tr.train_data[1:6]
    tr.hidden = tr.model.init_hidden(4)
    with_pr, nll = tr._loss(x, y)
    tr.hidden = tr.model.init_hidden(4)
    features, _ = tr.model(x, tr.hidden)
    plain = tr.model.nll(features, y) / 4
    p2 = tr.model.projection.weight.pow(2).sum()
    # released TF script: tf.nn.l2_loss(proj) / (batch_size * 6.5), l2_loss = sum(P^2) / 2
    expected = {"authors_code": p2 / 2 / (4 * 6.5), "squared": 0.15 * p2, "unsquared": 0.15 * p2.sqrt()}[form]
    torch.testing.assert_close(with_pr - plain, expected)
    torch.testing.assert_close(nll, (plain * 4 / 20).detach())  # reported NLL: CE alone


def test_extra_loss_hook_is_scaled_like_the_cross_entropy():
    seen = {}

    def extra(logits, targets, features, model):
        seen["shapes"] = (logits.shape, targets.shape, features.shape)
        return torch.tensor(0.5, dtype=torch.float64)
    tr = _trainer(extra_loss=extra)
    tr.hidden = tr.model.init_hidden(4)
    x, y = tr.train_data[:5], tr.train_data[1:6]
    loss, _ = tr._loss(x, y)
    tr.extra_loss = None
    tr.hidden = tr.model.init_hidden(4)
    plain, _ = tr._loss(x, y)
    torch.testing.assert_close(loss - plain, torch.tensor(5 * 0.5, dtype=torch.float64))
    assert seen["shapes"] == ((5, 4, V), (5, 4), (5, 4, 8))


def test_nan_loss_stops_with_run_epoch_and_batch(tmp_path):
    def extra(logits, targets, features, model):
        extra.calls += 1
        return torch.tensor(float("nan") if extra.calls == 3 else 0.0, dtype=torch.float64)
    extra.calls = 0
    tr = _trainer(extra_loss=extra, run_dir=tmp_path, name="small_wt/seed9")
    with pytest.raises(ReplicateError) as err:
        tr.run()
    msg = str(err.value)
    assert "small_wt/seed9" in msg and "epoch 1" in msg and "batch 3/" in msg and "checkpoint" in msg
    assert "non-finite training loss (nan) at epoch 1, batch 3/" in msg


class _InfGrad(torch.autograd.Function):
    """Zero in value, an infinite gradient: a finite loss whose gradient norm is not finite."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * 0).sum()

    @staticmethod
    def backward(ctx, g):
        return torch.full_like(ctx.saved_tensors[0], math.inf)


def test_a_non_finite_gradient_norm_stops_the_run_and_says_so():
    tr = _trainer(extra_loss=lambda logits, targets, features, model: _InfGrad.apply(features), name="r")
    with pytest.raises(ReplicateError, match=r"^run r: non-finite gradient norm at epoch 1, batch 1/19 "):
        tr.run()


def test_training_data_shorter_than_one_window_is_refused_with_the_fix():
    with pytest.raises(ReplicateError) as err:
        _trainer(train=_data(20), name="r")  # 5 rows of 4 streams: no window of bptt 5 plus its targets
    assert str(err.value).startswith("run r: training data too short for one window of 5 x 4 tokens")
    assert err.value.fix == "use more training tokens or a smaller bptt"


def test_nan_in_a_later_epoch_keeps_the_last_good_checkpoint_and_names_it(tmp_path):
    """A NaN injected at step k of epoch 2 (test hook, not a real lr): the epoch-1 checkpoint stays as it was,
    finite, the message names it, and nothing past the fault is saved (checkpoint_minutes=0 saves every batch)."""
    def extra(logits, targets, features, model):
        extra.calls += 1
        return torch.tensor(float("nan") if extra.calls == tr.batches + 2 else 0.0, dtype=torch.float64)
    extra.calls = 0
    tr = _trainer(train_kw={"epochs": 2, "checkpoint_minutes": 0}, extra_loss=extra, run_dir=tmp_path, name="r")
    with pytest.raises(ReplicateError) as err:
        tr.run()
    assert "epoch 2, batch 2/" in str(err.value) and f"kept: {tmp_path / 'checkpoint.pt'}" in str(err.value)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert (state["epoch"], state["batch"]) == (1, 1)  # the save after the last good step
    assert all(bool(torch.isfinite(t).all()) for t in state["model"].values())


class _Stopped(Exception):
    """Stands in for a kill between two training steps."""


def test_a_run_stopped_mid_epoch_resumes_bit_identically(tmp_path):
    """Variational dropout (the RNG) and the hidden state carried across windows both matter: a run stopped at
    step 25 (epoch 2, checkpoint every batch) and finished by a new Trainer, whose weights and RNG are changed
    before it resumes, ends with the same weights and history as a run that never stopped."""
    bd = {"dropout": "variational", "dropout_word": 0.2, "dropout_input": 0.4, "dropout_hidden": 0.3,
          "dropout_output": 0.4}
    train_kw = {"epochs": 2, "checkpoint_minutes": 0}
    whole = _trainer(bd, train_kw, run_dir=tmp_path / "whole")
    whole_metrics = whole.run()

    def stop(info):
        if info.step == 25:
            raise _Stopped
    with pytest.raises(_Stopped):
        _trainer(bd, train_kw, run_dir=tmp_path / "cut", on_step=stop).run()
    resumed = _trainer(bd, train_kw, run_dir=tmp_path / "cut")
    with torch.no_grad():
        for p in resumed.model.parameters():
            p.add_(1.0)
    torch.manual_seed(12345)
    metrics = resumed.run()
    assert resumed.step == whole.step == 2 * whole.batches and whole.batches < 25 < 2 * whole.batches
    for (name, a), b in zip(whole.model.named_parameters(), resumed.model.parameters()):
        assert torch.equal(a, b), name
    untimed = lambda h: [{k: v for k, v in r.items() if "second" not in k and k != "tokens_per_s"} for r in h]  # noqa: E731
    assert untimed(metrics["history"]) == untimed(whole_metrics["history"])
    assert (metrics["valid_ppl"], metrics["test_ppl"]) == (whole_metrics["valid_ppl"], whole_metrics["test_ppl"])


def test_non_finite_weights_are_never_saved(tmp_path):
    tr = _trainer(run_dir=tmp_path, name="r")
    with torch.no_grad():
        tr.model.embedding.weight[3, 1] = float("inf")
    with pytest.raises(ReplicateError, match="non-finite weights \\(embedding.weight\\) before a checkpoint save"):
        tr.save_checkpoint()
    assert not (tmp_path / "checkpoint.pt").exists()


def test_non_finite_evaluation_stops_the_run_instead_of_reporting_nan():
    tr = _trainer()
    with torch.no_grad():
        tr.model.decoder_bias[0] = float("nan")
    with pytest.raises(ReplicateError, match="non-finite evaluation loss"):
        tr.evaluate(tr.valid)


def test_a_fault_after_the_last_epoch_is_named_as_the_final_evaluation(tmp_path):
    """Where: the final evaluation, not an epoch past the last; what is kept: nothing without a run folder, else
    the checkpoint's path; the fix names the settings to change."""
    for run_dir, kept in ((None, "no checkpoint was written"), (tmp_path, f"the last good checkpoint is kept: "
                                                                           f"{tmp_path / 'checkpoint.pt'}")):
        tr = _trainer(run_dir=run_dir)
        tr.run()
        with pytest.raises(ReplicateError) as err:
            tr._fault("x")
        assert f"in the final evaluation (lr 1, clip 5); {kept}; no result is written" in err.value.cause
        assert "epoch" not in err.value.cause
        assert err.value.fix == ("lower the learning rate or the clip value, or check the data; a rerun with the same "
                                 "settings resumes from the kept checkpoint, other settings start a new run folder")


def test_final_metrics_read_each_split_at_its_own_batch_size():
    """train_ppl is the last epoch's running value; clean train and valid use valid_batch_size streams, test
    eval_batch_size (here 4 and 1, which give different numbers); before any epoch there is no train ppl."""
    tr = _trainer(train_kw={"valid_batch_size": 4})
    assert tr.final_metrics()["train_ppl"] is None
    m = tr.run()
    assert m["epochs_completed"] == 1 and m["train_ppl"] == m["history"][-1]["train_ppl"]
    assert m["train_clean_ppl"] == tr.evaluate(tr.train_tokens, batch_size=4)
    assert m["valid_ppl"] == tr.evaluate(tr.valid, batch_size=4) != tr.evaluate(tr.valid)
    assert m["test_ppl"] == tr.evaluate(tr.test)


def test_a_diverging_loss_logs_inf_perplexity_instead_of_crashing():
    from replicate.lstm.train import perplexity
    assert perplexity(800.0) == math.inf and perplexity(math.log(50)) == pytest.approx(50)
    assert perplexity(709.9) == math.inf and perplexity(708.9) < math.inf  # exp overflows from 709.78 on


@pytest.mark.parametrize("seconds, shown", [(0, "0h00m00s"), (-5.0, "0h00m00s"), (59.9, "0h00m59s"),
                                            (3725.9, "1h02m05s"), (360000, "100h00m00s")])
def test_eta_as_shown(seconds, shown):
    from replicate.lstm.train import _fmt_time
    assert _fmt_time(seconds) == shown


def test_seeding_sets_pythons_numpys_and_torchs_generators():
    import random

    import numpy as np

    from replicate.lstm.train import seed_everything
    draws = []
    for seed in (3, 3, 4):
        seed_everything(seed)
        draws.append((random.random(), float(np.random.rand()), float(torch.rand(()))))
    assert draws[0] == draws[1] and all(a != b for a, b in zip(draws[1], draws[2]))


class _Spy(Trainer):
    """A Trainer that keeps each step's mean NLL and counts its checkpoint saves."""
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.nlls, self.saves = [], 0

    def _loss(self, inputs, targets):
        loss, nll = super()._loss(inputs, targets)
        self.nlls.append(float(nll))
        return loss, nll

    def save_checkpoint(self):
        self.saves += 1
        super().save_checkpoint()


def test_each_epochs_record_is_its_mean_training_nll_its_speed_and_its_valid_ppl(tmp_path):
    """train ppl = exp(mean step NLL of that epoch), tok/s = its tokens over its training seconds, valid ppl at
    valid_batch_size; a progress line every log_every batches and at the last; the lr of each epoch's schedule."""
    import time
    lines = []
    t0 = time.perf_counter()
    tr = _trainer(train_kw={"epochs": 3, "max_epoch": 1, "valid_batch_size": 3, "log_every": 4}, cls=_Spy,
                  log=lines.append, run_dir=tmp_path)
    metrics = tr.run()
    wall, history = time.perf_counter() - t0, metrics["history"]
    b = tr.batches
    assert b == 19 and len(tr.nlls) == 3 * b and [r["epoch"] for r in history] == [1, 2, 3]
    for i, r in enumerate(history):
        assert r["lr"] == lr_at(tr.cfg, i)
        assert r["train_ppl"] == pytest.approx(math.exp(sum(tr.nlls[i * b:(i + 1) * b]) / b), rel=1e-12)
        assert r["tokens_per_s"] == pytest.approx(b * 5 * 4 / r["seconds"], rel=1e-9)
        assert 0 < r["seconds"] and 0 <= r["eval_seconds"]
    assert sum(r["seconds"] + r["eval_seconds"] for r in history) <= wall
    assert [r["lr"] for r in history] == [1.0, 1.0, 0.5]  # the TF schedule: decay from epoch max_epoch + 2
    assert history[-1]["valid_ppl"] == tr.evaluate(tr.valid, batch_size=3) != tr.evaluate(tr.valid)
    progress = [line for line in lines if " batch " in line]
    assert [line.split(" batch ")[1].split(" ")[0] for line in progress] == ["4/19", "8/19", "12/19", "16/19",
                                                                              "19/19"] * 3
    assert lines.count(progress[0]) == 1 and progress[4].startswith("[run] epoch 1/3 batch 19/19 loss ")
    r = history[0]
    head = f"[run] epoch 1/3 lr 1 train ppl {r['train_ppl']:.2f} valid ppl {r['valid_ppl']:.2f} ("
    assert [line for line in lines if line.startswith(head)] == [
        f"{head}{r['seconds']:.0f} s, {r['tokens_per_s']:.0f} tok/s; eval {r['eval_seconds']:.0f} s)"]
    assert tr.saves == 3  # at each epoch's end only: the 10-minute mid-epoch checkpoint never came
    assert metrics["num_parameters"] == tr.model.num_parameters()
    assert metrics["train_tokens_per_s"] == pytest.approx(3 * b * 20 / sum(r["seconds"] for r in history), rel=1e-9)


def test_on_a_clock_of_two_seconds_per_reading_each_epoch_and_progress_line_is_known(tmp_path, monkeypatch):
    """perf_counter stepping 2 s per reading makes every training step 2 s: an epoch's seconds are its 19 steps
    summed, 10 tokens/s (4 x 5 tokens a step), eval 2 s; each progress line's loss, ppl, tok/s and ETA follow, and
    history.csv holds exactly the epoch records."""
    import itertools
    import types

    import pandas as pd

    from replicate.lstm import train as train_mod
    clock = itertools.count()
    monkeypatch.setattr(train_mod, "time", types.SimpleNamespace(perf_counter=lambda: 2.0 * next(clock)))
    lines = []
    tr = _trainer(train_kw={"epochs": 2, "log_every": 1}, cls=_Spy, log=lines.append, run_dir=tmp_path)
    history = tr.run()["history"]
    b = tr.batches
    assert [(r["seconds"], r["tokens_per_s"], r["eval_seconds"]) for r in history] == [(2.0 * b, 10.0, 2.0)] * 2
    for n in (1, 4):
        mean = sum(tr.nlls[:n]) / n
        eta = train_mod._fmt_time(2.0 * (b - n + b))  # batches left in epoch 1 and all of epoch 2, 2 s each
        assert f"[run] epoch 1/2 batch {n}/19 loss {mean:.3f} ppl {math.exp(mean):.1f} lr 1 10 tok/s ETA {eta} " \
               "(training only)" in lines
    written = pd.read_csv(tmp_path / "history.csv")
    columns = ["epoch", "lr", "train_ppl", "valid_ppl", "seconds", "tokens_per_s", "eval_seconds"]
    assert list(written.columns) == columns
    pd.testing.assert_frame_equal(written, pd.DataFrame(history)[columns], check_dtype=False, rtol=1e-12)


def test_a_checkpoint_every_batch_saves_all_but_each_epochs_last_mid_epoch(tmp_path):
    tr = _trainer(train_kw={"epochs": 2, "checkpoint_minutes": 0}, cls=_Spy, run_dir=tmp_path)
    tr.run()
    assert tr.saves == 2 * tr.batches  # (batches - 1) mid-epoch + 1 at the end, per epoch


def test_a_parameter_without_a_gradient_is_skipped_and_the_others_still_step():
    tr = _trainer()
    tr.model.embedding.weight.requires_grad_(False)  # the first parameter: the update loop must go on past it
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters()}
    tr.run()
    for n, p in tr.model.named_parameters():
        assert torch.equal(p, before[n]) == (n == "embedding.weight"), n


class _CountSteps:
    """A stateful step hook: its count must come back with a resume."""
    def __init__(self, stop_at=None):
        self.count, self.stop_at = 0, stop_at

    def __call__(self, info):
        if info.step == self.stop_at:
            raise _Stopped
        self.count += 1

    def state_dict(self):
        return {"count": self.count}

    def load_state_dict(self, state):
        self.count = state["count"]


class _StateOnly:
    def __call__(self, *args):
        pass

    def state_dict(self):
        return {}


def test_the_checkpoint_keeps_the_state_of_each_hook_that_can_save_and_load_it_under_its_role():
    """The roles are the checkpoint's keys (a published run's checkpoint reads them); a hook that cannot load
    its state back is not saved."""
    both = _trainer(extra_loss=_CountSteps(), on_epoch=_CountSteps(), on_step=_CountSteps())
    assert list(both._stateful_callbacks()) == ["extra_loss", "on_epoch", "on_step"]
    assert list(_trainer(on_step=_StateOnly(), on_epoch=lambda *a: None)._stateful_callbacks()) == []


@pytest.mark.parametrize("stop_at", [25, 19])  # mid-epoch 2, and epoch 2's first step (after the epoch-end save)
def test_a_resume_brings_back_the_hooks_state_and_refuses_other_settings(tmp_path, stop_at):
    train_kw = {"epochs": 2, "checkpoint_minutes": 0}
    with pytest.raises(_Stopped):
        _trainer(train_kw=train_kw, run_dir=tmp_path, on_step=_CountSteps(stop_at), fingerprint={"cell": 1}).run()
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert set(state) == {"model", "optimizer", "epoch", "batch", "step", "hidden", "sums", "history", "rng",
                          "fingerprint", "callbacks"}
    assert (state["callbacks"], state["fingerprint"], state["step"]) == ({"on_step": {"count": stop_at}},
                                                                          {"cell": 1}, stop_at)
    assert state["optimizer"] == {"lr": 1.0} and (state["hidden"] is None) == (stop_at == 19)
    with pytest.raises(ReplicateError, match="belongs to different settings or code"):
        _trainer(train_kw=train_kw, run_dir=tmp_path, fingerprint={"cell": 2}).run()
    hook = _CountSteps()
    tr = _trainer(train_kw=train_kw, run_dir=tmp_path, on_step=hook, fingerprint={"cell": 1})
    tr.run()
    assert hook.count == tr.step == 2 * tr.batches == 38


def test_hooks_and_train_token_limit():
    epochs, steps = [], []

    def on_epoch(epoch, model, record):
        epochs.append((epoch, None if record is None else record["epoch"]))

    def on_step(info):
        assert info.model.embedding.weight.grad is not None
        steps.append((info.epoch, info.batch, info.step, info.lr, tuple(info.inputs.shape)))
        assert torch.equal(info.targets[:-1], info.inputs[1:]) and info.weight_decay == 0.0
    tr = _trainer(train_kw={"epochs": 2, "max_train_tokens": 204}, on_epoch=on_epoch, on_step=on_step)
    metrics = tr.run()
    assert tr.train_data.shape == (51, 4) and tr.batches == 10  # (51 - 1) // 5
    assert epochs == [(0, None), (1, 1), (2, 2)]
    assert len(steps) == 20 and steps[0] == (1, 0, 0, 1.0, (5, 4)) and steps[-1][:3] == (2, 9, 19)
    assert [r["epoch"] for r in metrics["history"]] == [1, 2]
    assert {"lr", "train_ppl", "valid_ppl", "seconds", "tokens_per_s"} <= set(metrics["history"][0])
    assert metrics["test_ppl"] > 1 and metrics["train_clean_ppl"] > 1


def test_evaluation_does_not_depend_on_the_window_length():
    tr = _trainer()
    tr.cfg.eval_window = 1
    step_by_step = tr.evaluate(tr.valid)
    tr.cfg.eval_window = 1000
    assert tr.evaluate(tr.valid) == pytest.approx(step_by_step, rel=1e-12)
    assert 1 < step_by_step < 10 * V


def test_one_epoch_equals_a_plain_pytorch_reference_loop():
    """Same weights after an epoch as nn.Embedding + nn.LSTM + nn.Linear + cross-entropy, with the hidden
    state carried across windows, the loss sum_t mean_b, global-norm clipping and SGD at lr 1."""
    tr = _trainer(train_kw={"clip": 0.5})
    model = tr.model
    emb = torch.nn.Embedding(V, 8).double()
    lstm = torch.nn.LSTM(8, 8, num_layers=2).double()
    out = torch.nn.Linear(8, V).double()
    with torch.no_grad():
        emb.weight.copy_(model.embedding.weight)
        out.weight.copy_(model.output_weight)
        out.bias.copy_(model.output_bias)
        for l, layer in enumerate(model.layers):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(lstm, f"{name}_l{l}").copy_(getattr(layer, name))
    params = list(emb.parameters()) + list(lstm.parameters()) + list(out.parameters())
    start = emb.weight.detach().clone()
    data = batchify(_data(400), 4)
    hidden = None
    for b in range((data.shape[0] - 1) // 5):
        x, y = data[b * 5: b * 5 + 5], data[b * 5 + 1: b * 5 + 6]
        hidden = None if hidden is None else tuple(h.detach() for h in hidden)
        h, hidden = lstm(emb(x), hidden)
        loss = F.cross_entropy(out(h).reshape(-1, V), y.reshape(-1), reduction="sum") / 4
        for p in params:
            p.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.5)
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-1.0)
    tr.run()
    torch.testing.assert_close(model.embedding.weight, emb.weight)
    torch.testing.assert_close(model.output_weight, out.weight)
    torch.testing.assert_close(model.layers[1].weight_hh, lstm.weight_hh_l1)
    # the epoch moved the weights (by ~2e-4) far past assert_close's float64 tolerance (1e-7): the comparison
    # above is not of two unchanged starts
    assert (emb.weight - start).abs().max() > 1e-5
    assert math.isfinite(tr.history[0]["train_ppl"])


def test_weight_decay_is_applied_after_the_step_and_not_scaled_by_lr():
    """Lua BD code: paramx:add(-lr, clipped grad); paramx:add(-weight_decay, paramx)."""
    grads = {}

    def grab(info):
        grads.update({n: p.grad.clone() for n, p in info.model.named_parameters()})

    tr = _trainer(train_kw={"weight_decay": 0.01, "lr": 0.5, "max_batches": 1}, on_step=grab)
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters()}
    tr.train_epoch()
    for n, p in tr.model.named_parameters():
        torch.testing.assert_close(p.detach(), (before[n] - 0.5 * grads[n]) * (1 - 0.01))


def test_valid_batch_size_evaluates_parallel_streams_like_the_reference_valid_run():
    """TF r0.8 / Lua: valid runs with the training batch, every stream's state starting at zero."""
    tr = _trainer(train_kw={"valid_batch_size": 4})
    model = tr.model.eval()
    data = batchify(tr.valid, 4)
    with torch.no_grad():
        features, _ = model(data[:-1], model.init_hidden(4))
        expected = math.exp(float(model.nll(features, data[1:])) / data[1:].numel())
    assert tr.evaluate(tr.valid, batch_size=4) == pytest.approx(expected, rel=1e-12)
    assert tr.evaluate(tr.valid, batch_size=4) != pytest.approx(tr.evaluate(tr.valid), rel=1e-6)
