"""A compact Llama-style decoder (nanoGPT-sized and -styled), shared by the initial-loss sweep and the
scale study's small transformer.

Architecture: token embedding -> n_layers x [x + Attn(RMSNorm(x)), x + SwiGLU(RMSNorm(x))] ->
final RMSNorm -> optional mixer (orthogonal d x d projection, or a parameter-free swap of the two
halves of the hidden vector) -> optional d^-1/2 rescale (T5 / Mesh-TensorFlow) -> output layer,
tied to the embedding (same Parameter) or untied. No biases; rotary position embeddings.

Initialisation is by parameter NAME: every parameter gets its own ``torch.Generator`` seeded from
(seed, full parameter name). That is what lets ``replicate.initial_loss.sweep`` build the model one
block at a time and still get exactly the weights of the whole model built with the same seed.

- every matrix (embedding, q/k/v/o, gate/up/down, untied output): N(0, std^2), or the normal
  truncated at +-3 std (OLMo-2 style), drawn by rejection so it is exact;
- ``zero_branches``: the residual-branch output projections (attention ``wo``, MLP ``w_down``) are
  zero, so every block is an exact identity on the residual stream (the theory's assumption);
- the orthogonal mixer: ``torch.nn.init.orthogonal_`` (gain 1); RMSNorm gains: ones.

``std`` may be a number or a name: ``inv_sqrt_d`` = 1/sqrt(d), ``log_n_over_d`` = log(n)/d.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from replicate.llama_dims import mlp_hidden

STD_NAMES = ("inv_sqrt_d", "log_n_over_d")
INITS = ("normal", "trunc_normal")
MIXERS = ("none", "orthogonal", "shuffle")
BRANCH_OUT = ("attn.wo.weight", "mlp.w_down.weight")


def resolve_std(std: float | str, d: int, n: int) -> float:
    """The numeric init std for a width ``d`` and vocabulary ``n``."""
    if isinstance(std, str):
        if std == "inv_sqrt_d":
            return 1.0 / math.sqrt(d)
        if std == "log_n_over_d":
            return math.log(n) / d
        raise ValueError(f"unknown std name {std!r}; use a number or one of {STD_NAMES}")
    return float(std)


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 32000
    d_model: int = 256
    n_layers: int = 12
    head_dim: int = 64
    std: float | str = 0.02
    init: str = "normal"            # normal | trunc_normal (+-3 std)
    zero_branches: bool = False     # attention out / MLP down projections at zero
    tied: bool = True
    rescale: bool = False           # multiply the final hidden state by d^-1/2
    mixer: str = "none"             # none | orthogonal | shuffle
    rope_base: float = 10000.0
    norm_eps: float = 1e-6

    def __post_init__(self):
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.mixer not in MIXERS:
            raise ValueError(f"mixer must be one of {MIXERS}, got {self.mixer!r}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"width {self.d_model} must split into {self.n_heads} heads of even width "
                             f"(head_dim {self.head_dim})")
        if self.mixer == "shuffle" and self.d_model % 2:
            raise ValueError("the half-swap shuffle needs an even width")
        resolve_std(self.std, self.d_model, self.vocab_size)

    @property
    def n_heads(self) -> int:
        return max(1, self.d_model // self.head_dim)

    @property
    def sigma(self) -> float:
        return resolve_std(self.std, self.d_model, self.vocab_size)

    def with_(self, **changes) -> "ModelConfig":
        return replace(self, **changes)


# ----------------------------------------------------------------------------- initialisation

def param_generator(seed: int, name: str) -> torch.Generator:
    """A CPU generator seeded from (seed, parameter name): independent streams per parameter."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))


def draw_(t: torch.Tensor, std: float, init: str, gen: torch.Generator) -> torch.Tensor:
    """Fill CPU tensor ``t`` in place with N(0, std^2), optionally truncated at +-3 std (rejection)."""
    t.normal_(0.0, 1.0, generator=gen)
    if init == "trunc_normal":  # redraw the ~0.27% outside +-3 until none is left (one full pass)
        flat = t.view(-1)
        bad = (flat.abs() > 3.0).nonzero().squeeze(1)
        while bad.numel():
            redraw = torch.empty(bad.numel()).normal_(0.0, 1.0, generator=gen)
            flat[bad] = redraw
            bad = bad[redraw.abs() > 3.0]
    return t.mul_(std)


@torch.no_grad()
def init_tensor_(name: str, t: torch.Tensor, cfg: ModelConfig, seed: int) -> torch.Tensor:
    """Initialise the CPU tensor of the parameter with full name ``name`` (see the module doc)."""
    if t.device.type != "cpu":
        raise ValueError("initialise on CPU, then move to the device (keeps results device-independent)")
    if name.endswith("norm.weight"):
        return t.fill_(1.0)
    if cfg.zero_branches and name.endswith(BRANCH_OUT):
        return t.zero_()
    if name.endswith("mixer.weight"):
        return nn.init.orthogonal_(t, generator=param_generator(seed, name))
    return draw_(t, cfg.sigma, cfg.init, param_generator(seed, name))


