"""What a release that stops after the schema discovery is charged (a privacy accounting fix).

In a joint run (issue 22) the discovery's ledger line, ε - ε_m, is its share of the run's one zCDP conversion:
valid beside the mechanism's line, not alone.  A release that stopped after the discovery read the data -- the
released schema kept one column, the workload could not be built on it, or the discovery itself failed -- was
charged that line only: 0.2 at ε = 1 and a 20% share, while the discovery alone, δ_t-approximately ρ_s-zCDP, is
(CKS(ρ_s, δ_c), δ_t + δ_c) = (0.56, δ)-DP.  The ledger understated the loss 2.8 times.  Now such a stop is charged
the discovery converted alone.  Closed forms and the ledger, fixed seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import DEFAULT_SCHEMA_SHARE, DiscoveryPlan, joint_split
from dpcore.errors import DPCoreError
from dpcore.privacy import zcdp_to_eps_cks
from dpcore.privacy.ledger import Ledger
from dpcore.release import release_table


@pytest.mark.parametrize("eps, delta, share", [(1.0, 1e-6, 0.2), (0.3, 1 / 900**2, 0.5), (3.0, 1e-9, 0.2)])
def test_a_joint_discovery_alone_converts_its_own_rho(eps, delta, share):
    split = joint_split(eps, delta, share)
    plan = DiscoveryPlan.from_split(split, 4)
    alone = plan.spend_alone()
    assert alone.epsilon == pytest.approx(zcdp_to_eps_cks(split.rho_schema, split.delta_conversion), rel=1e-12)
    assert alone.delta == pytest.approx(delta, rel=1e-12)  # δ_t + δ_c
    assert plan.spend().epsilon < alone.epsilon < eps  # more than its line in the run, less than the run
    own = DiscoveryPlan.make(share * eps, share * delta, 4)  # an ε-split discovery: its line is its own conversion
    assert own.spend_alone() == own.spend()


def _tickets(n: int = 1500, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "ticket": [f"T{i:07d}" for i in rng.permutation(n)],
            "city": rng.choice([f"c{i}" for i in range(25)], n),
            "member": rng.choice(["yes", "no"], n),
        }
    )


def test_a_release_stopped_after_the_discovery_is_charged_the_discovery_alone(tmp_path):
    """The released schema keeps one column, so the run stops before the mechanism: the ledger holds the discovery
    converted alone (its ρ_s at δ_c, plus δ_t), not the run's attribution share·ε -- and the message says what was
    charged.  The same when the workload then cannot be built (forced)."""
    df = _tickets()
    n, eps = len(df), 1.0
    ledger = Ledger(str(tmp_path))
    with pytest.raises(DPCoreError) as err:
        release_table(df, "projection", eps, workload={"k": 3, "marginals": "all"}, ledger=ledger, seed=3)
    [entry] = ledger.entries()
    split = joint_split(eps, 1 / n**2, DEFAULT_SCHEMA_SHARE)
    alone = zcdp_to_eps_cks(split.rho_schema, split.delta_conversion)
    assert entry["epsilon"] == pytest.approx(alone, rel=1e-12) and entry["delta"] == pytest.approx(1 / n**2)
    assert entry["epsilon"] > 2.5 * split.epsilon_schema  # what it was charged before: 0.2
    assert f"ε = {entry['epsilon']:.3g} was charged" in str(err.value)
    with pytest.raises(DPCoreError):
        release_table(df, "projection", eps, workload={"k": 3, "marginals": "all"}, ledger=ledger, seed=3, force=True)
    assert ledger.entries()[-1]["epsilon"] == pytest.approx(alone, rel=1e-12)


def test_a_discovery_that_fails_after_reading_the_data_is_charged_alone(tmp_path):
    """Every column is free text: the private roles exclude them all and the discovery stops after reading the
    data.  The ledger holds the planned discovery converted alone."""
    rng = np.random.default_rng(0)
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"])
    n = 3000
    df = pd.DataFrame({f"note{j}": [" ".join(rng.choice(words, 12)) + f" {i}" for i in range(n)] for j in range(3)})
    ledger = Ledger(str(tmp_path))
    with pytest.raises(DPCoreError):
        release_table(df, "projection", 1.0, ledger=ledger, seed=1, force=True)
    [entry] = ledger.entries()
    split = joint_split(1.0, 1 / n**2, DEFAULT_SCHEMA_SHARE)
    assert entry["status"] == "settled"
    assert entry["epsilon"] == pytest.approx(zcdp_to_eps_cks(split.rho_schema, split.delta_conversion), rel=1e-12)
