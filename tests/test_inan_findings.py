"""The Inan section's opening paragraph reads its numbers from the tables it sits above, and says "confidence
penalty" and "flat target only" only where those tables show it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from replicate.inan.section import FLAT, findings

BUNDLE = Path(__file__).resolve().parents[1] / "paper" / "measured" / "tables"
NAMES = ("inan_table1", "inan_screen", "inan_subspace_readings")


def bundle() -> dict[str, pd.DataFrame]:
    return {k: pd.read_csv(BUNDLE / f"{k}.csv") for k in NAMES}


def screen(entropies, gains) -> pd.DataFrame:
    return pd.DataFrame({"model": "+AL", "train_tokens": 92959.0, "alpha": 5.0, "epochs": 40,
                         "soft_entropy_ratio": entropies, "best_gain_over_vd": gains, "gain_over_vd": gains})


def test_the_bundle_paragraph_quotes_the_bundle_tables():
    raw = bundle()
    text = findings(raw)
    t, r = raw["inan_table1"], raw["inan_subspace_readings"]
    for m, x in t.dropna(subset=["soft_entropy_ratio"])[["model", "soft_entropy_ratio"]].itertuples(index=False):
        assert f"{m} {x:.4f}" in text
    assert f"{r.loc[r['output_init'] == 'zero', 'beta1'].iloc[0]:.3f} at β = 1" in text
    assert text.startswith("**What reproduces, and why.**") and "within 5%" in text


def test_confidence_penalty_only_when_every_soft_target_is_flat():
    t = pd.DataFrame({"model": ["VD-LSTM", "+AL"], "valid_rel_diff": [0.01, 0.2],
                      "soft_entropy_ratio": [None, FLAT + 0.005]})
    assert "confidence penalty" in findings({"inan_table1": t}) and "VD-LSTM within" in findings({"inan_table1": t})
    t.loc[1, "soft_entropy_ratio"] = FLAT - 0.2
    assert "confidence penalty" not in findings({"inan_table1": t})


def test_flat_target_only_when_every_informative_target_loses():
    said = findings({"inan_screen": screen([0.6, 0.999], [-4.0, 2.0])})
    assert "gains -4.00" in said and "flat y~ +2.00: the gain comes with the flat target only" in said
    assert "flat target only" not in findings({"inan_screen": screen([0.6, 0.999], [3.0, 2.0])})
    assert findings({}) == ""
