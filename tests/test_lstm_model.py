"""LSTM model units: parameter counts, tying, fused kernels vs PyTorch reference ops, dropout masks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from replicate.errors import ReplicateError
from replicate.lstm.config import ModelConfig, resolve
from replicate.lstm.kernels import linear_nll, lstm_sequence
from replicate.lstm.model import LSTMLayer, LSTMLM


@pytest.mark.parametrize("tying, projection, expected_m", [
    ("untied", False, 4.65), ("tied", False, 2.65), ("untied", True, 4.69), ("tied", True, 2.69)])
def test_small_parameter_counts_match_table6(tying, projection, expected_m):
    model = LSTMLM(ModelConfig(vocab_size=10000, hidden_size=200, tying=tying, projection=projection))
    assert round(model.num_parameters() / 1e6, 2) == expected_m


@pytest.mark.parametrize("tying, expected_m", [("untied", 66), ("tied", 51)])
def test_large_parameter_counts_match_table5(tying, expected_m):
    with torch.device("meta"):  # counts only: no 66M-parameter allocation
        model = LSTMLM(ModelConfig(vocab_size=10000, hidden_size=1500, tying=tying))
    assert round(model.num_parameters() / 1e6) == expected_m


def test_tied_nobias_has_no_output_bias():
    model = LSTMLM(ModelConfig(vocab_size=100, hidden_size=8, tying="tied_nobias"))
    assert model.output_bias is None
    assert model.num_parameters() == LSTMLM(ModelConfig(vocab_size=100, hidden_size=8, tying="tied")).num_parameters() - 100


def _shares(model):
    return model.output_weight is model.embedding.weight and \
        model.output_weight.data_ptr() == model.embedding.weight.data_ptr()


@pytest.mark.parametrize("tying", ["tied", "tied_nobias"])
def test_tied_weight_is_the_embedding_after_construction_to_and_load(tying, tmp_path):
    cfg = ModelConfig(vocab_size=50, hidden_size=8, tying=tying)
    model = LSTMLM(cfg)
    assert _shares(model)
    model = model.to(torch.float64).to("cpu")
    assert _shares(model)
    model.check_tying()
    path = tmp_path / "m.pt"
    torch.save(model.state_dict(), path)
    other = LSTMLM(cfg).to(torch.float64)
    other.load_state_dict(torch.load(path, weights_only=True))
    assert _shares(other)
    assert torch.equal(other.output_weight, model.embedding.weight)


def _nll_and_grads(model, inputs, targets) -> dict[str, torch.Tensor]:
    model.zero_grad()
    features, _ = model(inputs, model.init_hidden(inputs.shape[1]))
    model.nll(features, targets).backward()
    return {name: torch.zeros_like(p) if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}


def test_tied_gradient_is_the_sum_of_both_uses_and_a_step_moves_both():
    """The shared matrix's gradient is the input embedding's plus the output layer's (an untied copy with
    equal weights gives the two parts), and one SGD step moves the embedding and the output layer alike."""
    torch.manual_seed(0)
    tied = LSTMLM(ModelConfig(vocab_size=20, hidden_size=8, tying="tied")).double()
    untied = LSTMLM(ModelConfig(vocab_size=20, hidden_size=8)).double()
    untied.load_state_dict(tied.state_dict(), strict=False)  # all but the decoder weight
    with torch.no_grad():
        untied.decoder_weight.copy_(tied.embedding.weight)
    inputs, targets = torch.randint(0, 20, (4, 3)), torch.randint(0, 20, (4, 3))
    tied_grads, parts = _nll_and_grads(tied, inputs, targets), _nll_and_grads(untied, inputs, targets)
    assert parts["embedding.weight"].abs().max() > 0 and parts["decoder_weight"].abs().max() > 0
    torch.testing.assert_close(tied_grads["embedding.weight"], parts["embedding.weight"] + parts["decoder_weight"])
    before = tied.embedding.weight.detach().clone()
    torch.optim.SGD(tied.parameters(), lr=0.5).step()
    torch.testing.assert_close(tied.embedding.weight, before - 0.5 * tied_grads["embedding.weight"])
    assert tied.output_weight is tied.embedding.weight


def test_untied_output_is_separate():
    model = LSTMLM(ModelConfig(vocab_size=50, hidden_size=8))
    assert model.output_weight is not model.embedding.weight
    assert not torch.equal(model.output_weight, model.embedding.weight)


def test_init_is_uniform_within_scale_for_every_parameter():
    model = LSTMLM(ModelConfig(vocab_size=300, hidden_size=16, projection=True, init_scale=0.05))
    for name, p in model.named_parameters():
        assert p.abs().max() <= 0.05, name
        assert p.abs().max() > 0.04, name  # really drawn, not zero (biases too: forget bias 0 offset)


def test_lstm_layer_matches_nn_lstm_forward_and_gradients():
    torch.manual_seed(0)
    T, B, I, H = 6, 3, 5, 4
    ref = torch.nn.LSTM(I, H).double()
    ours = LSTMLayer(I, H).double()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(ours, name).data.copy_(getattr(ref, name + "_l0").data)
    x = torch.randn(T, B, I, dtype=torch.double, requires_grad=True)
    h0 = torch.randn(B, H, dtype=torch.double, requires_grad=True)
    c0 = torch.randn(B, H, dtype=torch.double, requires_grad=True)
    out_r, (h_r, c_r) = ref(x, (h0[None], c0[None]))
    out_o, (h_o, c_o) = ours(x, (h0, c0))
    torch.testing.assert_close(out_o, out_r)
    torch.testing.assert_close(c_o, c_r[0])
    w = torch.randn(T, B, H, dtype=torch.double)
    inputs = [x, h0, c0]
    g_r = torch.autograd.grad((out_r * w).sum() + c_r.sum(), inputs + list(ref.parameters()))
    g_o = torch.autograd.grad((out_o * w).sum() + c_o.sum(), inputs + [ours.weight_ih, ours.weight_hh,
                                                                       ours.bias_ih, ours.bias_hh])
    for a, b in zip(g_o, g_r):
        torch.testing.assert_close(a, b)


def test_lstm_layer_with_recurrent_mask_passes_gradcheck():
    torch.manual_seed(1)
    layer = LSTMLayer(3, 4).double()
    x = torch.randn(5, 2, 3, dtype=torch.double, requires_grad=True)
    h0 = torch.randn(2, 4, dtype=torch.double, requires_grad=True)
    c0 = torch.randn(2, 4, dtype=torch.double, requires_grad=True)
    mask = torch.rand(2, 4, dtype=torch.double)

    def fn(x, h0, c0, w_ih, w_hh, bias):
        return lstm_sequence(x, h0, c0, w_ih, w_hh, bias, mask)

    # LSTMLayer leaves its parameters uninitialised (LSTMLM initialises them): draw them here
    weights = [torch.empty_like(p).uniform_(-0.5, 0.5).requires_grad_() for p in layer.parameters()][:3]
    assert torch.autograd.gradcheck(fn, (x, h0, c0, *weights))


def _layer_inputs(gate_bias, seed=3, T=4, B=3, H=5):
    torch.manual_seed(seed)
    layer = LSTMLayer(H, H, gate_bias).double()
    for p in layer.parameters():
        torch.nn.init.uniform_(p, -0.5, 0.5)
    x = torch.randn(T, B, H, dtype=torch.double)
    state = (torch.randn(B, H, dtype=torch.double), torch.randn(B, H, dtype=torch.double))
    return layer, x, state


@pytest.mark.parametrize("gate_bias", ["tf", "torch"])
def test_per_gate_path_equals_fused_kernel_when_all_gates_share_the_mask(gate_bias):
    """The plain per-gate recurrence (Gal's LSTM) reduces to the fused kernel when the four gate masks
    are equal: same outputs, states and parameter gradients."""
    layer, x, state = _layer_inputs(gate_bias)
    B, H = state[0].shape
    in_mask = (torch.rand(B, 1, H, dtype=torch.double) < 0.7).double() / 0.7
    h_mask = (torch.rand(B, H, dtype=torch.double) < 0.7).double() / 0.7
    w = torch.randn(x.shape[0], B, H, dtype=torch.double)

    def run(per_gate):
        layer.zero_grad()
        if per_gate:
            out, (h, c) = layer(x, state, h_mask.unsqueeze(1).expand(-1, 4, -1), in_mask.expand(-1, 4, -1))
        else:
            out, (h, c) = layer(x * in_mask[:, 0], state, h_mask)
        ((out * w).sum() + c.sum()).backward()
        return [out.detach(), h.detach(), c.detach()] + [p.grad.clone() for p in layer.parameters()]

    for a, b in zip(run(True), run(False)):
        torch.testing.assert_close(a, b)


def test_tf_gate_bias_is_one_zero_vector_per_layer_and_counts_once():
    model = LSTMLM(ModelConfig(vocab_size=10000, hidden_size=200, gate_bias="tf"))
    names = [n for n, _ in model.named_parameters() if "bias" in n and n.startswith("layers")]
    assert names == ["layers.0.bias", "layers.1.bias"]
    assert all(float(model.layers[i].bias.detach().abs().max()) == 0 for i in range(2))
    torch_form = LSTMLM(ModelConfig(vocab_size=10000, hidden_size=200, gate_bias="torch"))
    assert torch_form.num_parameters() - model.num_parameters() == 2 * 4 * 200  # one bias vector per layer
    assert round(model.num_parameters() / 1e6, 2) == 4.65


def test_per_gate_variational_masks_differ_across_gates_and_stay_fixed_over_time():
    torch.manual_seed(4)
    model = LSTMLM(ModelConfig(vocab_size=30, hidden_size=6, dropout="variational", dropout_input=0.5,
                               dropout_hidden=0.5))
    model.train()
    _, ins, rec, _ = model._masks(torch.zeros(7, 5, dtype=torch.long), torch.zeros(7, 5, 6))
    for m in ins + rec:
        assert m.shape == (5, 4, 6)
        assert not all(torch.equal(m[:, 0], m[:, k]) for k in range(1, 4))
    shared = LSTMLM(ModelConfig(vocab_size=30, hidden_size=6, dropout="variational", dropout_input=0.5,
                                dropout_hidden=0.5, variational_masks="shared"))
    _, ins, rec, _ = shared._masks(torch.zeros(7, 5, dtype=torch.long), torch.zeros(7, 5, 6))
    assert all(m.shape == (5, 6) for m in ins + rec)


def test_inan_embedding_output_is_not_dropped_unless_asked():
    cfg = dict(vocab_size=30, hidden_size=6, dropout="inan", dropout_rate=0.5)
    ids, emb = torch.zeros(3, 4, dtype=torch.long), torch.zeros(3, 4, 6)
    _, ins, rec, out = LSTMLM(ModelConfig(**cfg))._masks(ids, emb)
    assert ins[0] is None and ins[1] is rec[0] and out is rec[1]
    _, ins, _, _ = LSTMLM(ModelConfig(**cfg, embedding_dropout=True))._masks(ids, emb)
    assert ins[0] is not None and ins[0].shape == (4, 6)


def test_fused_output_nll_matches_cross_entropy():
    torch.manual_seed(2)
    h = torch.randn(12, 6, dtype=torch.double, requires_grad=True)
    w = torch.randn(20, 6, dtype=torch.double, requires_grad=True)
    b = torch.randn(20, dtype=torch.double, requires_grad=True)
    t = torch.randint(0, 20, (12,))
    ours = linear_nll(h, w, b, t)
    ref = F.cross_entropy(h @ w.t() + b, t, reduction="sum")
    torch.testing.assert_close(ours, ref)
    for a, c in zip(torch.autograd.grad(ours, (h, w, b)), torch.autograd.grad(ref, (h, w, b))):
        torch.testing.assert_close(a, c)
    no_bias = linear_nll(h, w, None, t)
    torch.testing.assert_close(no_bias, F.cross_entropy(h @ w.t(), t, reduction="sum"))


# ------------------------------------------------------------------ dropout masks
def _captured_inputs(model, inputs):
    """Inputs each LSTM layer received and the recurrent masks, in one training forward pass."""
    seen = []
    for layer in model.layers:
        orig = layer.forward

        def spy(x, state, h_mask=None, in_mask=None, _orig=orig):
            seen.append((x.detach().clone(), None if h_mask is None else h_mask.clone()))
            return _orig(x, state, h_mask, in_mask)
        layer.forward = spy
    model.train()
    features, _ = model(inputs, model.init_hidden(inputs.shape[1]))
    return seen, features


def _constant_embedding_model(**cfg):
    model = LSTMLM(ModelConfig(vocab_size=30, hidden_size=64, **cfg))
    with torch.no_grad():
        model.embedding.weight.fill_(1.0)
    return model


def test_variational_masks_constant_over_time_and_different_across_sequences():
    torch.manual_seed(3)
    model = _constant_embedding_model(dropout="variational", dropout_input=0.5, dropout_hidden=0.4,
                                      variational_masks="shared")
    inputs = torch.randint(0, 30, (7, 4))
    ((x0, hmask0), (_, hmask1)), _ = _captured_inputs(model, inputs)
    # the input mask of layer 1 (embedding output) is the same at every time step ...
    assert torch.equal(x0, x0[:1].expand_as(x0))
    # ... and differs between the sequences of the batch
    assert not torch.equal(x0[0, 0], x0[0, 1])
    assert set(x0.unique().tolist()) <= {0.0, 2.0}
    assert hmask0.shape == (4, 64) and not torch.equal(hmask0[0], hmask0[1])
    assert not torch.equal(hmask0, hmask1)  # one recurrent mask per layer
    # a new window (new sequences) gets new masks
    ((x0_next, _), _), _ = _captured_inputs(model, inputs)
    assert not torch.equal(x0_next, x0)


def test_variational_word_dropout_drops_word_types_consistently():
    torch.manual_seed(4)
    model = _constant_embedding_model(dropout="variational", dropout_word=0.5)
    inputs = torch.tensor([[1, 1], [2, 2], [1, 1], [2, 2], [1, 1]])
    ((x0, _), _), _ = _captured_inputs(model, inputs)
    for b in range(2):
        assert torch.equal(x0[0, b], x0[2, b]) and torch.equal(x0[0, b], x0[4, b])  # same word, same mask
        assert set(x0[:, b].unique().tolist()) <= {0.0, 2.0}


def test_inan_recurrent_mask_is_shared_with_next_layer_input():
    torch.manual_seed(5)
    model = _constant_embedding_model(dropout="inan", dropout_rate=0.5)
    inputs = torch.randint(0, 30, (5, 3))
    seen = []
    orig = model.layers[0].forward

    def spy0(x, state, h_mask=None, in_mask=None):
        out, st = orig(x, state, h_mask, in_mask)
        seen.append((out.detach().clone(), h_mask.clone()))
        return out, st
    model.layers[0].forward = spy0
    captured, _ = _captured_inputs(model, inputs)
    out0, hmask0 = seen[0]
    x1 = captured[1][0]
    torch.testing.assert_close(x1, out0 * hmask0)
    assert torch.equal(captured[0][0], torch.ones_like(captured[0][0]))  # no dropout on the embedding layer


def test_zaremba_masks_change_over_time_and_eval_has_no_dropout():
    torch.manual_seed(6)
    model = _constant_embedding_model(dropout="zaremba", dropout_rate=0.5)
    inputs = torch.randint(0, 30, (6, 2))
    ((x0, hmask), _), _ = _captured_inputs(model, inputs)
    assert hmask is None and not torch.equal(x0[0], x0[1])
    model.eval()
    a, _ = model(inputs, model.init_hidden(2))
    b, _ = model(inputs, model.init_hidden(2))
    assert torch.equal(a, b)


# ------------------------------------------------------------------ config
