"""Figure 1's shape as numbers: a gradual fall with beta vs a step; lower at larger tau vs flat."""

from __future__ import annotations

import math

import pytest

from replicate.inan.shape import beta_shape, tau_effect


def test_linear_fall_is_gradual_and_a_step_is_not():
    linear = [(b, 0.98 - 0.9 * b) for b in (0, 0.25, 0.5, 0.75, 1)]
    assert beta_shape(linear)["gradual"] and beta_shape(linear)["first_step_share"] == pytest.approx(0.25)
    step = [(0, 0.986), (0.25, 0.883), (0.5, 0.892), (0.75, 0.890), (1, 0.892)]  # an earlier measured curve
    s = beta_shape(step)
    assert not s["gradual"] and s["first_step_share"] > 1 and s["end"] == 0.892
    flat = [(0, 0.98), (0.5, 0.979), (1, 0.978)]
    assert not beta_shape(flat)["gradual"] and math.isnan(beta_shape(flat)["first_step_share"])
    with pytest.raises(ValueError):
        beta_shape([(0, 1), (1, 0)])


def test_tau_effect_needs_a_drop_beyond_seed_noise():
    assert tau_effect([(2, 0.30), (20, 0.05)])["lower_at_larger_tau"]
    assert not tau_effect([(2, 0.891), (10, 0.892), (20, 0.892)])["lower_at_larger_tau"]
    assert not tau_effect([(20, 0.5), (2, 0.3)])["lower_at_larger_tau"]  # higher at larger tau
