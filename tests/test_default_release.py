"""The default release ("auto", issue 23): what it measures is chosen from public quantities (n, the attribute sizes,
ε, δ); the pairs are chosen from the data under DP by the adaptive projection; the card, the CLI and the run store
say what ran.  Real SCIP, small instances."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpcore.domain import Domain
from dpcore.errors import DPCoreError
from dpcore.mechanisms.base import Budget
from dpcore.mechanisms.projection import zcdp_rho
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection
from dpcore.privacy.ledger import Ledger
from dpcore.release import (
    DEFAULT_MAX_ONE_WAY,
    DEFAULT_MIN_ONE_WAY,
    DEFAULT_SELECT_FRACTION,
    default_max_pairs,
    default_release_plan,
    default_rounds,
    lone_pair_share,
    release_table,
)
from dpcore.workload import MIN_ROWS_PER_CELL, eligible_pairs

from .conftest import ROOT, SHARED_DATA

COLUMNS = ["workclass", "education-num", "marital-status", "race", "sex", "income>50K"]
SHAPE = [9, 16, 7, 5, 2, 2]


def _floor(p: int, r: int, rho: float) -> float:
    """The closed form of the docstring: the noise per cell of one pair's measurement (σ·sqrt(2/π) counts)."""
    f = max(DEFAULT_MIN_ONE_WAY, p / (p + r))
    rho_meas = (1 - f) * rho / r * (1 - DEFAULT_SELECT_FRACTION)
    return max(MIN_ROWS_PER_CELL, math.sqrt(2 / math.pi) / math.sqrt(rho_meas))


@pytest.mark.parametrize("n, eps", [(100, 0.3), (100, 3.0), (300, 1.0), (1000, 0.3), (30_000, 0.1), (250, 1.0)])
def test_the_number_of_pairs_is_the_largest_the_noise_leaves_room_for(n, eps):
    """R pairs are measured only if at least R pairs have cells holding the noise of one of R measurements; R + 1
    would not fit (or the cap is reached); the one-way share and the floor follow the closed form."""
    rho = zcdp_rho(Budget(eps, 1.0 / n**2))
    p, cap = len(SHAPE), len(SHAPE)
    sizes = sorted(SHAPE[i] * SHAPE[j] for i in range(p) for j in range(i + 1, p))
    r, f, floor, grouped_cap = default_rounds(SHAPE, n, rho, cap)
    assert grouped_cap is None  # categories: nothing is grouped
    lone = sizes[0] > n / _floor(p, 1, rho)  # not even one pair stands above the noise of an even split
    if r and not lone:
        assert f == pytest.approx(max(DEFAULT_MIN_ONE_WAY, p / (p + r)))
        assert floor == pytest.approx(_floor(p, r, rho))
        assert sizes[r - 1] <= n / floor
    elif r:  # ... but one pair does, given all the one-way marginals can spare
        assert (r, f) == (1, DEFAULT_MIN_ONE_WAY)
        assert floor == pytest.approx(_lone_floor(rho)) and sizes[0] <= n / floor
    else:
        assert (f, floor) == (1.0, math.inf)
        assert sizes[0] > n / _lone_floor(rho)
    if r < cap and not lone:
        assert sizes[r] > n / _floor(p, r + 1, rho)  # one more pair would sit below the noise


def _lone_floor(rho: float) -> float:
    """The noise per cell of the one pair that takes all the one-way marginals can spare, 1 - 0.3 of ρ."""
    rho_meas = (1 - DEFAULT_MIN_ONE_WAY) * rho * (1 - DEFAULT_SELECT_FRACTION)
    return max(MIN_ROWS_PER_CELL, math.sqrt(2 / math.pi) / math.sqrt(rho_meas))


