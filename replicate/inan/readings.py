"""Section 6.2 grid without torch (the workflow reads it when it builds the DAG): Figure 1's points and
the readings of the paper's under-specified setup.

The paper gives the loss and the metric but not the optimiser, the step size, the epochs, the init, or
which axis of L is held at unit norm (it writes L as d x |V|, whose rows are NOT the word vectors). A
reading is a named set of overrides of the ``inan.subspace`` settings; each one runs the same points, and
the readings table compares their shapes with the paper's (rapid decrease with beta, lower at larger tau,
~0.06 at beta = 1). Keys a reading may set: ``embedding_norm`` (word_vectors = every word vector of L at
unit norm | dimensions = every row of the d x |V| matrix L at unit norm | none), ``optimizer`` (adam |
sgd), ``output_init`` (uniform = every parameter uniform(-init_scale, init_scale) | zero = W starts at 0),
``output_bias`` (false = the output bias held at 0), and the engine keys (lr, epochs, max_epoch, decay, schedule, clip, init_scale).
"""

from __future__ import annotations

from typing import Any

from replicate.errors import ReplicateError

READING_KEYS = ("embedding_norm", "optimizer", "output_init", "output_bias", "lr", "epochs", "max_epoch", "decay",
                "schedule", "clip", "init_scale")


def fmt(x: float) -> str:
    """Canonical text of a tau / beta value in file names (10.0 -> '10', 0.25 -> '0.25')."""
    return f"{float(x):g}"


def points(subspace_cfg: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(panel, tau, beta) of every point of Figure 1 (a: tau fixed, beta sweep; b: beta fixed, tau sweep)."""
    a, b = subspace_cfg["panel_a"], subspace_cfg["panel_b"]
    pts = [("a", float(a["tau"]), float(beta)) for beta in a["betas"]]
    pts += [("b", float(tau), float(b["beta"])) for tau in b["taus"]]
    return pts


def reading_names(subspace_cfg: dict[str, Any]) -> list[str]:
    """Readings that run: the one Figure 1 shows first, then the others compared with it."""
    figure = subspace_cfg["figure_reading"]
    others = [r for r in subspace_cfg["compare_readings"] if r != figure]
    for name in [figure, *others]:
        if name not in subspace_cfg["readings"]:
            raise ReplicateError(f"section 6.2 reading {name!r} is not defined",
                                 f"define it under inan.subspace.readings (defined: {sorted(subspace_cfg['readings'])})")
    return [figure, *others]


def reading_settings(subspace_cfg: dict[str, Any], reading: str) -> dict[str, Any]:
    """The 6.2 settings of one reading: the section's settings with the reading's overrides."""
    overrides = subspace_cfg["readings"][reading]
    unknown = set(overrides) - set(READING_KEYS)
    if unknown:
        raise ReplicateError(f"reading {reading!r} sets unknown key(s) {sorted(unknown)}", f"use keys of {READING_KEYS}")
    base = {k: v for k, v in subspace_cfg.items() if k not in ("readings", "figure_reading", "compare_readings",
                                                                 "reading_seeds")}
    return {**base, **overrides}


def reading_seeds(subspace_cfg: dict[str, Any], reading: str) -> list[int]:
    """Figure 1's reading runs every seed; the compared readings run ``reading_seeds``."""
    return list(subspace_cfg["seeds"] if reading == subspace_cfg["figure_reading"] else subspace_cfg["reading_seeds"])
