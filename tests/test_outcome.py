"""An outcome the analyst names (issue 23: ML efficacy): the default's first pair rounds choose among that
column's pairs.  The choice is public (a column name), the candidates and the number of focused rounds come from
public quantities, and the selection is the same exponential mechanism over fewer candidates: the same ρ.  Real
SCIP, small instances."""

import subprocess
import sys

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.domain import Domain
from dpcore.errors import DPCoreError, ParameterError
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.projection import zcdp_rho
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.samplers import Randomness
from dpcore.release import OUTCOME, default_release_plan, focus_rounds, release_table
from dpcore.workload import Workload

from .conftest import ROOT
from .tables import coded_adult

COLUMNS = ["workclass", "education-num", "marital-status", "race", "sex", "income>50K"]
SHAPE = [9, 16, 7, 5, 2, 2]
Y = "income>50K"


def _domain() -> Domain:
    return Domain.from_dict(dict(zip(COLUMNS, SHAPE)))


@pytest.mark.parametrize("rounds, pairs, want", [(12, 5, 5), (7, 5, 4), (6, 4, 3), (1, 4, 1), (3, 1, 1), (0, 3, 0)])
def test_half_of_the_rounds_at_least_one_never_more_than_the_outcome_has_pairs(rounds, pairs, want):
    assert focus_rounds(rounds, pairs) == want


def test_the_plan_focuses_half_its_rounds_on_the_outcomes_pairs_and_spends_the_same():
    dom, n = _domain(), 2000
    budget = Budget(1.0, 1.0 / n**2)
    cls0, p0, wl0, note0 = default_release_plan(dom, n, budget)
    cls, p, wl, note = default_release_plan(dom, n, budget, {OUTCOME: Y})
    assert cls is cls0 is AdaptiveProjection and wl.marginals == wl0.marginals  # the same candidates
    o = COLUMNS.index(Y)
    theirs = [m for m in wl.marginals if len(m) == 2 and o in m]
    assert p["focus"] == o and p["focus_rounds"] == focus_rounds(p["rounds"], len(theirs)) > 0
    assert {k: v for k, v in p.items() if not k.startswith("focus")} == p0  # nothing else changes
    assert f"The first {p['focus_rounds']} of them are chosen among the outcome {Y}'s {len(theirs)}" in note
    assert "outcome" not in note0
    plans = [AdaptiveProjection().plan(n, wl, budget, AdaptiveProjection.validate_params(q)) for q in (p0, p)]
    assert plans[0]["rho"] == plans[1]["rho"] == pytest.approx(zcdp_rho(budget))


def test_the_plan_says_when_the_outcome_changes_nothing():
    dom = _domain()
    # Every candidate is measured anyway (1,000 rows at ε = 1): no focus, the releases stay as they were.
    _, p, _, note = default_release_plan(dom, 1000, Budget(1.0, 1e-6), {OUTCOME: Y})
    assert "focus" not in p and f"Every candidate pair is measured, the outcome {Y}'s" in note
    # No pair fits at all: the projection measures the one-way marginals, and says the outcome steered nothing.
    cls, p, _, note = default_release_plan(dom, 100, Budget(0.1, 1e-4), {OUTCOME: Y})
    assert cls.name == "projection" and p == {} and f"The outcome {Y} steers nothing here" in note
    # The private schema left the column out: the pairs are chosen among all.
    small = Domain.from_dict(dict(zip(COLUMNS[:5], SHAPE[:5])))
    _, p, _, note = default_release_plan(small, 2000, Budget(1.0, 1e-6), {OUTCOME: Y})
    assert "focus" not in p and f"The outcome {Y} was left out by the schema" in note


