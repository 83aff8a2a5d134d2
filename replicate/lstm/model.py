"""The LSTM language model of Zaremba et al. / Press & Wolf / Inan et al., in one module.

embedding -> dropout -> L x LSTM -> dropout -> [projection P (PR)] -> output layer (softmax)

Output layer variants (``tying``):
- ``untied``: its own weight (V x H) and bias;
- ``tied`` (Press & Wolf WT): the weight IS ``embedding.weight`` (the same Parameter, not a copy;
  there is no second attribute that could come apart), with its own bias;
- ``tied_nobias`` (Inan et al. RE): the same shared weight and no output bias at all.

Dropout variants: ``none``; ``zaremba`` (fresh masks per time step, non-recurrent connections);
``variational`` (Gal, P&W "BD": one mask per sequence for word types, layer inputs, recurrent state
and output, four rates; layer-input and recurrent masks per gate, B x 4H, as Gal's released code, or
one shared B x H mask); ``inan`` (VD: one rate, per-sequence masks, the recurrent-state mask of a
layer is also the mask of its output going up; the embedding output unmasked unless
``embedding_dropout``).

Gate biases (``gate_bias``): ``tf`` = one bias per gate starting at 0 (TF BasicLSTMCell); ``torch`` =
an input and a recurrent bias per gate (nn.Linear / nn.LSTM). Every other parameter starts
uniform(-init_scale, init_scale); no forget-gate offset (as the reference code).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from replicate.lstm.config import ModelConfig
from replicate.lstm import kernels


class LSTMLayer(nn.Module):
    """One LSTM layer over a sequence (nn.LSTM weight layout, gates i, f, g, o)."""

    def __init__(self, input_size: int, hidden_size: int, gate_bias: str = "torch"):
        super().__init__()
        self.hidden_size = hidden_size
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        if gate_bias == "tf":
            self.bias = nn.Parameter(torch.empty(4 * hidden_size))
        else:
            self.bias_ih = nn.Parameter(torch.empty(4 * hidden_size))
            self.bias_hh = nn.Parameter(torch.empty(4 * hidden_size))

    def gate_bias(self):
        """The bias added to the gate pre-activations (the sum of both in the torch form)."""
        return self.bias if hasattr(self, "bias") else self.bias_ih + self.bias_hh

    def forward(self, x, state, h_mask=None, in_mask=None):
        """x [T, B, I], state (h, c) [B, H] -> (out [T, B, H], (h_T, c_T)).

        ``h_mask`` [B, H] multiplies h_{t-1} at every step. Per-gate masks (``in_mask`` [B, 4, I] on x and
        ``h_mask`` [B, 4, H]) give every gate its own dropped copy of x and h_{t-1}."""
        h0, c0 = state
        out, c_n = kernels.lstm_layer(x, h0, c0, self.weight_ih, self.weight_hh, self.gate_bias(), h_mask, in_mask)
        return out, (out[-1], c_n)


def _mask(like: torch.Tensor, shape, p: float):
    """Inverted-dropout mask (values 0 or 1/(1-p)), or None when p == 0."""
    if p <= 0:
        return None
    return like.new_empty(shape).bernoulli_(1 - p).div_(1 - p)


def _apply(x, mask):
    return x if mask is None else x * mask


class LSTMLM(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        V, H = cfg.vocab_size, cfg.hidden_size
        self.embedding = nn.Embedding(V, H)
        self.layers = nn.ModuleList(LSTMLayer(H, H, cfg.gate_bias) for _ in range(cfg.num_layers))
        self.projection = nn.Linear(H, H) if cfg.projection else None
        self.decoder_weight = nn.Parameter(torch.empty(V, H)) if cfg.tying == "untied" else None
        self.decoder_bias = nn.Parameter(torch.empty(V)) if cfg.tying != "tied_nobias" else None
        for p in self.parameters():  # a shared tensor appears once: initialised once
            nn.init.uniform_(p, -cfg.init_scale, cfg.init_scale)
        if cfg.gate_bias == "tf":
            for layer in self.layers:
                nn.init.zeros_(layer.bias)

    # ----------------------------------------------------------------- output layer
    @property
    def output_weight(self) -> nn.Parameter:
        """V x H output matrix: the embedding Parameter itself when tied."""
        return self.embedding.weight if self.decoder_weight is None else self.decoder_weight

    @property
    def output_bias(self):
        return self.decoder_bias

    def logits(self, features):
        return F.linear(features, self.output_weight, self.output_bias)

    def nll(self, features, targets):
        """Sum over tokens of the cross-entropy of the output layer."""
        flat, tgt = features.reshape(-1, features.shape[-1]), targets.reshape(-1)
        return kernels.output_nll(flat, self.output_weight, self.output_bias, tgt)

    def pr_penalty(self, form: str, lam: float, batch_size: int):
        """The PR term of one window's cost (config.PR_FORMS); 0 without projection."""
        if self.projection is None:
            return 0.0
        sq = self.projection.weight.pow(2).sum()
        if form == "authors_code":
            return lam * sq / 2 / batch_size
        return lam * (sq if form == "squared" else sq.sqrt())

    # ----------------------------------------------------------------- recurrence
    def init_hidden(self, batch_size: int):
        w = self.layers[0].weight_hh
        zeros = lambda: w.new_zeros(batch_size, self.cfg.hidden_size)  # noqa: E731
        return [(zeros(), zeros()) for _ in self.layers]

    @staticmethod
    def detach_hidden(hidden):
        return [(h.detach(), c.detach()) for h, c in hidden]

    def _masks(self, inputs, emb):
        """Per-sequence dropout masks for this window: (word, layer inputs, recurrent, output)."""
        cfg, (T, B), H, L = self.cfg, inputs.shape, self.cfg.hidden_size, self.cfg.num_layers
        if cfg.dropout == "variational":
            word = None
            if cfg.dropout_word > 0:  # one keep/drop decision per (sequence, word type)
                table = _mask(emb, (B, cfg.vocab_size), cfg.dropout_word)
                word = table.gather(1, inputs.t()).t().unsqueeze(-1)  # [T, B, 1]
            shape = (B, 4, H) if cfg.variational_masks == "per_gate" else (B, H)
            ins = [_mask(emb, shape, cfg.dropout_input) for _ in range(L)]
            rec = [_mask(emb, shape, cfg.dropout_hidden) for _ in range(L)]
            return word, ins, rec, _mask(emb, (B, H), cfg.dropout_output)
        # inan: the mask of layer l's state is also the mask of its output (input of l+1 / softmax)
        rec = [_mask(emb, (B, H), cfg.dropout_rate) for _ in range(L)]
        first = _mask(emb, (B, H), cfg.dropout_rate) if cfg.embedding_dropout else None
        return None, [first] + rec[:-1], rec, rec[-1]

    def forward(self, inputs, hidden):
        """inputs [T, B] token ids, hidden from init_hidden -> (features [T, B, H], new hidden)."""
        x = self.embedding(inputs)
        mode = self.cfg.dropout if self.training else "none"
        if mode in ("variational", "inan"):
            word, ins, rec, out_mask = self._masks(inputs, x)
        else:
            word, ins, rec, out_mask = None, [None] * len(self.layers), [None] * len(self.layers), None
        zaremba = self.cfg.dropout_rate if mode == "zaremba" else 0.0
        x = _apply(x, word)
        new_hidden = []
        for layer, state, in_mask, h_mask in zip(self.layers, hidden, ins, rec):
            gate_mask = in_mask if in_mask is not None and in_mask.dim() == 3 else None
            if zaremba:
                x = F.dropout(x, zaremba)
            elif gate_mask is None:
                x = _apply(x, in_mask)
            x, state = layer(x, state, h_mask, gate_mask)
            new_hidden.append(state)
        x = F.dropout(x, zaremba) if zaremba else _apply(x, out_mask)
        if self.projection is not None:
            x = self.projection(x)
        return x, new_hidden

    # ----------------------------------------------------------------- checks
    def num_parameters(self) -> int:
        """Trainable parameters, a shared (tied) tensor counted once."""
        return sum(p.numel() for p in self.parameters())

    def check_tying(self) -> None:
        """Raise if a tied output matrix is not the embedding's storage."""
        if self.cfg.tying != "untied":
            w = self.output_weight
            if w is not self.embedding.weight or w.data_ptr() != self.embedding.weight.data_ptr():
                raise AssertionError("tied output weight does not share the embedding's storage")
            if self.cfg.tying == "tied_nobias" and self.output_bias is not None:
                raise AssertionError("tied_nobias model has an output bias")
