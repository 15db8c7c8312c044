"""The peers benchmark runs each add/remove peer at the budget that gives our replace-one guarantee."""

from __future__ import annotations

import math

import pytest

from dpcore.bench.peers import peer_budget
from dpcore.privacy import eps_to_zcdp

# (share of the budget spent on measurements, share on selection) in each peer's own accounting, read from
# smartnoise-synth 1.0.8: a replacement doubles a measurement's sensitivity (ℓ1 2 / ℓ2 √2: ε 2x, ρ 2x) and an
# ℓ1-scored exponential mechanism's ε (ρ 4x); MWEM's selection scores a marginal's MEAN cell error, whose
# replace-one sensitivity 2/cells stays within the 1 it assumes, so its ε does not grow.
ZCDP_SHARES = {"aim": (0.9, 0.1), "mst": (2 / 3, 1 / 3)}


@pytest.mark.parametrize("synth", sorted(ZCDP_SHARES))
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_zcdp_peers_spend_our_replace_one_rho(synth, eps):
    delta = 1 / 48_842**2
    b = peer_budget(synth, eps, delta)
    meas, sel = ZCDP_SHARES[synth]
    replace_one_rho = b["rho"] * (meas * 2 + sel * 4)
    assert math.isclose(replace_one_rho, eps_to_zcdp(eps, delta), rel_tol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_mwem_whole_marginal_measurements_are_charged_twice_under_replace_one(eps):
    b = peer_budget("mwem", eps, 1e-9)
    nominal = b["epsilon"]
    assert math.isclose(nominal * (0.5 * 2 + 0.5 * 1), eps, rel_tol=1e-12)
    assert nominal < eps
