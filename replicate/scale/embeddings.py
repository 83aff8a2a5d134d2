"""Press & Wolf's embedding analysis, measured.

Their argument: in an untied LM the input-embedding row of word k changes only on steps where k is
an input, while every output-embedding row changes at every step (the softmax gradient reaches every
row); with tying, the shared matrix gets both, so it evolves like the untied OUTPUT embedding.

- ``UpdateTracker`` (a Trainer ``on_step`` hook): per row of every embedding matrix, how many steps
  the row changed and the summed L2 norm of its update ``lr * (grad + wd * w)`` (the trainer applies
  exactly this update after the hook). A row changed iff that row of the update has a nonzero entry.
- ``SnapshotRecorder`` (an ``on_epoch`` hook): float16 copies of the top-K rows (most frequent
  words) of every embedding matrix at every epoch (0 = initialisation), plus the latest full matrix.
- ``structure_spearman`` / ``knn_overlap``: how alike two embedding matrices are, independent of
  rotation and scale: Spearman correlation of their pairwise cosine similarities, and the overlap
  of the k nearest neighbours of each word.
- ``load_benchmark`` / ``benchmark_spearman``: word-similarity benchmarks (Simlex-999, MEN, ...).

Both hooks carry ``state_dict``/``load_state_dict``, so the Trainer stores them in its checkpoint and
a killed run resumes with its accumulators.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
import torch

from replicate.errors import ReplicateError

MATRICES = ("input", "output", "tied")


def embedding_matrices(model) -> dict[str, torch.Tensor]:
    """The model's embedding matrices by role: untied -> input, output; tied -> tied (one tensor)."""
    if model.output_weight is model.embedding.weight:
        return {"tied": model.embedding.weight}
    return {"input": model.embedding.weight, "output": model.output_weight}


def embedding_param_count(model) -> int:
    """Parameters in embedding matrices (a tied matrix counted once)."""
    return sum(p.numel() for p in embedding_matrices(model).values())