def test_one_pair_takes_what_the_one_way_marginals_can_spare_when_no_pair_fits_an_even_split():
    """614 rows × 9 columns at ε = 0.3 (Pima's declared shape): no pair stands above the noise of an even split
    (f = 9/10), but the outcome's pairs (2 × 9 … 2 × 16 cells) stand above the noise of 0.7 ρ; the plan measures one
    of them, chosen from the data, with the adaptive projection."""
    shape, n = [22, 16, 21, 11, 9, 21, 13, 21, 2], 614
    budget = Budget(0.3, 1.0 / n**2)
    rho = zcdp_rho(budget)
    sizes = sorted(shape[i] * shape[j] for i in range(9) for j in range(i + 1, 9))
    assert sizes[0] > n / _floor(9, 1, rho)
    assert default_rounds(shape, n, rho, default_max_pairs(9)) == (1, DEFAULT_MIN_ONE_WAY, _lone_floor(rho), None)
    dom = Domain.from_dict({f"c{i}": k for i, k in enumerate(shape)})
    cls, params, wl, note = default_release_plan(dom, n, budget)
    assert cls is AdaptiveProjection and params["rounds"] == 1 and params["one_way_fraction"] == DEFAULT_MIN_ONE_WAY
    pairs = wl.marginals[9:]
    assert pairs and all(8 in m for m in pairs)  # the outcome's pairs: the only ones small enough
    assert all(shape[a] * shape[b] <= n / _lone_floor(rho) for a, b in pairs)
    assert "1 two-way marginal," in note and "30% of the budget" in note
    # Half the rows: not even that pair stands above its noise, and the columns come out independent.
    assert default_rounds(shape, n // 2, rho, default_max_pairs(9))[0] == 0


def test_the_one_way_share_stays_within_what_the_adaptive_projection_takes():
    """Found on a 944-row survey of 10 columns at ε = 0.3: one pair fitted an even split with p / (p + 1) = 0.909
    of ρ for the one-way marginals, above the adaptive projection's largest share, and the default run was refused.
    Such a split (the pairs sharing less than a tenth of ρ) is not taken: one pair takes 70% of ρ instead.  Every
    plan the default makes, over widths of 2 to 60 columns, sizes, n and ε, is one the mechanism accepts."""
    param = next(q for q in AdaptiveProjection.parameters if q.name == "one_way_fraction")
    assert DEFAULT_MAX_ONE_WAY == param.high and DEFAULT_MIN_ONE_WAY >= param.low
    rng = np.random.default_rng(0)
    shares = []
    for p in (2, 5, 9, 10, 11, 20, 60):
        for n in (100, 944, 5000, 100_000):
            for eps in (0.1, 0.3, 1.0, 3.0):
                shape = [int(k) for k in rng.integers(2, 12, size=p)]
                dom = Domain.from_dict({f"c{i}": k for i, k in enumerate(shape)})
                cls, params, wl, _ = default_release_plan(dom, n, Budget(eps, 1.0 / n**2))  # validates
                if cls is AdaptiveProjection:
                    shares.append(params["one_way_fraction"])
    assert max(shares) <= DEFAULT_MAX_ONE_WAY and DEFAULT_MIN_ONE_WAY in shares and len(set(shares)) > 3
    # The survey's shape at ε = 0.3: one pair fits an even split only at 10/11 of ρ for the one-way marginals,
    # so it is measured alone, with what its 14 cells need to hold twice their noise (37% of ρ).
    shape, n = [10, 8, 7, 7, 7, 7, 10, 7, 10, 2], 755
    rho = zcdp_rho(Budget(0.3, 1.0 / n**2))
    smallest = sorted(shape[i] * shape[j] for i in range(10) for j in range(i + 1, 10))
    assert smallest[0] == 14 and smallest[0] <= n / _floor(10, 1, rho) and smallest[1] > n / _floor(10, 2, rho)
    r, f, floor, cap = default_rounds(shape, n, rho, default_max_pairs(10))
    assert (r, cap) == (1, None) and f == lone_pair_share(14, n, rho) == 0.63
    assert floor == pytest.approx(_pair_floor(f, rho))


def _pair_floor(f: float, rho: float) -> float:
    """The noise per cell of one pair measured with (1 - f) of ρ (a tenth of it choosing the pair)."""
    return max(MIN_ROWS_PER_CELL, math.sqrt(2 / math.pi) / math.sqrt((1 - f) * rho * (1 - DEFAULT_SELECT_FRACTION)))


@pytest.mark.parametrize(
    "cells, n, eps", [(14, 755, 0.3), (20, 455, 1.0), (18, 614, 0.3), (4, 20_000, 1.0), (30, 120, 3.0)]
)
def test_a_lone_pair_takes_what_its_cells_need_to_hold_twice_its_noise(cells, n, eps):
    """The one-way share f when one pair is measured alone: the largest hundredth in [0.3, 0.9] at which the pair's
    cells hold twice its noise on average; 0.3 when even 70% of ρ cannot give it that."""
    rho = zcdp_rho(Budget(eps, 1.0 / n**2))
    f = lone_pair_share(cells, n, rho)
    assert DEFAULT_MIN_ONE_WAY <= f <= DEFAULT_MAX_ONE_WAY and f == round(f, 2)
    holds = lambda share: cells <= n / (2 * _pair_floor(share, rho))  # noqa: E731
    if f == DEFAULT_MIN_ONE_WAY:
        assert not holds(DEFAULT_MIN_ONE_WAY + 0.01)
    elif f < DEFAULT_MAX_ONE_WAY:
        assert holds(f) and not holds(f + 0.01)
    else:
        assert holds(DEFAULT_MAX_ONE_WAY)
    assert lone_pair_share(18, 614, zcdp_rho(Budget(0.3, 1.0 / 614**2))) == DEFAULT_MIN_ONE_WAY  # Pima: needs all


def test_fewer_pairs_when_n_or_epsilon_is_small_and_none_when_nothing_stands_above_the_noise():
    by_n = [default_rounds(SHAPE, n, 0.05, 6)[0] for n in (10, 20, 100, 300, 1000, 3000, 30_000)]
    by_rho = [default_rounds(SHAPE, 1000, rho, 6)[0] for rho in (1e-5, 1e-4, 1e-3, 1e-2, 0.1)]
    assert by_n == sorted(by_n) and by_rho == sorted(by_rho)
    assert by_n[0] == 0 and by_rho[0] == 0 and by_n[-1] == 6 and by_rho[-1] == 6
    assert default_rounds([3, 3], 10**6, 1.0, 0)[0] == 0  # no room: one-way marginals only


def test_the_room_for_pairs_is_two_per_attribute_and_64_in_all():
    assert [default_max_pairs(p) for p in (1, 2, 6, 17, 32, 33, 60, 400)] == [2, 4, 12, 34, 64, 64, 64, 64]
    assert default_rounds([2, 2], 10**6, 1.0, default_max_pairs(2))[0] == 1  # never more pairs than there are


def _domain() -> Domain:
    return Domain.from_dict(dict(zip(COLUMNS, SHAPE)))


def test_the_plan_is_the_adaptive_projection_over_the_pairs_that_stand_above_the_noise():
    dom, n = _domain(), 1000
    budget = Budget(1.0, 1.0 / n**2)
    cls, params, wl, note = default_release_plan(dom, n, budget)
    r, f, floor, _ = default_rounds(SHAPE, n, zcdp_rho(budget), default_max_pairs(6))
    assert cls is AdaptiveProjection and r > 0
    assert params == {"rounds": r, "one_way_fraction": round(f, 4), "select_fraction": DEFAULT_SELECT_FRACTION}
    assert wl.marginals == tuple((a,) for a in range(6)) + tuple(eligible_pairs(dom, n, floor))
    assert r > len(SHAPE)  # 1,000 rows at ε = 1: more pairs than attributes stand above their noise
    assert f"then {r} two-way marginals" in note and f"among the {wl.n_marginals - 6} pairs" in note
    plan = AdaptiveProjection().plan(n, wl, budget, AdaptiveProjection.validate_params(params))
    assert plan["rho"] == pytest.approx(zcdp_rho(budget))  # the whole ρ of the budget, no more


def test_a_tiny_budget_measures_the_one_way_marginals_alone_with_the_projection():
    dom, n = _domain(), 100
    cls, params, wl, note = default_release_plan(dom, n, Budget(0.1, 1.0 / n**2))
    assert cls.name == "projection" and params == {}
    assert wl.marginals == tuple((a,) for a in range(6)) and "one-way marginals only" in note


def test_parameters_decide_which_mechanism_runs_and_unknown_ones_are_refused():
    dom, n = _domain(), 1000
    budget = Budget(1.0, 1.0 / n**2)
    cls, params, _, _ = default_release_plan(dom, n, budget, {"rows": 500, "rounds": 2})
    assert cls is AdaptiveProjection and params["rows"] == 500 and params["rounds"] == 2  # the user's own
    cls, params, wl, note = default_release_plan(dom, n, budget, {"max_cells_measured": 50})
    assert cls.name == "projection" and params == {"max_cells_measured": 50}  # the projection's own: it runs
    assert note.startswith("the default workload") and wl.n_marginals > 6
    with pytest.raises(DPCoreError, match="no parameter"):
        default_release_plan(dom, n, budget, {"samples": 10})


@pytest.fixture(scope="module")
def adult_small():
    df = pd.read_csv(SHARED_DATA / "adult_pgm.csv", usecols=COLUMNS).iloc[:2000][COLUMNS]
    full = json.loads((SHARED_DATA / "adult_pgm-domain.json").read_text())
    schema = {
        "attributes": [
            {"name": c, "kind": "categorical", "values": list(range(full[c])), "missing": False} for c in COLUMNS
        ]
    }
    return df, schema


def test_the_default_release_runs_the_plan_charges_the_budget_and_says_so(adult_small, tmp_path):
    df, schema = adult_small
    ledger = Ledger(str(tmp_path))
    fast = {"max_iterations": 40, "round_iterations": 5}
    rel, _ = release_table(df, "auto", 1.0, params=fast, schema=schema, seed=0, ledger=ledger)
    n = len(df)
    r = default_rounds(SHAPE, n, zcdp_rho(Budget(1.0, 1.0 / n**2)), default_max_pairs(6))[0]
    assert rel.card["mechanism"]["name"] == "projection_adaptive"
    assert rel.card["workload"]["chosen_by"].startswith("the default: all 6 one-way marginals")
    assert rel.public["rounds_run"] == rel.public["rounds"] == r
    assert sum(e["epsilon"] for e in ledger.entries()) == pytest.approx(1.0)
    assert rel.rows.shape == (n, 6)
    # A workload the user chose: the projection measures it all, and no note is added.
    rel2, _ = release_table(df, "auto", 1.0, schema=schema, seed=0, ledger=None, workload={"k": 1})
    assert rel2.card["mechanism"]["name"] == "projection" and "chosen_by" not in rel2.card["workload"]


def test_the_default_on_a_raw_table_converts_the_schema_share_jointly(tmp_path):
    """The adaptive projection is ρ-zCDP like the projection: discovery and measurement convert once, and the
    card's parts and the ledger add up to the run's (ε, δ)."""
    from dpcore.discovery import DEFAULT_SCHEMA_SHARE, joint_split
    from dpcore.privacy import eps_to_zcdp

    from .tables import kitchen_sink

    df = kitchen_sink(3000)[["sex", "country", "age", "priors"]]
    n, eps = len(df), 1.0
    ledger = Ledger(str(tmp_path))
    rel, _ = release_table(df, "auto", eps, params={"max_iterations": 40}, ledger=ledger, seed=1)
    assert rel.card["mechanism"]["name"] == "projection_adaptive"
    sp = joint_split(eps, 1 / n**2, DEFAULT_SCHEMA_SHARE)
    parts = rel.card["privacy"]["parts"]
    assert sum(p["epsilon"] for p in parts) == pytest.approx(eps)
    assert rel.card["data"]["schema_discovery"]["converted"].startswith("jointly")
    assert eps_to_zcdp(parts[-1]["epsilon"], parts[-1]["delta"]) + sp.rho_schema <= sp.rho * (1 + 1e-12)
    assert sum(e["epsilon"] for e in ledger.entries()) == pytest.approx(eps)


def test_the_run_store_and_the_library_keep_what_the_default_ran(adult_small, tmp_path):
    import dpcore

    df, schema = adult_small
    synth = dpcore.Synthesizer(
        epsilon=1.0, schema=schema, workspace=tmp_path, seed=0, params={"max_iterations": 40, "round_iterations": 5}
    )
    assert synth.mechanism == "auto"
    synth.fit(df.iloc[:600])
    assert synth.card["mechanism"]["name"] == "projection_adaptive"  # 600 rows at ε = 1: six pairs fit
    from dpcore.runs import RunStore
    from dpcore.workspace import Workspace

    run = RunStore(Workspace(tmp_path)).get(synth.run_id)
    assert run["mechanism"] == synth.card["mechanism"]["name"]
    with pytest.raises(DPCoreError):
        dpcore.Synthesizer("no-such-mechanism")


def test_the_command_line_default_says_what_it_chose(tmp_path):
    df = pd.read_csv(SHARED_DATA / "adult_pgm.csv", usecols=COLUMNS).iloc[:1500][COLUMNS]
    full = json.loads((SHARED_DATA / "adult_pgm-domain.json").read_text())
    (tmp_path / "t.csv").write_text(df.to_csv(index=False))
    (tmp_path / "t-domain.json").write_text(json.dumps({c: full[c] for c in COLUMNS}))
    out = subprocess.run(
        [sys.executable, "-m", "dpcore", "release", "--data", "t.csv", "--domain", "t-domain.json", "--seed", "1",
         "--param", "max_iterations=40", "--param", "round_iterations=5", "--out", "synth.csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPCORE_WORKSPACE": str(tmp_path / "ws")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Workload: the default: all 6 one-way marginals" in out.stdout
    said = "Adaptive projection (select, measure, project): ε = 1 spent"
    assert any(line.startswith(said) for line in out.stdout.splitlines())
    synth = pd.read_csv(tmp_path / "synth.csv")
    assert list(synth.columns) == COLUMNS and len(synth) == len(df)
    assert np.all(synth.to_numpy() >= 0)


def test_a_given_workload_runs_the_projection_and_refuses_the_adaptive_ones_parameters(adult_small):
    df, schema = adult_small
    with pytest.raises(DPCoreError, match=r"no parameter\(s\) \['rounds'\].*projection_adaptive"):
        release_table(df, "auto", 1.0, params={"rounds": 3}, schema=schema, ledger=None, seed=0, workload={"k": 1})
    rel, _ = release_table(df, "auto", 1.0, params={"rounds": 3, "max_iterations": 40}, schema=schema, ledger=None,
                           seed=0)  # fmt: skip
    assert rel.card["mechanism"]["name"] == "projection_adaptive" and rel.public["rounds"] == 3


def test_the_command_line_refuses_the_adaptive_ones_parameters_with_a_workload_before_any_spend(tmp_path):
    from dpcore.workspace import Workspace

    out = subprocess.run(
        [sys.executable, "-m", "dpcore", "release", "--data", str(SHARED_DATA / "adult_pgm.csv"), "--domain",
         str(SHARED_DATA / "adult_pgm-domain.json"), "--k", "2", "--param", "rounds=3", "--out", "x.csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPCORE_WORKSPACE": str(tmp_path / "ws")},
    )  # fmt: skip
    assert out.returncode == 2 and "no parameter(s) ['rounds']" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "x.csv").exists()
    assert Ledger(Workspace(tmp_path / "ws")).entries() == []  # the CLI's workspace: nothing charged


@pytest.mark.parametrize(
    "args, said",
    [
        (["--param", "samples=3"], "has no parameter(s) ['samples']"),
        (["--param", "rounds=0"], "rounds = '0' is outside"),
        (["--param", "return_below=0.5"], "return_below = '0.5' is outside the allowed range [1, 100]"),
        (["--param", "shrink_pairs=maybe"], "shrink_pairs: expected true or false, got 'maybe'"),
    ],
)
def test_the_command_line_default_refuses_bad_parameters_in_one_line_before_any_spend(tmp_path, args, said):
    from dpcore.workspace import Workspace

    out = subprocess.run(
        [sys.executable, "-m", "dpcore", "release", "--data", str(SHARED_DATA / "adult_pgm.csv"), "--domain",
         str(SHARED_DATA / "adult_pgm-domain.json"), *args, "--out", "x.csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPCORE_WORKSPACE": str(tmp_path / "ws")},
    )  # fmt: skip
    assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr
    assert Ledger(Workspace(tmp_path / "ws")).entries() == []


def test_a_one_value_attribute_is_never_in_a_measured_pair():
    """A pair with a constant attribute holds no more than the other's one-way marginal: the plan leaves it out
    of the candidates and of the count of pairs that fit, however few cells it has."""
    dom = Domain.from_dict({"constant": 1, "a": 9, "b": 16, "c": 2})
    n = 1000
    budget = Budget(1.0, 1.0 / n**2)
    _, _, wl, _ = default_release_plan(dom, n, budget)
    pairs = [m for m in wl.marginals if len(m) == 2]
    assert pairs and all(0 not in m for m in pairs)
    r, _, _, _ = default_rounds((1, 9, 16, 2), n, zcdp_rho(budget), default_max_pairs(4))
    assert r == default_rounds((9, 16, 2), n, zcdp_rho(budget), default_max_pairs(4))[0]


def test_a_default_run_says_auto_until_it_has_chosen(adult_small, tmp_path):
    """The run's row (what the app's run lists and `dpcore runs` show) says "auto" while the default has not chosen,
    not the projection it plans as; once done, the mechanism that ran, label included."""
    from dpcore.runs import RunStore, execute_release
    from dpcore.workspace import Workspace

    df, schema = adult_small
    ws = Workspace(tmp_path)
    seen = []
    execute_release(
        ws,
        None,
        None,
        "auto",
        1.0,
        params={"max_iterations": 40, "round_iterations": 5},
        seed=0,
        table=df.iloc[:600],
        table_options={"schema": schema, "name": "adult-600"},
        on_created=lambda rid: seen.append(RunStore(ws).get(rid)),
    )
    assert seen[0]["mechanism"] == "auto" and seen[0]["label"].startswith("auto ε=1")
    done = RunStore(ws).get(seen[0]["id"])
    assert done["status"] == "done" and done["mechanism"] == "projection_adaptive"
    assert done["label"].startswith("projection_adaptive ε=1")