def init_parameters(module: nn.Module, cfg: ModelConfig, seed: int, prefix: str = "") -> None:
    """Initialise every parameter of ``module`` (on CPU) from its full name ``prefix + name``.
    A parameter shared by two modules is listed (and initialised) once."""
    for name, p in module.named_parameters():
        init_tensor_(prefix + name, p.data, cfg, seed)


# ----------------------------------------------------------------------------- layers

class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq_len: int, head_dim: int, base: float, device=None):
    """cos/sin tables (seq_len, head_dim) for rotary embeddings (rotate-half convention)."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    ang = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=device), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, self.n_heads = cfg.d_model, cfg.n_heads
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x, rope):
        B, T, d = x.shape
        q, k, v = (w(x).view(B, T, self.n_heads, -1).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, d))


class SwiGLU(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, h = cfg.d_model, mlp_hidden(cfg.d_model)
        self.w_gate = nn.Linear(d, h, bias=False)
        self.w_up = nn.Linear(d, h, bias=False)
        self.w_down = nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    """Pre-norm residual block: x + Attn(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = SwiGLU(cfg)

    def forward(self, x, rope):
        x = x + self.attn(self.attn_norm(x), rope)
        return x + self.mlp(self.mlp_norm(x))


class HalfSwap(nn.Module):
    """Parameter-free dimension shuffle: swap the two halves of the last axis (its own inverse)."""

    def forward(self, x):
        half = x.shape[-1] // 2
        return torch.cat([x[..., half:], x[..., :half]], dim=-1)


class Head(nn.Module):
    """Final RMSNorm -> mixer -> optional d^-1/2 rescale -> output layer (weight set by the caller
    when tied: ``head.out.weight = embedding.weight``)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.norm = RMSNorm(d, cfg.norm_eps)
        if cfg.mixer == "orthogonal":
            self.mixer = nn.Linear(d, d, bias=False)
        elif cfg.mixer == "shuffle":
            self.mixer = HalfSwap()
        else:
            self.mixer = nn.Identity()
        self.scale = d ** -0.5 if cfg.rescale else 1.0
        self.out = nn.Linear(d, cfg.vocab_size, bias=False)

    def hidden(self, x):
        h = self.mixer(self.norm(x))
        return h * self.scale if self.scale != 1.0 else h

    def token_losses(self, x, inputs, targets, chunk: int = 1024):
        """Per-token next-token cross entropy and self-logit (logit of the input token itself),
        computed over chunks of tokens so the (tokens x n) logits never exist whole."""
        h = self.hidden(x).reshape(-1, x.shape[-1])
        inputs, targets = inputs.reshape(-1), targets.reshape(-1)
        ce, self_logit = [], []
        for s in range(0, h.shape[0], chunk):
            logits = self.out(h[s:s + chunk])
            ce.append(F.cross_entropy(logits, targets[s:s + chunk], reduction="none"))
            self_logit.append(logits.gather(1, inputs[s:s + chunk, None])[:, 0])
        return torch.cat(ce), torch.cat(self_logit)


def skeleton(factory) -> nn.Module:
    """Build a module with uninitialised CPU storage (no default init: ``init_parameters`` follows)."""
    with torch.device("meta"):
        module = factory()
    return module.to_empty(device="cpu")


class TransformerLM(nn.Module):
    """The whole model (use for small widths and for tests; the sweep streams it block by block)."""

    def __init__(self, cfg: ModelConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.embed = skeleton(lambda: nn.Embedding(cfg.vocab_size, cfg.d_model))
        self.blocks = nn.ModuleList(skeleton(lambda: Block(cfg)) for _ in range(cfg.n_layers))
        self.head = skeleton(lambda: Head(cfg))
        if cfg.tied:  # tie after the storage exists, then initialise
            del self.head.out.weight            # drop the unused matrix before initialising
            self.head.out.weight = self.embed.weight
        init_parameters(self, cfg, seed)        # the shared matrix is initialised once, as embed.weight

    def forward(self, inputs, targets, chunk: int = 1024):
        """Mean next-token cross entropy (and per-token values) for token ids (B, T)."""
        rope = rope_tables(inputs.shape[1], self.cfg.d_model // self.cfg.n_heads, self.cfg.rope_base,
                           inputs.device)
        x = self.embed(inputs)
        for block in self.blocks:
            x = block(x, rope)
        ce, self_logit = self.head.token_losses(x, inputs, targets, chunk)
        return ce.mean(), ce, self_logit