def _run(focus, seed: int):
    rng = np.random.default_rng(5)
    n = 1500
    codes = np.column_stack([rng.integers(0, s, n) for s in SHAPE])
    codes[:, 5] = (codes[:, 1] > 9) ^ (rng.random(n) < 0.2)  # the outcome follows education
    dom = _domain()
    ds = Dataset(codes, dom, "t")
    pairs = tuple((a, b) for a in range(6) for b in range(a + 1, 6))
    wl = Workload(dom, tuple((a,) for a in range(6)) + pairs)
    params = {"rounds": 6, "one_way_fraction": 0.3, "max_iterations": 30, "round_iterations": 5, "max_seconds": 60}
    if focus is not None:
        params |= {"focus": focus, "focus_rounds": 3}
    ctx = RunContext(noise=Randomness(seed))
    res = AdaptiveProjection().run(ds, wl, Budget(1.0, 1.0 / n**2), AdaptiveProjection.validate_params(params), ctx)
    chosen = [t["selected_marginal"] for t in res.trace[1:]]
    return res, chosen


def test_the_first_focus_rounds_measure_the_outcomes_pairs_at_the_same_cost():
    """With the outcome the first three selections are its pairs, whatever the data says is worst fitted
    elsewhere; without it they are not all the outcome's (on this table its pairs are not the worst fitted).
    Every path charges the planned ρ."""
    focused, chosen = _run(5, seed=3)
    assert len(chosen) >= 3 and all(Y in c for c in chosen[:3]), chosen
    plain, chosen0 = _run(None, seed=3)
    assert not all(Y in c for c in chosen0[:3]), chosen0
    assert focused.spends[0].rho == plain.spends[0].rho
    assert (focused.epsilon_spent, focused.delta_spent) == (plain.epsilon_spent, plain.delta_spent)


def test_a_focus_outside_the_table_is_refused():
    with pytest.raises(ParameterError, match="focus"):
        _run(6, seed=0)


@pytest.fixture(scope="module")
def coded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outcome")
    df, sizes = coded_adult(tmp, COLUMNS, 2000, "t")
    schema = {
        "attributes": [
            {"name": c, "kind": "categorical", "values": list(range(sizes[c])), "missing": False} for c in COLUMNS
        ]
    }
    return tmp, df, schema


def _cli(tmp, ws, *args):
    return subprocess.run(
        [sys.executable, "-m", "dpcore", "release", "--data", "t.csv", "--domain", "t-domain.json", "--seed", "1",
         "--param", "max_iterations=30", "--param", "round_iterations=5", "--out", "synth.csv", *args],
        cwd=tmp, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPCORE_WORKSPACE": str(ws)},
    )  # fmt: skip


def test_the_command_line_takes_an_outcome_and_says_what_it_did(coded, tmp_path):
    tmp, _, _ = coded
    out = _cli(tmp, tmp_path / "ws", "--outcome", Y)
    assert out.returncode == 0, out.stderr
    assert f"of them are chosen among the outcome {Y}'s" in out.stdout


@pytest.mark.parametrize(
    "args, said",
    [
        (["--outcome", "salary"], "The outcome 'salary' is not a column of this table"),
        (["--outcome", Y, "--mechanism", "mwem"], "--outcome steers the default's choice of pairs"),
        (["--outcome", Y, "--k", "2", "--marginals", "all"], "An outcome steers the default's own choice of pairs"),
    ],
)
def test_the_command_line_refuses_an_outcome_it_cannot_use_before_any_spend(coded, tmp_path, args, said):
    from dpcore.workspace import Workspace

    tmp, _, _ = coded
    out = _cli(tmp, tmp_path / "ws", *args)
    assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr
    assert Ledger(Workspace(tmp_path / "ws")).entries() == []


