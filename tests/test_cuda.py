"""The engine on a GPU against the CPU reference: run where CUDA is visible, skipped everywhere else
(CI has no GPU). The GPU check of docs/cluster.md ("Checking a GPU machine") runs this file.

- Every fast path on CUDA in float64 equals the CPU reference in float64 (relative error <= 1e-10), the same
  bar as tests/test_lstm_kernels.py: the layer with each mask kind, the output layer, the augmented loss,
  and a whole no-dropout model's loss and gradients.
- A short training run on CUDA (float32, no dropout) lands on the CPU run's perplexities within 1e-3.
"""

from __future__ import annotations

import pytest
import torch

from replicate.lstm import kernels, reference
from replicate.lstm.config import ModelConfig
from replicate.lstm.model import LSTMLM

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
RTOL = 1e-10
CUDA = "cuda"


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().cpu(), b.detach().cpu()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def _layer_inputs(mask, T=7, B=3, I=5, H=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, dtype=torch.double, generator=g)  # noqa: E731
    tensors = [rnd(T, B, I), rnd(B, H), rnd(B, H), rnd(4 * H, I) * 0.5, rnd(4 * H, H) * 0.5, rnd(4 * H) * 0.5]
    keep = lambda *s: (torch.rand(*s, generator=g, dtype=torch.double) < 0.7).double() / 0.7  # noqa: E731
    masks = {None: (None, None), "recurrent": (keep(B, H), None), "per_gate": (keep(B, 4, H), keep(B, 4, I))}[mask]
    return tensors, masks, rnd(T, B, H)


def _grads(fn, tensors, masks, weights, device):
    leaves = [t.to(device).requires_grad_() for t in tensors]
    out, c_n = fn(*leaves, *[m.to(device) if m is not None else None for m in masks])
    loss = (out * weights.to(device)).sum() + (c_n * c_n).sum()
    return [out, c_n, *torch.autograd.grad(loss, leaves)]


@pytest.mark.parametrize("mask", [None, "recurrent", "per_gate"])
def test_lstm_layer_on_cuda_equals_cpu_reference_in_float64(mask):
    tensors, masks, weights = _layer_inputs(mask)
    gpu = _grads(kernels.lstm_layer, tensors, masks, weights, CUDA)
    cpu = _grads(reference.lstm_layer, tensors, masks, weights, "cpu")
    for name, a, b in zip(["out", "c_T", "d x", "d h0", "d c0", "d w_ih", "d w_hh", "d bias"], gpu, cpu):
        assert _rel(a, b) <= RTOL, f"mask={mask}: {name}"


def test_output_layer_and_augmented_loss_on_cuda_equal_cpu_reference_in_float64():
    from replicate.inan import losses

    g = torch.Generator().manual_seed(1)
    h, w = torch.randn(40, 6, dtype=torch.double, generator=g), torch.randn(50, 6, dtype=torch.double, generator=g)
    b, t = torch.randn(50, dtype=torch.double, generator=g), torch.randint(0, 50, (40,), generator=g)

    def nll(fn, device):
        leaves = [x.to(device).requires_grad_() for x in (h, w, b)]
        value = fn(*leaves, t.to(device))
        return [value, *torch.autograd.grad(value, leaves)]

    for a, c in zip(nll(kernels.linear_nll, CUDA), nll(reference.output_nll, "cpu")):
        assert _rel(a, c) <= RTOL
    z = torch.randn(40, 50, dtype=torch.double, generator=g)
    gpu = losses.augmented_loss(z.to(CUDA), t.to(CUDA), w.to(CUDA), 2.0)
    with kernels.use("reference"):
        cpu = losses.augmented_loss(z, t, w, 2.0)
    assert _rel(gpu, cpu) <= RTOL


@pytest.mark.parametrize("cfg", [dict(gate_bias="tf"), dict(gate_bias="torch", tying="tied", projection=True)],
                         ids=["untied-tf", "tied-torch-pr"])
def test_model_step_on_cuda_equals_cpu_reference_in_float64(cfg):
    torch.manual_seed(5)
    model = LSTMLM(ModelConfig(vocab_size=37, hidden_size=6, init_scale=0.3, dropout="none", **cfg)).double()
    inputs, targets = torch.randint(0, 37, (7, 4)), torch.randint(0, 37, (7, 4))

    def step(device):
        model.to(device).zero_grad()
        features, hidden = model(inputs.to(device), model.init_hidden(4))
        loss = model.nll(features, targets.to(device))
        loss.backward()
        return [loss, hidden[-1][1]] + [p.grad.clone() for p in model.parameters()]

    gpu = step(CUDA)
    with kernels.use("reference"):
        cpu = step("cpu")
    for (name, _), a, b in zip([("loss", 0), ("c_T", 0), *model.named_parameters()], gpu, cpu):
        assert _rel(a, b) <= RTOL, name


def test_short_training_run_on_cuda_matches_the_cpu_run(tmp_path):
    from types import SimpleNamespace

    from replicate.lstm import runner

    g = torch.Generator().manual_seed(0)
    stream = (torch.arange(20000) % 40 + (torch.rand(20000, generator=g) < 0.3) * 7) % 40
    corpus = SimpleNamespace(vocab=[f"w{i}" for i in range(40)], train=stream, valid=stream[:1500].clone(),
                             test=stream[1500:3000].clone())
    spec = {"name": "tiny/seed1", "settings": {"size": "small", "hidden_size": 32, "batch_size": 8, "epochs": 2}}
    runs = {dev: runner.train_run(spec, corpus, tmp_path / dev, threads=1, device=dev, log=lambda *a: None)
            for dev in ("cpu", CUDA)}
    for key in ("train_ppl", "valid_ppl", "test_ppl"):
        assert abs(runs[CUDA][key] / runs["cpu"][key] - 1) <= 1e-3, key
    assert runs[CUDA]["provenance"]["device"]["device"].startswith("cuda") and runs[CUDA]["provenance"]["device"]["gpu"]
