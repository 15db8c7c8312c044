"""A battery's empty end values read together (:func:`dpcore.mechanisms.decouple.battery_pools`, part of
``empty_special``).  Where a number's one-way σ is over OUTER_SIGMA_SHARE of the rows its end bins are left as
measured -- one column cannot tell a thin real value from an empty one -- and a 1,500-row survey's twenty 1-5
answers located as [1, 7] came back with 6s and 7s on 3-19% of their rows.  Items whose end chains cover the same
values are read on the sum of their shares.  Real SCIP off in the small fits (as in tests/test_empty_cells.py);
fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.decouple import (
    BATTERY_MIN,
    OUTER_SIGMA_SHARE,
    battery_pools,
    chain_zeros,
    empty_chains,
    empty_notes,
)
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection
from dpcore.workload import Workload

FAST = {"scip": "off", "max_iterations": 60, "round_iterations": 10}
ONE_TO_SEVEN = tuple(v + 0.5 for v in range(0, 8))  # 1..7, one bin each: a 1-5 scale located as [1, 7]
TWO_TO_SEVEN = ONE_TO_SEVEN[1:]  # its 1s missed by the bounds: 2..7


def _item(name: str, edges=ONE_TO_SEVEN) -> Attribute:
    return Attribute(name, "numeric", edges=edges, integer=True, source="dp")


def test_items_whose_end_chains_cover_the_same_values_form_one_pool():
    attrs = [_item(f"q{i}") for i in range(4)] + [_item("q4", TWO_TO_SEVEN)]
    attrs += [_item("rooms", (0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5))]
    attrs.append(Attribute("group", "categorical", ("a", "b")))
    pools = battery_pools(Domain(attrs))
    assert len(pools) == 1
    members = dict(pools[0])
    assert set(members) == {0, 1, 2, 3, 4}  # rooms' chain is 9..15: not the items'
    assert members[0] == (6, 5, 4) and members[4] == (5, 4, 3)  # 7, 6, 5 whichever code each holds them in
    assert battery_pools(Domain(attrs[: BATTERY_MIN - 1])) == ()
    assert empty_chains(Domain(attrs)).pools == pools


def _measure(shares: dict, sd: float):
    def measure(a: int, code: int):
        return float(shares[a][code]), sd

    return measure


def test_a_pool_empties_its_values_where_their_sum_stays_under_its_sigma_and_keeps_a_value_the_items_hold():
    dom = Domain([_item(f"q{i}") for i in range(5)])
    chains = empty_chains(dom)
    sd = 0.054  # a 1,500-row survey's one-way σ: over OUTER_SIGMA_SHARE, no item is read alone
    assert sd > OUTER_SIGMA_SHARE
    body = [0.1, 0.2, 0.3, 0.2, 0.11]
    noise6, noise7 = [0.06, -0.03, 0.05, 0.0, -0.02], [0.03, 0.01, -0.05, 0.02, 0.01]  # each up to 1.1σ
    shares = {a: np.array(body + [noise6[a], noise7[a]]) for a in range(5)}
    assert chain_zeros(dict(chains), _measure(shares, sd)) == {}  # alone: too noisy to read
    zeros = chain_zeros(chains, _measure(shares, sd))
    assert zeros == {a: {5, 6} for a in range(5)}  # 7s sum to 0.02, 6s to 0.06: together under sqrt(5)·σ
    assert "each too noisy alone" in empty_notes(zeros, dom)[0]
    thin = {a: np.array(body + [noise6[a], 0.05 + noise7[a]]) for a in range(5)}  # every item holds 5% of 7s
    assert chain_zeros(chains, _measure(thin, sd)) == {}  # 7s sum to 0.27, over 2σ of the sum: kept, 6 with it
    alone = chain_zeros(dict(chains), _measure(shares, OUTER_SIGMA_SHARE))
    assert alone and chain_zeros(chains, _measure(shares, OUTER_SIGMA_SHARE)) == alone  # at σ ≤ 3%: each alone


ITEMS = 16


def _survey(n: int, seed: int) -> Dataset:
    """Sixteen 1-5 answers (5 on 11% of the rows) following a three-valued group, located as [1, 7]."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    cols = [np.clip(z + rng.integers(0, 3, n), 0, 4) for _ in range(ITEMS)] + [z]
    attrs = [_item(f"q{i}") for i in range(ITEMS)] + [Attribute("group", "categorical", ("a", "b", "c"))]
    return Dataset(np.column_stack(cols), Domain(attrs), name="survey")


def test_a_noisy_surveys_items_come_back_without_6s_and_7s_and_keep_their_5s():
    """1,000 rows at ε = 1 measure each one-way marginal with σ over OUTER_SIGMA_SHARE: without the pool the
    items keep a few percent of their rows at 6 and 7 (the positive part of two noisy empty cells); with it the
    pool's 6 and 7 go together when their summed shares stay under the sum's σ (about 66% of draws: the same
    chain rule as one column's), and the rows then hold none.  The items' 5s (11% of the rows each: over 8σ of
    the sum) are never emptied; their share stays within 4σ + 2% of the data's."""
    budget = Budget(1.0, 1.0 / 1000**2)
    with_rule, without, emptied = 0.0, 0.0, 0
    for seed in range(3):
        ds = _survey(1000, seed)
        wl = Workload(ds.domain, tuple((a,) for a in range(ITEMS + 1)) + tuple((a, ITEMS) for a in range(ITEMS)))
        runs = []
        for on in (True, False):
            params = AdaptiveProjection.validate_params({"rounds": 2, "empty_special": on, **FAST})
            runs.append(AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed)))
        on_run, off_run = runs
        sigma = on_run.public["sigma_one_way_counts"] / 1000
        assert sigma > OUTER_SIGMA_SHARE
        note = next((n for n in on_run.notes if "fitted as empty" in n), "")
        tail = note.split("have: ")[-1].split(" (")[0].rstrip(".")  # before "(N cells left there ...)"
        listed = dict(part.split(": ", 1) for part in tail.split("; ") if ": " in part)
        gone = listed.get("q0") == "6, 7"
        emptied += int(gone)
        for a in range(ITEMS):
            high_on = float(np.isin(on_run.rows[:, a], (5, 6)).mean())
            if gone:
                assert listed.get(f"q{a}") == "6, 7" and high_on == 0.0  # one pool: every item's, together
            assert "5" not in listed.get(f"q{a}", "").split(", ")
            real, synth = float((ds.codes[:, a] == 4).mean()), float((on_run.rows[:, a] == 4).mean())
            assert synth == pytest.approx(real, abs=4 * sigma + 0.02)
            with_rule += high_on
            without += float(np.isin(off_run.rows[:, a], (5, 6)).mean())
    assert emptied >= 1, emptied  # P(none of 3) = 0.34³ ≈ 4%: a seeded draw, checked once
    assert with_rule < without, (with_rule, without)
