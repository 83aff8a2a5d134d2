"""Figure 1's shape as numbers: a rapid decrease with beta vs an even fall, a step up or none; lower at
larger tau vs flat."""

from __future__ import annotations

import math

import pytest

from replicate.inan.shape import beta_shape, tau_effect


def test_rapid_decrease_is_front_loaded_and_monotone():
    linear = [(b, 0.98 - 0.9 * b) for b in (0, 0.25, 0.5, 0.75, 1)]
    s = beta_shape(linear)
    assert not s["rapid"] and s["first_step_share"] == pytest.approx(0.25)  # even: not rapid
    measured = [(0, 0.985), (0.25, 0.628), (0.5, 0.457), (0.75, 0.368), (1, 0.356)]  # an earlier curve
    s = beta_shape(measured)
    assert s["rapid"] and s["first_step_share"] == pytest.approx(0.357 / 0.629, abs=1e-3)
    assert s["end"] == 0.356
    # a step down then back up by more than the tolerance is not a monotone decrease
    step = [(0, 0.986), (0.25, 0.60), (0.5, 0.70), (0.75, 0.65), (1, 0.62)]
    assert not beta_shape(step)["rapid"]
    flat = [(0, 0.98), (0.5, 0.979), (1, 0.978)]
    assert not beta_shape(flat)["rapid"] and math.isnan(beta_shape(flat)["first_step_share"])
    # the boundary: exactly 1.5 x the linear share (37.5 % with 4 intervals) counts as rapid
    edge = [(0, 1.0), (0.25, 0.625), (0.5, 0.4), (0.75, 0.2), (1, 0.0)]
    assert beta_shape(edge)["rapid"]
    with pytest.raises(ValueError):
        beta_shape([(0, 1), (1, 0)])


def test_tau_effect_needs_a_drop_beyond_seed_noise():
    assert tau_effect([(2, 0.30), (20, 0.05)])["lower_at_larger_tau"]
    assert not tau_effect([(2, 0.891), (10, 0.892), (20, 0.892)])["lower_at_larger_tau"]
    assert not tau_effect([(20, 0.5), (2, 0.3)])["lower_at_larger_tau"]  # higher at larger tau
