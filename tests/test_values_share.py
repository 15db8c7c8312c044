"""The schema's share after the roles are released (:func:`dpcore.tabular.values_share`,
:meth:`dpcore.discovery.DiscoveryPlan.with_values`).

With nothing declared, the share the schema takes is fitted before any role is known, for the worst case: every
undecided column a category.  On 1,000 rows of numbers at ε = 1 that is 50% of ε -- 74% of the run's ρ -- when the
value sets and bounds of the roles actually released need the 20% share's.  Once the roles are out, the value sets
and bounds take only what those roles need, and the mechanism the rest; the run's ρ, δ_t and δ_c are fixed before
the data is read, so the run is a zCDP privacy filter and its (ε, δ) is unchanged.  Fixed seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import JOINT_MARGIN, DiscoveryPlan, joint_split
from dpcore.errors import BudgetError
from dpcore.ingest import Role
from dpcore.privacy import eps_to_zcdp, zcdp_to_eps_cks
from dpcore.privacy.ledger import Ledger
from dpcore.release import release_table
from dpcore.tabular import SCHEMA_SHARES, schema_plan, values_share


@pytest.mark.parametrize("eps, delta, share, smaller", [(1.0, 1e-6, 0.5, 0.2), (0.3, 1 / 800**2, 0.5, 0.2),
                                                         (3.0, 1e-9, 0.4, 0.2)])  # fmt: skip
def test_values_at_a_smaller_share_hand_their_rho_to_the_mechanism_and_the_run_stays_at_its_budget(
    eps, delta, share, smaller
):
    """Against the closed forms: ρ_roles is unchanged, ρ_values becomes the smaller share's schema ρ, the mechanism
    gets ρ - ρ_roles - ρ_values (handed as ε_m = CKS(ρ_m·(1 - margin), δ_c), which it converts back to at most
    that), the schema's line is ε - ε_m, δ is untouched, and the whole run converts to at most ε."""
    split = joint_split(eps, delta, share)
    plan = DiscoveryPlan.from_split(split, 7)
    rho_v = min(plan.rho_values, joint_split(eps, delta, smaller).rho_schema)
    new = plan.with_values(rho_v, split)
    assert new.rho_roles == plan.rho_roles and new.rho_values == rho_v < plan.rho_values
    assert new.rho == pytest.approx(plan.rho_roles + rho_v, rel=1e-12)
    assert (new.delta, new.delta_threshold, new.delta_conversion) == (
        plan.delta, plan.delta_threshold, plan.delta_conversion,
    )  # fmt: skip
    eps_m = eps - new.epsilon  # what the mechanism is handed
    assert eps_m > split.epsilon_mechanism  # it gains what the values gave up
    assert eps_m == pytest.approx(
        zcdp_to_eps_cks((split.rho - new.rho) * (1 - JOINT_MARGIN), split.delta_conversion), rel=1e-12
    )
    rho_m = eps_to_zcdp(eps_m, split.delta_conversion)
    assert new.rho + rho_m <= split.rho * (1 + 1e-12)
    assert zcdp_to_eps_cks(new.rho + rho_m, split.delta_conversion) <= eps * (1 + 1e-12)
    assert new.epsilon + eps_m == pytest.approx(eps, abs=1e-15)
    assert plan.with_values(plan.rho_values, split) is plan
    with pytest.raises(BudgetError):
        plan.with_values(plan.rho_values * 1.01, split)  # never more than the values had
    with pytest.raises(BudgetError):
        DiscoveryPlan.make(0.2 * eps, 0.2 * delta, 3).with_values(1e-6, split)  # an ε-split plan has no mechanism ρ


def _header(p: int) -> list[str]:
    return [f"c{i}" for i in range(p)]