def test_a_raw_table_and_the_library_take_an_outcome(coded, tmp_path):
    import dpcore

    _, df, schema = coded
    fast = {"max_iterations": 30, "round_iterations": 5}
    rel, _ = release_table(df, "auto", 1.0, params={**fast, OUTCOME: Y}, schema=schema, seed=0, ledger=None)
    assert rel.card["mechanism"]["name"] == "projection_adaptive"
    assert f"the outcome {Y}'s" in rel.card["workload"]["chosen_by"]
    assert rel.card["parameters"]["focus_column"] == Y  # the position, named
    assert rel.workload.domain.attributes[rel.card["parameters"]["focus"]].name == Y
    ledger = Ledger(str(tmp_path))
    with pytest.raises(DPCoreError, match="not a column"):
        release_table(df, "auto", 1.0, params={OUTCOME: "salary"}, schema=schema, seed=0, ledger=ledger)
    with pytest.raises(DPCoreError, match="An outcome steers"):
        release_table(df, "mwem", 1.0, params={OUTCOME: Y}, schema=schema, seed=0, ledger=ledger)
    assert ledger.entries() == []  # refused before anything was charged
    synth = dpcore.Synthesizer(epsilon=1.0, schema=schema, workspace=tmp_path, seed=0, params=fast, outcome=Y)
    synth.fit(df.iloc[:1200])
    assert f"the outcome {Y}" in synth.card["workload"]["chosen_by"]


def test_the_budget_return_reads_the_pairs_chosen_freely_after_the_outcomes():
    """With grouped pairs the rounds left may go back to the one-way marginals when the pairs measured carry no
    signal (``return_below``).  The outcome's pairs were chosen for the analyst, so the test is taken after them,
    on the pairs chosen freely since: strong outcome pairs do not keep a table of unrelated columns measuring
    noise (sklearn's diabetes at ε = 0.3: association error 0.332 → 0.377 before this)."""
    maps = (np.arange(2), np.arange(2))
    strong = (np.array([0.4, 0.1, 0.1, 0.4]), 0.001, maps)  # far from independence, little noise
    flat = (np.full(4, 0.25), 0.001, maps)  # independent
    measured = {(0, 5): strong, (1, 5): strong, (2, 5): strong, (1, 2): flat, (3, 4): flat, (0, 1): flat}
    free = [(1, 2), (3, 4), (0, 1)]
    T = 12
    plain = {"return_below": 1.5}
    focused = {"return_below": 1.5, "focus": 5, "focus_rounds": 3}
    decide = AdaptiveProjection._return_budget
    # Without an outcome: decided once, at round max(3, T/4) = 3, on every pair measured (the strong ones keep it).
    assert [t for t in range(1, T) if decide(measured, t, T, plain)] == []
    assert decide({c: measured[c] for c in free}, 3, T, plain)
    # With one: decided at round 3 + max(3, (T - 3)/4) = 6, on the free pairs only (flat: the budget goes back).
    assert [t for t in range(1, T) if decide(measured, t, T, focused, free)] == [6]


def test_a_raw_table_refuses_a_wrong_outcome_before_saying_any_cost(coded, tmp_path):
    """On a raw table the outcome is checked against the header before the plan and the cost are printed: a typo
    ('Income' for 'income>50K') does not read as a run that charged."""
    from dpcore.workspace import Workspace

    _, df, _ = coded
    df.to_csv(tmp_path / "raw.csv", index=False)
    out = subprocess.run(
        [sys.executable, "-m", "dpcore", "release", "--data", "raw.csv", "--outcome", "Income", "--out", "s.csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPCORE_WORKSPACE": str(tmp_path / "ws")},
    )  # fmt: skip
    assert out.returncode == 2 and "The outcome 'Income' is not a column of this table" in out.stderr
    assert "charges" not in out.stdout + out.stderr and "Traceback" not in out.stderr
    assert Ledger(Workspace(tmp_path / "ws")).entries() == [] and not (tmp_path / "s.csv").exists()


def test_a_focus_outside_the_table_is_refused_before_the_ledger_is_charged(coded, tmp_path):
    _, df, schema = coded
    ledger = Ledger(str(tmp_path))
    with pytest.raises(ParameterError, match="focus: the table has attributes 0..5, not 9"):
        release_table(df, "projection_adaptive", 1.0, params={"focus": 9}, schema=schema, seed=0, ledger=ledger)
    assert ledger.entries() == []