# ----------------------------------------------------------------------------- update statistics
class UpdateTracker:
    """``on_step`` hook: per-row update counts and norms of every embedding matrix.

    Called after backward + clipping and before the SGD update; the update of parameter ``w`` is
    ``-(lr * (1 - wd) * w.grad + wd * w)`` (the engine's step). ``every`` > 1 samples every n-th step."""

    def __init__(self, vocab_size: int, every: int = 1):
        self.vocab_size, self.every = int(vocab_size), int(every)
        self.steps = 0
        self.changed: dict[str, torch.Tensor] = {}
        self.norm_sum: dict[str, torch.Tensor] = {}
        self.input_steps = torch.zeros(self.vocab_size, dtype=torch.int64)

    def _acc(self, store, name, like_device, dtype):
        if name not in store:
            store[name] = torch.zeros(self.vocab_size, dtype=dtype, device=like_device)
        return store[name]

    @torch.no_grad()
    def __call__(self, info) -> None:
        if info.step % self.every:
            return
        self.steps += 1
        for name, w in embedding_matrices(info.model).items():
            # direction = update / (-lr); a row moved iff it has a nonzero entry (exact, no norm underflow)
            wd = info.weight_decay
            if w.grad is None:
                direction = torch.zeros_like(w)
            elif wd and info.lr:
                direction = (1 - wd) * w.grad + (wd / info.lr) * w
            else:
                direction = w.grad
            moved = (direction != 0).any(dim=1) if info.lr != 0 else torch.zeros_like(w[:, 0], dtype=torch.bool)
            self._acc(self.changed, name, w.device, torch.int64).add_(moved)
            self._acc(self.norm_sum, name, w.device, torch.float64).add_(
                torch.linalg.vector_norm(direction, dim=1).double(), alpha=abs(info.lr))
        present = torch.zeros(self.vocab_size, dtype=torch.bool)
        present[info.inputs.reshape(-1).cpu()] = True
        self.input_steps += present

    def state_dict(self) -> dict:
        return {"steps": self.steps, "every": self.every, "input_steps": self.input_steps.clone(),
                "changed": {k: v.cpu() for k, v in self.changed.items()},
                "norm_sum": {k: v.cpu() for k, v in self.norm_sum.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.steps, self.every = int(state["steps"]), int(state["every"])
        self.input_steps = state["input_steps"].clone()
        self.changed = {k: v.clone() for k, v in state["changed"].items()}
        self.norm_sum = {k: v.clone() for k, v in state["norm_sum"].items()}

    def per_word(self, counts: torch.Tensor, vocab: list[str] | None = None) -> pd.DataFrame:
        """One row per (matrix, word): train count, steps changed, update fraction, mean norms."""
        frames = []
        steps = max(self.steps, 1)
        for name in self.changed:
            changed = self.changed[name].cpu().numpy()
            norm = self.norm_sum[name].cpu().numpy()
            frames.append(pd.DataFrame({
                "matrix": name, "word_id": np.arange(self.vocab_size),
                "word": vocab if vocab is not None else None,
                "train_count": counts.cpu().numpy(), "steps": self.steps, "changed_steps": changed,
                "input_steps": self.input_steps.numpy(),
                "update_fraction": changed / steps, "input_fraction": self.input_steps.numpy() / steps,
                "update_norm_mean": norm / steps,
                "update_norm_when_changed": np.where(changed > 0, norm / np.maximum(changed, 1), np.nan),
            }))
        return pd.concat(frames, ignore_index=True)


def frequency_buckets(counts, per_decade: int = 2) -> np.ndarray:
    """Log-scale bucket of each count: b = floor(per_decade * log10(count)); -1 for count 0."""
    counts = np.asarray(counts, dtype=float)
    out = np.full(counts.shape, -1, dtype=int)
    pos = counts > 0
    # tiny epsilon so that exact powers of ten land in their own bucket despite rounding
    out[pos] = np.floor(per_decade * np.log10(counts[pos]) + 1e-9).astype(int)
    return out


def bucket_table(per_word: pd.DataFrame, per_decade: int = 2) -> pd.DataFrame:
    """Aggregate a ``per_word`` frame (one matrix or several) into log-count buckets."""
    df = per_word.copy()
    df["bucket"] = frequency_buckets(df["train_count"], per_decade)
    rows = []
    for (matrix, bucket), g in df.groupby(["matrix", "bucket"], sort=True):
        rows.append({
            "matrix": matrix, "bucket": int(bucket),
            "count_lo": 0.0 if bucket < 0 else 10 ** (bucket / per_decade),
            "count_hi": 1.0 if bucket < 0 else 10 ** ((bucket + 1) / per_decade),
            "n_words": len(g), "mean_count": g["train_count"].mean(),
            "update_fraction": g["update_fraction"].mean(),
            "update_fraction_min": g["update_fraction"].min(),
            "update_fraction_max": g["update_fraction"].max(),
            "input_fraction": g["input_fraction"].mean(),
            "update_norm_mean": g["update_norm_mean"].mean(),
            "update_norm_when_changed": g["update_norm_when_changed"].mean(),
            "steps": int(g["steps"].iloc[0]),
        })
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- snapshots
class SnapshotRecorder:
    """``on_epoch`` hook: float16 copies of rows ``top_ids`` of every embedding matrix per epoch
    (epoch 0 = before training), and the latest full matrices (for the word-similarity benchmarks)."""

    def __init__(self, top_ids: torch.Tensor, dtype: torch.dtype = torch.float16):
        self.top_ids = torch.as_tensor(top_ids, dtype=torch.int64)
        self.dtype = dtype
        self.snapshots: dict[str, torch.Tensor] = {}  # "epoch/matrix" -> [K, H]
        self.final: dict[str, torch.Tensor] = {}
        self.final_epoch = -1

    @torch.no_grad()
    def __call__(self, epoch: int, model, record=None) -> None:
        for name, w in embedding_matrices(model).items():
            w = w.detach()
            self.snapshots[f"{epoch}/{name}"] = w[self.top_ids.to(w.device)].to("cpu", self.dtype).clone()
            self.final[name] = w.to("cpu", self.dtype).clone()
        self.final_epoch = int(epoch)

    def epochs(self) -> list[int]:
        return sorted({int(k.split("/")[0]) for k in self.snapshots})

    def get(self, epoch: int, matrix: str) -> torch.Tensor:
        return self.snapshots[f"{epoch}/{matrix}"]

    def state_dict(self) -> dict:
        return {"top_ids": self.top_ids, "snapshots": dict(self.snapshots), "final": dict(self.final),
                "final_epoch": self.final_epoch}

    def load_state_dict(self, state: dict) -> None:
        self.top_ids = state["top_ids"]
        self.snapshots = dict(state["snapshots"])
        self.final = dict(state["final"])
        self.final_epoch = int(state["final_epoch"])


def top_ids(counts: torch.Tensor, k: int) -> torch.Tensor:
    """Ids of the ``k`` most frequent words (ties broken by id: deterministic)."""
    counts = torch.as_tensor(counts)
    order = np.lexsort((np.arange(len(counts)), -counts.cpu().numpy()))
    return torch.as_tensor(order[: min(k, len(counts))], dtype=torch.int64)


# ----------------------------------------------------------------------------- similarity
def cosine_matrix(emb: torch.Tensor) -> torch.Tensor:
    """Pairwise cosine similarities of the rows (float64)."""
    e = torch.as_tensor(emb).double()
    e = e / torch.linalg.vector_norm(e, dim=1, keepdim=True).clamp_min(1e-30)
    return e @ e.T


def _upper(m: torch.Tensor) -> np.ndarray:
    i, j = torch.triu_indices(m.shape[0], m.shape[1], offset=1)
    return m[i, j].numpy()


def spearman(x, y) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def structure_spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman correlation between the pairwise cosine similarities of the rows of ``a`` and ``b``
    (same words in the same order; widths may differ)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"different numbers of rows: {a.shape[0]} vs {b.shape[0]}")
    return spearman(_upper(cosine_matrix(a)), _upper(cosine_matrix(b)))


def knn_indices(emb: torch.Tensor, k: int) -> torch.Tensor:
    """The k nearest neighbours (cosine) of every row among the other rows; ties by index."""
    sim = cosine_matrix(emb)
    sim.fill_diagonal_(-math.inf)
    return torch.topk(sim, k, dim=1, sorted=True).indices


def knn_overlap(a: torch.Tensor, b: torch.Tensor, k: int = 10) -> float:
    """Mean over rows of |kNN_a(i) ∩ kNN_b(i)| / k. Chance level for unrelated matrices: k / (K - 1)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"different numbers of rows: {a.shape[0]} vs {b.shape[0]}")
    k = min(k, a.shape[0] - 1)
    ia, ib = knn_indices(a, k), knn_indices(b, k)
    hits = (ia.unsqueeze(2) == ib.unsqueeze(1)).any(dim=2).sum(dim=1)
    return float(hits.double().mean() / k)


def shares_init(init_a: torch.Tensor | None, init_b: torch.Tensor | None) -> bool:
    """Whether two matrices started from the same values (their epoch-0 snapshots are equal): then
    their later similarity is partly inherited from the shared draw, not learned."""
    return init_a is not None and init_b is not None and init_a.shape == init_b.shape and bool(
        torch.equal(init_a, init_b))


def matrix_label(variant: str, matrix: str) -> str:
    """``untied`` + ``input`` -> ``untied_input``; ``tied`` + ``tied`` -> ``tied``."""
    return variant if matrix == "tied" else f"{variant}_{matrix}"


def similarity_rows(runs: dict[tuple[str, int], SnapshotRecorder], epochs: Iterable[int] | None = None,
                    knn_k: int = 10) -> pd.DataFrame:
    """Similarity of every pair of (matrix, seed) among ``runs`` ({(variant, seed): recorder}) at
    every common epoch. Rows a < b in (label, seed) order; same-label pairs only across seeds."""
    mats = {}
    for (variant, seed), rec in runs.items():
        for key in rec.snapshots:
            epoch, matrix = key.split("/")
            mats[(int(epoch), matrix_label(variant, matrix), int(seed))] = rec.snapshots[key]
    all_epochs = sorted({e for e, _, _ in mats}) if epochs is None else list(epochs)
    rows = []
    for epoch in all_epochs:
        items = sorted((lab, seed) for e, lab, seed in mats if e == epoch)
        for i, (la, sa) in enumerate(items):
            for lb, sb in items[i + 1:]:
                if la == lb and sa == sb:
                    continue
                a, b = mats[(epoch, la, sa)], mats[(epoch, lb, sb)]
                k = min(knn_k, a.shape[0] - 1)
                shared = shares_init(mats.get((0, la, sa)), mats.get((0, lb, sb)))
                rows.append({"comparison": f"{la}_vs_{lb}", "a": la, "b": lb, "seed_a": sa, "seed_b": sb,
                             "same_seed": sa == sb, "shared_init": shared,
                             "epoch": epoch, "top_k": a.shape[0],
                             "spearman": structure_spearman(a, b), "knn_overlap": knn_overlap(a, b, k),
                             "knn_k": k, "knn_chance": k / (a.shape[0] - 1)})
    return pd.DataFrame(rows)


def canonical_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Put ``tied*`` labels first in comparison names (tied_vs_untied_input, not the reverse)."""
    frame = frame.copy()
    swap = (~frame["a"].str.startswith("tied")) & frame["b"].str.startswith("tied")
    for x, y in (("a", "b"), ("seed_a", "seed_b")):
        frame.loc[swap, [x, y]] = frame.loc[swap, [y, x]].values
    frame["comparison"] = frame["a"] + "_vs_" + frame["b"]
    return frame


# ----------------------------------------------------------------------------- word similarity
def load_benchmark(path: str | Path, score_column: int = 2, lowercase: bool = True) -> pd.DataFrame:
    """A word-similarity file: one pair per line, fields separated by tabs (or whitespace), words in
    the first two fields, the human score in field ``score_column`` (0-based). A first line whose
    score field is not a number is a header. Returns columns word1, word2, score."""
    path = Path(path)
    if not path.is_file():
        raise ReplicateError(f"word-similarity benchmark file not found: {path}",
                             "fix the path under scale.analysis.benchmarks in the config, or remove the entry")
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            fields = line.rstrip("\n").split("\t") if "\t" in line else line.split()
            if len(fields) <= max(1, score_column):
                raise ReplicateError(f"{path}:{lineno}: expected at least {score_column + 1} fields, got "
                                     f"{len(fields)}", "check the file format and scale.analysis.benchmarks.*.score_column")
            try:
                score = float(fields[score_column])
            except ValueError:
                if not rows and lineno == 1:
                    continue  # header
                raise ReplicateError(f"{path}:{lineno}: score {fields[score_column]!r} is not a number",
                                     "check score_column for this benchmark") from None
            w1, w2 = fields[0].strip(), fields[1].strip()
            rows.append((w1.lower() if lowercase else w1, w2.lower() if lowercase else w2, score))
    if not rows:
        raise ReplicateError(f"no word pairs in {path}", "check the file")
    return pd.DataFrame(rows, columns=["word1", "word2", "score"])


def benchmark_spearman(emb: torch.Tensor, vocab: list[str], pairs: pd.DataFrame) -> dict:
    """Spearman correlation between cosine similarity and the human score over the pairs whose two
    words are in the vocabulary."""
    index = {w: i for i, w in enumerate(vocab)}
    ok = pairs["word1"].isin(index) & pairs["word2"].isin(index)
    cov = pairs[ok]
    out = {"n_pairs": len(pairs), "n_covered": int(ok.sum()), "spearman": float("nan")}
    if len(cov) >= 3:
        e = torch.as_tensor(emb).double()
        e = e / torch.linalg.vector_norm(e, dim=1, keepdim=True).clamp_min(1e-30)
        i = torch.tensor([index[w] for w in cov["word1"]])
        j = torch.tensor([index[w] for w in cov["word2"]])
        cos = (e[i] * e[j]).sum(1).numpy()
        out["spearman"] = spearman(cos, cov["score"].to_numpy())
    return out


def fetch_benchmark(url: str, sha256: str, dest: str | Path, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` (atomic) and verify its sha256 (required)."""
    import hashlib
    import urllib.request

    from replicate import io as rio

    dest = Path(dest)
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == sha256:
        return dest
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (user-given URL)
            data = resp.read()
    except OSError as exc:
        raise ReplicateError(f"could not download word-similarity benchmark {url}: {exc}",
                             "download it yourself and set its `path` in scale.analysis.benchmarks") from exc
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise ReplicateError(f"checksum mismatch for {url}: sha256 {got}, expected {sha256}",
                             "check the URL / sha256 in scale.analysis.benchmarks")
    rio.write_bytes(dest, data)
    return dest