def test_the_values_share_is_read_from_the_released_roles_and_public_inputs_only():
    """1,000 rows, 14 columns, ε = 1: the share fitted with every role undecided is 50%.  Released as numbers, the
    columns' bounds are expected located at the 20% share, so the values take that; with a category set to
    discover the values keep the share; numbers and dates keep every column's expectation.  The decision is a
    function of the roles, the header, n, ε and δ: no data is passed."""
    cols, n, eps, delta = _header(14), 1000, 1.0, 1e-6
    fitted = schema_plan(cols, n, epsilon=eps, delta=delta, schema_share=None, joint=True).share
    assert fitted == 0.5 and fitted in SCHEMA_SHARES
    numbers = [Role(c, "numeric", integer=True, source="dp") for c in cols]
    categories = [Role(c, "categorical", source="dp") for c in cols]
    public = dict(epsilon=eps, delta=delta, schema_share=fitted)
    assert values_share(cols, n, roles=numbers, **public) == 0.2
    had = DiscoveryPlan.from_split(joint_split(eps, delta, fitted), len(cols)).rho_values
    assert joint_split(eps, delta, 0.2).rho_schema < had  # the numbers' share frees a part of what the values had
    assert values_share(cols, n, roles=categories, **public) == 0.5
    # a category set to discover keeps the share (a value near its threshold would be lost as it rises)
    assert values_share(cols, n, roles=numbers[:13] + categories[13:], **public) == 0.5
    # numbers and dates: every column keeps the plan's expectation at the share chosen
    dates = [Role(c, "datetime", format="%Y-%m-%d", source="dp") for c in cols[10:]]
    mixed = numbers[:10] + dates
    share = values_share(cols, n, roles=mixed, **public)
    at = dict(epsilon=eps, delta=delta, roles=mixed, joint=True)
    assert share < 0.5 and (
        schema_plan(cols, n, schema_share=share, **at).columns == schema_plan(cols, n, schema_share=0.5, **at).columns
    )
    # the share is never raised: a share given below the fitted ones stays
    assert values_share(cols, n, roles=numbers, epsilon=eps, delta=delta, schema_share=0.2) == 0.2


def test_a_smaller_share_that_would_lose_the_zoom_into_a_narrow_range_is_not_taken():
    """1,500 rows, 14 columns of numbers, ε = 1 (fitted share 30%): at 20% every column's bounds are still expected
    located, but a narrow range's second look could no longer zoom (its σ over the public n/8 rule), so the values
    keep the fitted share."""
    cols, n = _header(14), 1500
    public = dict(epsilon=1.0, delta=1 / n**2, joint=True)
    fitted = schema_plan(cols, n, schema_share=None, **public).share
    numbers = [Role(c, "numeric", source="dp") for c in cols]
    at = dict(public, roles=numbers)
    assert fitted == 0.3
    assert schema_plan(cols, n, schema_share=0.2, **at).columns == schema_plan(cols, n, schema_share=0.3, **at).columns
    assert values_share(cols, n, roles=numbers, epsilon=1.0, delta=1 / n**2, schema_share=fitted) == 0.3


def _clinic(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sick = rng.random(n) < 0.45
    return pd.DataFrame(
        {
            "age": np.clip(rng.normal(np.where(sick, 57, 52), 9), 29, 77).round().astype(int),
            "systolic": np.clip(rng.normal(131, 17, n), 94, 200).round().astype(int),
            "cholesterol": np.clip(rng.normal(246, 52, n), 126, 564).round().astype(int),
            "heart_rate": np.clip(rng.normal(np.where(sick, 139, 158), 21), 71, 202).round().astype(int),
            "oldpeak": np.where(rng.random(n) < 0.35, 0.0, rng.exponential(1.2, n).round(1)),
            "vessels": rng.choice(4, n, p=[0.58, 0.22, 0.13, 0.07]),
            "smoker": (rng.random(n) < 0.3).astype(int),
            "sex": (rng.random(n) < 0.68).astype(int),
            "fasting_sugar": (rng.random(n) < 0.15).astype(int),
            "ecg": rng.choice(3, n, p=[0.49, 0.49, 0.02]),
            "angina": (rng.random(n) < np.where(sick, 0.55, 0.14)).astype(int),
            "slope": rng.choice(3, n, p=[0.07, 0.46, 0.47]),
            "thal": rng.choice(4, n, p=[0.01, 0.06, 0.55, 0.38]),
            "outcome": sick.astype(int),
        }
    )


def test_a_release_of_numbers_with_nothing_declared_gives_the_rows_what_the_values_do_not_need(tmp_path):
    """End to end on 1,000 rows of numbers at ε = 1: the share is fitted to 50% before the roles are known; the roles
    come out numbers, so the value sets and bounds take the 20% share's ρ and the mechanism the rest.  The card's
    parts and the ledger still add up to the run's (ε, δ), the mechanism's ρ and the schema's stay within the run's,
    and the card says why.  With the share given by the user (--schema-share), it is kept."""
    df = _clinic(1000)
    eps, delta = 1.0, 1.0 / len(df) ** 2
    ledger = Ledger(str(tmp_path))
    params = {"max_iterations": 30, "round_iterations": 5}
    rel, _ = release_table(df, "auto", eps, params=params, ledger=ledger, seed=3)
    sd = rel.card["data"]["schema_discovery"]
    split = joint_split(eps, delta, 0.5)
    assert sd["share"] == 0.5 and sd["details"]["values_share"] == {"share": 0.2, "fitted": 0.5}
    assert "needed only the 20% share" in sd["share_note"]
    assert sd["rho_values"] == pytest.approx(joint_split(eps, delta, 0.2).rho_schema, rel=1e-12)
    assert sd["rho_roles"] == pytest.approx(DiscoveryPlan.from_split(split, df.shape[1]).rho_roles, rel=1e-12)
    # what the discovery drew is what the narrowed line says: the columns' ρ add up to the smaller ρ_values, and
    # each bounds histogram's σ is at least 1/sqrt(its column's ρ) (the line is not the fitted share's with the
    # draws of a smaller one, nor the other way round)
    details = sd["details"]
    assert sum(details["rho_per_column"].values()) == pytest.approx(sd["rho_values"], rel=1e-12)
    for name, b in details["bounds"].items():
        assert b["sigma"] >= (1 - 1e-12) / np.sqrt(details["rho_per_column"][name])
    parts = rel.card["privacy"]["parts"]
    assert sum(p["epsilon"] for p in parts) == pytest.approx(eps, abs=1e-12)
    assert sum(p["delta"] for p in parts) == pytest.approx(delta, rel=1e-12)
    assert sum(e["epsilon"] for e in ledger.entries()) == pytest.approx(eps, abs=1e-12)
    mech = parts[-1]
    assert mech["epsilon"] > split.epsilon_mechanism + 0.05  # the rows got more than the fitted split gives them
    assert eps_to_zcdp(mech["epsilon"], mech["delta"]) + sd["rho"] <= split.rho * (1 + 1e-12)
    assert len(rel.workload.domain) == df.shape[1]  # every column kept

    given, _ = release_table(df, "auto", eps, params=params, ledger=None, seed=3, schema_share=0.5)
    sd = given.card["data"]["schema_discovery"]
    assert "values_share" not in sd["details"] and sd["rho"] == pytest.approx(split.rho_schema, rel=1e-12)


def test_a_refusal_says_when_confirming_the_columns_as_numbers_would_let_it_run():
    """The plan counts a column of unknown role as a category.  On 1,000 rows × 18 columns at ε = 1 that refuses
    (16 now run, at a 60% share); as numbers the same header runs at the usual share, and the refusal says so.  On
    300 rows × 18 not even numbers fit, and it does not.  Public: the header, n, ε, δ."""
    from dpcore.tabular import _keeps_as_numbers

    for n, helps in ((1000, True), (300, False)):
        cols = _header(18)
        plan = schema_plan(cols, n, epsilon=1.0, delta=1 / n**2, schema_share=None, joint=True)
        assert plan.refuse
        assert ("confirming that" in plan.refusal()) is helps
        public = dict(epsilon=1.0, delta=1 / n**2, schema=None, roles=None, unlisted=None, joint=True)
        assert _keeps_as_numbers(cols, n, public) is helps
    numbers = {c: "integer" for c in _header(18)}
    assert not schema_plan(_header(18), 1000, epsilon=1.0, delta=1e-6, roles=numbers, schema_share=None,
                           joint=True).refuse  # fmt: skip
